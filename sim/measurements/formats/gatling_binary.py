"""Gatling's binary `simulation.log`, written by Gatling 3.13.0 and later.

Gatling 3.13.0 replaced the tab-separated log with a binary one (gatling/gatling commit
efd3ec7ce, "switch to a binary log file", #4596); 3.12.0 still writes text. Its writer is
`LogFileDataWriter` of io.gatling.core.stats.writer (with `RecordHeader`), its reader
gatling-charts' `LogFileReader.scala` (`LogFileParser`, `FirstPassParser`, `SecondPassParser`).
The layout is unchanged from v3.13.0 to v3.15.1 (and gatling/gatling's main of 2026-07-21,
8bb193bdf). It has no magic number: the file starts with the RUN record. Numbers are
big-endian (Java's `ByteBuffer`, `DataInputStream`):

- a string: int32 length, then that many bytes of the Java String's own array and its coder
  byte (0: Latin-1; 1: UTF-16 in the JVM's byte order, little-endian on x86 and ARM); the
  empty string is the length 0 alone, with no coder;
- a cached string (names, groups, messages): an int32 index; one not below 0 is followed by
  the string, which it names from then on; a negative one repeats the string named by its
  opposite (the writer counts from 1);
- a record: one header byte, `0` RUN, `1` REQUEST, `2` USER, `3` GROUP, `4` ERROR;
- RUN (once, first): Gatling's version, the simulation's class, its start (int64 ms since the
  epoch), its description (strings); the scenarios (int32 count, strings); the assertions
  (int32 count, each an int32 length and that many bytes);
- REQUEST: its groups (int32 count, cached strings), name (cached), start and end (int32 ms
  after the RUN start), OK (a byte, 1 OK, 0 KO) and message (cached, "" when none);
- USER: scenario (int32 index into the RUN's), START (1) or END (0), time (int32 ms after the
  RUN start);
- GROUP: its groups, start, end, cumulated response time (int32 ms), OK;
- ERROR: message (cached), time.

What tiersim takes from it is what the text log gives (`gatling_log.py`): each REQUEST a sample
(end - start, its label, OK/KO and the KO's kind), the RUN's start and version, time zero at
the first injected event. A WebSocket or SSE message that no check awaited is logged as a
REQUEST whose end is Java's `Long.MinValue` (`WsState`, `SseState`), written as the int32 of
`Long.MinValue - start`: it has no response time and is left out, as Gatling's report leaves it
out (`ResultsHolder.addRequestRecord` skips an `incoming` record; from 3.13 its
`SecondPassParser` compares the end with `Long.MinValue` after adding the RUN start back to the
int32, so by its source it no longer knows them and counts them with a meaningless time).
Gatling's own reader refuses any version but its own; this one reads every version from 3.13,
and a layout that moved would trip its checks, each naming the record and its byte offset:
a record header other than 0-4, a status byte other than 0/1, a string longer than
Gatling's writer can write (`LONGEST_STRING`), a cached string never given, a scenario not in
the RUN record, a request that ends before it starts. A log cut short (a run killed before
Gatling flushed it) ends inside a record: the message gives the offset up to which the records
are whole.
"""

from __future__ import annotations

import struct
from array import array
from pathlib import Path
from typing import TYPE_CHECKING

from sim.files import MAX_MEASUREMENT_BYTES, Refused, read_bytes_within
from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.gatling_log import (
    COLUMNS,
    GatlingLog,
    GatlingRun,
    InjectStart,
    error_kind,
    request_label,
)
from sim.measurements.text import PROGRESS_EVERY, Progress, _gunzip

if TYPE_CHECKING:
    import pandas as pd

EXPECTED = "Gatling's binary simulation.log (Gatling 3.13 and later)"
RUN, REQUEST, USER, GROUP, ERROR = range(5)  # Gatling's RecordHeader values
FIRST_BINARY = (3, 13)  # the first Gatling version whose log is binary
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
# a REQUEST outside groups: groups count 0, name reference, start, end, status, message reference
_REPEATED = struct.Struct(">iiiiBi")
_LATIN1, _UTF16 = 0, 1  # java.lang.String's coders
# Gatling's writer copies a string whole into its buffer (`data.file.bufferSize`, 8 KiB by
# default, fixed at 8 KiB from 3.14) and fails on a longer one: a longer length is not Gatling's
LONGEST_STRING = 2**20
_SANITIZED = str.maketrans("\n\r\t", "   ")  # as LogFileParser.sanitize, for names and messages


class _CutShort(Exception):
    """The file ends inside a record."""


