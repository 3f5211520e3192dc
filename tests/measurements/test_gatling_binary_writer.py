"""Gatling's binary simulation.log written as Gatling 3.13+ writes it, for the tests.

The encoding follows `LogFileDataWriter.scala` of io.gatling.core.stats.writer (v3.13.0 to
v3.15.1) call for call: `BufferedFileChannelWriter` (big-endian ints and longs; a string as
its length, the bytes of the Java String's array and its coder byte, the empty string as the
length 0 alone; a cached string as its index counted from 1, or minus the index of its first
writing) and the serializers `RunMessageSerializer`, `UserMessageSerializer`,
`ResponseMessageSerializer`, `GroupMessageSerializer`, `ErrorMessageSerializer`. Times are
written as ms after the RUN's start, cut to 32 bits as Scala's `toInt` does.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

RUN, REQUEST, USER, GROUP, ERROR = range(5)
LONG_MIN = -(2**63)  # the end Gatling logs for a WebSocket/SSE message no check awaited


def to_int(value: int) -> int:
    """Scala's `Long.toInt`: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class GatlingLogWriter:
    """The records of one run, appended as bytes in the writer's order."""

    def __init__(
        self,
        version: str,
        simulation: str,
        start_ms: int,
        scenarios: Sequence[str],
        description: str = "",
        assertions: Sequence[bytes] = (),
    ) -> None:
        self.out = bytearray()
        self.start_ms = start_ms
        self.scenarios = {name: index for index, name in enumerate(scenarios)}
        self._cache: dict[str, int] = {}
        # RunMessageSerializer: version, class, start, description, scenarios, assertions
        self.byte(RUN)
        self.string(version)
        self.string(simulation)
        self.long(start_ms)
        self.string(description)
        self.int(len(scenarios))
        for name in scenarios:
            self.string(name)
        self.int(len(assertions))
        for pickled in assertions:  # writeByteBuffer: length, bytes
            self.int(len(pickled))
            self.out += pickled

    # BufferedFileChannelWriter
    def byte(self, value: int) -> None:
        self.out.append(value)

    def boolean(self, value: bool) -> None:
        self.byte(1 if value else 0)

    def int(self, value: int) -> None:
        self.out += struct.pack(">i", value)

    def long(self, value: int) -> None:
        self.out += struct.pack(">q", value)

    def string(self, text: str) -> None:
        if not text:
            self.int(0)
            return
        # Java's compact strings: Latin-1 (coder 0) when every char fits, else UTF-16 in the
        # JVM's byte order (coder 1), little-endian on x86 and ARM
        try:
            value, coder = text.encode("latin-1"), 0
        except UnicodeEncodeError:
            value, coder = text.encode("utf-16-le"), 1
        self.int(len(value))
        self.out += value
        self.byte(coder)

    def cached(self, text: str) -> None:
        index = self._cache.get(text)
        if index is None:
            index = len(self._cache) + 1  # counted from 1: -0 would be 0
            self.int(index)
            self.string(text)
            self._cache[text] = index
        else:
            self.int(-index)

    def time(self, epoch_ms: int) -> None:
        self.int(to_int(epoch_ms - self.start_ms))

    def groups(self, groups: Sequence[str]) -> None:
        self.int(len(groups))
        for group in groups:
            self.cached(group)

    # the serializers
    def user(self, scenario: str, start: bool, time_ms: int) -> None:
        self.byte(USER)
        self.int(self.scenarios[scenario])
        self.boolean(start)
        self.time(time_ms)

    def request(
        self,
        name: str,
        start_ms: int,
        end_ms: int,
        ok: bool = True,
        message: str = "",
        groups: Sequence[str] = (),
    ) -> None:
        self.byte(REQUEST)
        self.groups(groups)
        self.cached(name)
        self.time(start_ms)
        self.time(end_ms)
        self.boolean(ok)
        self.cached(message)

    def group(
        self, groups: Sequence[str], start_ms: int, end_ms: int, cumulated_ms: int, ok: bool
    ) -> None:
        self.byte(GROUP)
        self.groups(groups)
        self.time(start_ms)
        self.time(end_ms)
        self.int(cumulated_ms)
        self.boolean(ok)

    def error(self, message: str, time_ms: int) -> None:
        self.byte(ERROR)
        self.cached(message)
        self.time(time_ms)

    def bytes(self) -> bytes:
        return bytes(self.out)


# The committed fixture, tests/fixtures/measurements/gatling/binary/simulation.log: a small
# run of two scenarios written record by record as Gatling writes them.
FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures/measurements/gatling/binary/simulation.log"
)
RUN_START_MS = 1767900000000
STATUS_503 = "status.find.in(200,201,202,203,204,205,206,207,208,209,304), found 503"
TIMEOUT = "i.n.h.s.TimeoutException: Request timeout to shop.example/10.0.0.5:8080 after 60000 ms"
REFUSED = "j.n.ConnectException: Connection refused: shop.example/10.0.0.5:8080"


def fixture_log() -> GatlingLogWriter:
    s = RUN_START_MS
    log = GatlingLogWriter(
        "3.13.5",
        "tiersim.CheckoutSimulation",
        s,
        ["Browse", "Checkout"],
        # the reader skips the assertions (boopickle bytes) by their length, as Gatling does
        assertions=[bytes(range(15))],
    )
    log.user("Browse", True, s + 120)
    log.request("home", s + 130, s + 172)
    log.user("Checkout", True, s + 150)
    log.request("cart", s + 180, s + 231, groups=["checkout"])
    log.request("pay", s + 240, s + 1240, False, STATUS_503, groups=["checkout", "payment"])
    log.group(["checkout", "payment"], s + 238, s + 1240, 1000, False)
    log.request("home", s + 300, s + 335)
    log.request("Café ☕ search", s + 340, s + 390)  # a name Latin-1 cannot hold: UTF-16
    log.request("home", s + 400, s + 460, False, TIMEOUT)
    log.error(STATUS_503, s + 1240)
    log.group(["checkout"], s + 175, s + 1245, 1051, False)
    log.request("ws incoming", s + 500, LONG_MIN)  # a WebSocket message no check awaited
    log.request("home", s + 600, s + 601, False, REFUSED)
    log.user("Browse", False, s + 700)
    log.user("Checkout", False, s + 1300)
    return log


def test_the_committed_fixture_is_what_the_writer_writes():
    assert FIXTURE.read_bytes() == fixture_log().bytes()


def test_the_writer_writes_strings_and_the_cache_as_gatlings_buffered_writer():
    log = GatlingLogWriter("3.14.3", "S", 0, ["Scenario"])
    log.out.clear()
    log.cached("Session")
    log.cached("")
    log.cached("Session")
    log.string("☕")
    assert (
        log.bytes()
        == (
            b"\x00\x00\x00\x01" + b"\x00\x00\x00\x07Session\x00"  # index 1, Latin-1 (coder 0)
            b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00"  # index 2, the empty string: no coder
            b"\xff\xff\xff\xff"  # -1: the string of index 1 again
            b"\x00\x00\x00\x02\x15\x26\x01"  # U+2615 as UTF-16LE, coder 1
        )
    )
