"""Time stamps whose unit is read from their magnitude, not assumed.

JMeter writes `timeStamp` in milliseconds since the epoch, but a results file converted by
another tool, or written by a plug-in, may hold seconds or microseconds; read as milliseconds,
seconds make a one-request-per-second test look like a thousand per second.  A time stamp of
this era is about 1.7e9 in seconds, 1.7e12 in milliseconds and 1.7e15 in microseconds, so the
decade tells the unit apart; a file whose stamps change unit from one line to the next (a
merge of two tools' files) is refused, since no one window can hold both.  Small values
(below 1e8) are not an epoch at all but times since the test's start, in JMeter's unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sim.measurements.errors import MeasurementError


@dataclass(frozen=True)
class EpochUnit:
    name: str
    per_second: float
    below: float  # the magnitude where the next unit starts


RELATIVE_MS = EpochUnit("milliseconds since the test's start", 1e3, 1e8)
UNITS = (
    RELATIVE_MS,
    EpochUnit("seconds since the epoch", 1.0, 1e11),  # 1e8 s is 1973, 1e11 s the year 5138
    EpochUnit("milliseconds since the epoch", 1e3, 1e14),
    EpochUnit("microseconds since the epoch", 1e6, 1e17),
)


def unit_of(value: float) -> EpochUnit | None:
    for unit in UNITS:
        if value < unit.below:
            return unit
    return None


class Clock:
    """Converts one file's time stamps to seconds, the unit read from the first and every
    other held to it."""

    def __init__(self, path: str | Path, field: str) -> None:
        self.path = path
        self.field = field
        self.unit: EpochUnit | None = None
        self.first: tuple[int | None, float] = (None, 0.0)

    def seconds(self, value: float, line: int | None) -> float:
        unit = unit_of(value)
        if unit is None:
            raise MeasurementError(
                self.path,
                line,
                f"{self.field} = {value:.0f} is beyond microseconds since the epoch (the year "
                "5138 or later); expected seconds, milliseconds or microseconds since the epoch",
            )
        if self.unit is None:
            self.unit, self.first = unit, (line, value)
        elif unit is not self.unit:
            first_line, first_value = self.first
            raise MeasurementError(
                self.path,
                line,
                f"{self.field} = {value:.0f} reads as {unit.name}, but line {first_line}'s "
                f"{first_value:.0f} as {self.unit.name}: the file mixes units (or holds a "
                "stray line); expected one unit throughout: split or fix the file",
            )
        return value / unit.per_second
