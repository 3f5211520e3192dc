"""What Gatling's two `simulation.log` layouts share: the run, the requests' labels and error
kinds, and where Gatling's report starts the run.

Gatling 2 to 3.12 write a tab-separated text log (`gatling.py`), 3.13 and later a binary one
(`gatling_binary.py`); both hold the same records (RUN, REQUEST, USER, GROUP, ERROR) and are
read into the same samples, so `tiersim import gatling` gives the same columns from either.

Time zero is Gatling's own: the run's first injected event (`InjectStart`), where gatling-charts'
first pass over the log (`LogFileReader.firstPass` up to 3.12, `FirstPassParser` of
`LogFileReader.scala` from 3.13) starts its `ResultsHolder` and its time axis. Each
`GeneralStatsBuffer`'s mean requests per second is the count over
`ceil((injectEnd - injectStart) / 1000)` seconds. The RUN record's start precedes it by the
simulation's start-up and any `nothingFor` (6.7 s on the committed 229-s run), which would read
the rate 2.8 % low; an explicit `--start` still wins.

The label is the request's name, prefixed with its group path (`group/name`) when it is in a
group, as the report names it. A KO's message (a failed check, `j.n.ConnectException: ...`,
`Request timeout to ...`) gives its error kind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sim.measurements.formats.http import exception_kind, status_kind
from sim.measurements.windows import SampleLog

COLUMNS = ["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
_STATUS_IN_MESSAGE = re.compile(r"\b(?:status|found)\D{0,20}([1-5]\d\d)\b")


@dataclass(frozen=True)
class GatlingRun:
    """What the log says of the run as a whole (seconds since the epoch).

    `simulation_start_s`, `version`: the RUN record's simulation start and Gatling version
    (None, "" without a RUN record). `first_injected_s`: Gatling's `injectStart`, the earliest
    REQUEST start, USER START or GROUP start, where Gatling's report starts the run.
    """

    simulation_start_s: float | None
    version: str
    first_injected_s: float


@dataclass
class GatlingLog(SampleLog):
    """The requests of a simulation.log, with what the log says of the run."""

    run: GatlingRun


class InjectStart:
    """Gatling's `injectStart` (ms since the epoch), as its first pass takes it: the least start
    of a REQUEST, a USER START or a GROUP (`updateInjectStart`); a USER END does not count."""

    def __init__(self) -> None:
        self.ms: float = math.inf

    def request(self, start_ms: int) -> None:
        self.ms = min(self.ms, start_ms)

    def user(self, started: bool, time_ms: int) -> None:
        if started:
            self.ms = min(self.ms, time_ms)

    def group(self, start_ms: int) -> None:
        self.ms = min(self.ms, start_ms)


def request_label(groups: Sequence[str], name: str) -> str:
    """The report's name of a request: `outer/inner/name` inside groups, else its name."""
    return "/".join([*groups, name]) if groups else name


def error_kind(message: str) -> str:
    """The kind of a KO from Gatling's message: a check on the status names the status's
    class (`status.find.in(200,...), but actually found 503` -> 5xx); a timeout or a
    connection failure is named as JMeter's exceptions are."""
    lowered = message.lower()
    if "status" in lowered:
        found = _STATUS_IN_MESSAGE.findall(lowered)
        if found:
            return status_kind(int(found[-1]))
    if "timeout" in lowered or "timed out" in lowered:
        return "timeout" if "connect" not in lowered else "connect"
    kind = exception_kind(message)
    return kind if kind != "other" else ("assertion" if "check" in lowered else "other")