def _int32(value: int) -> int:
    """Java's `Long.toInt`: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class _Records:
    """A cursor over the log's bytes, reading the fields as `LogFileParser` does, with the
    offset of the record being read for messages."""

    def __init__(self, path: str | Path, data: bytes) -> None:
        self.path = path
        self.data = data
        self.at = 0  # the next byte to read
        self.record_at = 0  # where the record being read starts
        self.number = 1  # the record's number, 1 for the RUN record
        self.kind = "RUN"
        self.cache: dict[int, str] = {}

    def fail(self, what: str) -> MeasurementError:
        where = f"byte {self.record_at}: record {self.number:,} ({self.kind})"
        return MeasurementError(self.path, None, f"{where}: {what}; expected {EXPECTED}")

    def take(self, size: int) -> int:
        """The offset of the next `size` bytes, which are then read."""
        at = self.at
        if at + size > len(self.data):
            raise _CutShort
        self.at = at + size
        return at

    def byte(self) -> int:
        return self.data[self.take(1)]

    def status(self) -> bool:
        value = self.byte()
        if value not in (0, 1):
            raise self.fail(f"status byte {value} at byte {self.at - 1}, not 1 (OK) or 0 (KO)")
        return value == 1

    def int32(self) -> int:
        return _INT32.unpack_from(self.data, self.take(4))[0]

    def int64(self) -> int:
        return _INT64.unpack_from(self.data, self.take(8))[0]

    def count(self, what: str, least_bytes: int) -> int:
        """A count of items of at least `least_bytes` bytes each: not more than the file holds."""
        at = self.at
        value = self.int32()
        if value < 0 or value * least_bytes > len(self.data) - self.at:
            raise self.fail(
                f"{value:,} {what} at byte {at}, more than the {len(self.data) - self.at:,} "
                "bytes left can hold"
            )
        return value

    def string(self) -> str:
        at = self.at
        length = self.int32()
        if length == 0:
            return ""
        if not 0 < length <= LONGEST_STRING:
            raise self.fail(f"a string of {length:,} bytes at byte {at}")
        start = self.take(length)
        coder = self.byte()
        raw = self.data[start : start + length]
        if coder == _LATIN1:
            return raw.decode("latin-1")
        if coder == _UTF16 and length % 2 == 0:
            return raw.decode("utf-16-le", errors="replace")
        raise self.fail(f"a string at byte {at} with coder {coder} over {length} bytes")

    def cached(self) -> str:
        at = self.at
        index = self.int32()
        if index >= 0:
            text = self.string().translate(_SANITIZED)
            self.cache[index] = text
            return text
        given = self.cache.get(-index)
        if given is None:
            raise self.fail(f"a reference at byte {at} to string {-index:,}, never given")
        return given

    def groups(self) -> list[str]:
        return [self.cached() for _ in range(self.count("groups", 4))]

    def request(self) -> tuple[str, int, int, bool, str]:
        """A REQUEST record after its header: (label, start, end, OK, message)."""
        label = request_label(self.groups(), self.cached())
        start, end = self.int32(), self.int32()
        return label, start, end, self.status(), self.cached()

    def repeated_request(self) -> tuple[str, int, int, bool, str] | None:
        """`request` in one unpack when it is outside groups and its name and message were
        given before, as most of a long log's requests are; None for any other."""
        if self.at + _REPEATED.size > len(self.data):
            return None
        groups, name, start, end, ok, message = _REPEATED.unpack_from(self.data, self.at)
        if groups or name >= 0 or message >= 0 or ok > 1:
            return None
        label, text = self.cache.get(-name), self.cache.get(-message)
        if label is None or text is None:
            return None
        self.at += _REPEATED.size
        return label, start, end, ok == 1, text


def _bytes(path: str | Path) -> bytes:
    try:
        data = read_bytes_within(path, MAX_MEASUREMENT_BYTES)
    except FileNotFoundError:
        raise MeasurementError(path, None, "no such file") from None
    except Refused as exc:
        raise MeasurementError(path, None, str(exc)) from None
    except OSError as exc:
        raise MeasurementError(path, None, f"cannot read ({exc.strerror})") from None
    if data.startswith(b"\x1f\x8b"):
        data = _gunzip(path, data, EXPECTED)
    return data


def _version(records: _Records) -> str:
    at = records.at
    length = records.int32()
    records.at = at
    if not 0 < length <= 64:
        raise records.fail(f"Gatling's version is {length:,} bytes long, at byte {at}")
    version = records.string()
    parts = version.split(".")
    if not (len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit()):
        raise records.fail(f"Gatling's version reads {shorten(version)}")
    if (int(parts[0]), int(parts[1])) < FIRST_BINARY:
        raise records.fail(
            f"Gatling's version reads {shorten(version)}, which writes a text log; "
            "Gatling's binary log starts with 3.13"
        )
    return version


def _run(records: _Records) -> tuple[str, int, int]:
    """(Gatling's version, the simulation's start in ms since the epoch, its scenarios)."""
    if records.byte() != RUN:
        raise records.fail("the file does not start with the RUN record (header 0)")
    version = _version(records)
    records.string()  # the simulation's class
    start_ms = records.int64()
    records.string()  # the run's description
    scenarios = records.count("scenarios", 4)
    for _ in range(scenarios):
        records.string()
    for _ in range(records.count("assertions", 4)):
        records.take(records.count("bytes of an assertion", 1))
    return version, start_ms, scenarios


