"""`clients.schedule` read from an access log: the open clients replay the log's arrivals per
bin as a piecewise-constant Poisson rate.

    [clients]
    kind = "open"
    schedule = {access_log = "access.log.gz", log_format = "combined"}

is the same model as the list of `{rate_per_s, duration_s}` steps the log's arrivals per
minute give (`sim.measurements.arrival_profile` says how they are counted).  The table is
replaced by those steps when the model file is read, so that everything downstream (the
offered load, the stability check, both engines' refusal or support) reads one schedule.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sim.measurements.arrival_profile import ArrivalProfile, LogFormatError, arrival_profile


class AccessLogSchedule(BaseModel):
    """The access log whose arrivals per bin become the open clients' rate schedule."""

    model_config = ConfigDict(extra="forbid")

    access_log: str = Field(
        ...,
        description="Apache httpd or Tomcat access log (relative to the model file; .gz read as is)",
    )
    log_format: str = Field(
        "combined",
        description="the server's format: common, combined, or its LogFormat (httpd) / "
        "AccessLogValve pattern (Tomcat) string; it needs %t or %{begin:msec}t",
    )
    bin_s: float = Field(
        60.0, gt=0, description="arrivals are counted per bin of this many seconds"
    )
    scale: float = Field(
        1.0, gt=0, description="every bin's rate times this (the growth a plan is made for)"
    )
    encoding: str = Field("utf-8", description="the log's text encoding")


def schedule_from_access_log(
    table: dict[str, Any], base_dir: Path | None
) -> list[dict[str, float]]:
    """The `{rate_per_s, duration_s}` steps of the log named by `table`; a ValueError of one
    line (the field, or the log's FILE:LINE) for anything wrong."""
    spec = log_spec(table)
    path, version = log_path(spec, base_dir)
    try:
        profile = _profile(path, version, spec.log_format, spec.bin_s, spec.encoding)
    except LogFormatError as exc:
        raise ValueError(str(exc)) from None
    return [
        {"rate_per_s": rate, "duration_s": profile.bin_s}
        for rate in profile.rates_per_s(spec.scale)
    ]


def log_spec(table: dict[str, Any]) -> AccessLogSchedule:
    """The table naming a log, validated; a ValueError of one line naming the field."""
    try:
        return AccessLogSchedule.model_validate(table)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "extra_forbidden":
            raise ValueError(
                f"{where} is not a field of an access-log schedule; expected "
                f"{', '.join(AccessLogSchedule.model_fields)}"
            ) from None
        raise ValueError(f"{where} = {first.get('input')!r}: {first['msg']}") from None


def log_path(spec: AccessLogSchedule, base_dir: Path | None) -> tuple[Path, tuple[int, int] | None]:
    """The log's path (relative to the model file's directory) and its version (mtime, size:
    an edited log is read again), None when it cannot be stat'ed (the reader names why)."""
    path = Path(spec.access_log)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    try:
        stat = path.stat()
    except OSError:
        return path, None
    return path, (stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _profile(
    path: Path, version: tuple[int, int] | None, log_format: str, bin_s: float, encoding: str
) -> ArrivalProfile:
    # a sweep or a search reads the model once per point: a day's log is parsed once
    # per process (`version`, the file's mtime and size, makes an edited log read again)
    return arrival_profile(path, log_format, bin_s, encoding)