class _Requests:
    """The requests read so far, in arrays (ms after the RUN's start) rather than tuples: a
    256-MiB log holds about ten million of them."""

    def __init__(self) -> None:
        self.starts, self.ends, self.labels = array("i"), array("i"), array("i")
        self.failed = array("b")
        self.messages = array("i")  # 0 for an OK; a KO's message, 1 + its index in `kos`
        self.names: dict[str, int] = {}
        self.kos: dict[str, int] = {}

    def add(self, label: str, start: int, end: int, ok: bool, message: str) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.labels.append(self.names.setdefault(label, len(self.names)))
        self.failed.append(0 if ok else 1)
        self.messages.append(0 if ok else 1 + self.kos.setdefault(message, len(self.kos)))

    def frame(self, run_ms: int) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        starts = np.frombuffer(self.starts, dtype=np.int32).astype(np.int64)
        ends = np.frombuffer(self.ends, dtype=np.int32).astype(np.int64)
        kinds = np.array(["", *(error_kind(m) for m in self.kos)], dtype=object)
        names = np.array(list(self.names), dtype=object)
        return pd.DataFrame(
            {
                "start_s": (starts + run_ms) / 1000.0,
                "elapsed_s": (ends - starts) / 1000.0,
                "label": names[np.frombuffer(self.labels, dtype=np.int32)],
                "url": np.full(len(starts), None, dtype=object),
                "failed": np.frombuffer(self.failed, dtype=np.int8).astype(bool),
                "error_kind": kinds[np.frombuffer(self.messages, dtype=np.int32)],
                "users": np.nan,
            },
            columns=COLUMNS,
        )


def _scan(
    records: _Records, run_ms: int, scenarios: int, progress: Progress
) -> tuple[_Requests, InjectStart]:
    """The records after the RUN record, as SecondPassParser reads them."""
    requests, inject_start = _Requests(), InjectStart()
    incoming_end = _int32(-(2**63) - run_ms)  # Long.MinValue's end, as the writer writes it
    size = len(records.data)
    while records.at < size:
        records.record_at = records.at
        records.number += 1
        if progress is not None and records.number % PROGRESS_EVERY == 0:
            progress(records.at, size)
        header = records.byte()
        if header == REQUEST:
            records.kind = "REQUEST"
            label, start, end, ok, message = records.repeated_request() or records.request()
            inject_start.request(run_ms + start)
            if end == incoming_end:
                continue  # a WebSocket/SSE message no check awaited: no response time
            if end < start:
                raise records.fail(f"a request that ends ({end} ms) before it starts ({start} ms)")
            requests.add(label, start, end, ok, message)
        elif header == USER:
            records.kind = "USER"
            scenario = records.int32()
            if not 0 <= scenario < scenarios:
                raise records.fail(f"scenario {scenario}, not one of the RUN's {scenarios}")
            started = records.status()
            inject_start.user(started, run_ms + records.int32())
        elif header == GROUP:
            records.kind = "GROUP"
            records.groups()
            inject_start.group(run_ms + records.int32())
            records.take(8)  # its end, its cumulated response time
            records.status()
        elif header == ERROR:
            records.kind = "ERROR"
            records.cached()
            records.take(4)  # its time
        else:
            records.kind = "?"
            raise records.fail(
                f"record header {header}; Gatling's are 1 (REQUEST), 2 (USER), 3 (GROUP), "
                "4 (ERROR) after the RUN record (0)"
            )
    return requests, inject_start


def _cut_short(path: str | Path, records: _Records) -> MeasurementError:
    whole = records.record_at if records.number > 1 else 0
    keep = (
        f"its first {whole:,} bytes are whole records: `head -c {whole}` keeps them"
        if whole
        else f"expected {EXPECTED}"
    )
    return MeasurementError(
        path,
        None,
        f"byte {records.record_at}: the file ends inside record {records.number:,} "
        f"({records.kind}) after {len(records.data):,} bytes: a log cut short (a run stopped "
        f"before Gatling closed its log?); {keep}",
    )


def read(path: str | Path, progress: Progress = None) -> GatlingLog:
    """The log's requests, and the run's simulation start, version and first injected event."""
    records = _Records(path, _bytes(path))
    try:
        version, run_ms, scenarios = _run(records)
        requests, inject_start = _scan(records, run_ms, scenarios, progress)
    except _CutShort:
        raise _cut_short(path, records) from None
    if not requests.starts:
        raise MeasurementError(path, None, f"no REQUEST records; expected {EXPECTED}")
    run = GatlingRun(run_ms / 1000.0, version, inject_start.ms / 1000.0)
    return GatlingLog(
        str(path), requests.frame(run_ms), outcomes_known=True, urls_known=False, run=run
    )
