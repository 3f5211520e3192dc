"""A traced run's per-tier time as `tiersim plan` places the demands with, instead of one
demand for the whole light response: the per-tier table `tiersim import otel` writes
(`NAME.tiers.csv`, `sim.measurements.formats.otel_tiers`), given with `--tiers` or found beside
the measurement table.

A trace splits a request's response between the front (Apache with mod_proxy: the template's
`proxy.demand`), the application server's own time (Tomcat's request thread computing:
`backends.0.demand`) and the calls that thread waits on while it holds it: each JDBC call
(tier `database`), calls to services the trace does not follow (`unmapped`) and any tier a
`--tier` rule named (`backends.0.io_wait`: a wait that holds a thread and no core).  A tier's
time per request includes its queueing, so it bounds the tier's demand from above; at the
lightest fitted run, where little queues, it is close to it.  So:

* the front's time per request is `proxy.demand` (an exponential of that mean, the template's
  family), set: measured, not left to the 0.2 ms guess of the template;
* the application server's own time bounds its CPU demand: the search of the CPU demand runs
  up to it (with the planner's margin of 1.5 for the measurement's noise where the demand is
  fitted, `[[calibrate]]`; up to it where it is an `[[unknown]]` beside a shape) instead of
  over the whole light response;
* without a shape, the waits are `backends.0.io_wait` (set: an exponential of their mean per
  request; the per-tier table keeps no spread); with a shape the wait is the samples' own,
  which already holds them.  With `--database` the database tier is modelled by the database's
  own evidence, and its calls are not counted again in the wait.

Only the lightest fitted run's rows (class `total`) are read: a trace taken at another load
holds another queueing in every tier's time, so a per-tier table without that run is refused
(import the trace taken during it with `--run RUN`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.classes import TOTAL
from sim.measurements.formats.otel_tiers import APP, DATABASE, FRONT
from sim.studies.experiment import ExperimentError


@dataclass(frozen=True)
class TierDemands:
    """The lightest fitted run's time per request in each tier, from its trace."""

    source: str
    run: str
    requests: int
    front_s: float | None  # None: the front was not traced
    app_s: float
    waits: dict[str, float]  # tier -> time per request the request thread waits on it
    database_calls: float  # database calls per request
    database_call_s: float  # mean time of one

    def wait_s(self, database_modelled: bool) -> float:
        """The time per request the thread waits on calls, less the database's when the
        database tier models it."""
        return sum(
            t for tier, t in self.waits.items() if not (database_modelled and tier == DATABASE)
        )

    def settings(self, with_wait: bool, database_modelled: bool) -> list[str]:
        out = []
        if self.front_s is not None and self.front_s > 0:
            out.append(f'proxy.demand={{dist = "exponential", mean = {self.front_s!r}}}')
        wait = self.wait_s(database_modelled)
        if with_wait and wait > 0:
            out.append(f'backends.0.io_wait={{dist = "exponential", mean = {wait!r}}}')
        return out

    def said(self, database_modelled: bool) -> str:
        parts = [f"app server {self.app_s * 1000:.4g} ms (bounds the CPU demand)"]
        if self.front_s is not None:
            parts.insert(0, f"front {self.front_s * 1000:.4g} ms (proxy.demand)")
        else:
            parts.insert(0, "front not traced (the template's proxy.demand)")
        for tier, time in self.waits.items():
            if tier == DATABASE:
                calls = f"{self.database_calls:.3g} calls of {self.database_call_s * 1000:.4g} ms"
                modelled = "; the database tier's own" if database_modelled else ""
                parts.append(f"database {time * 1000:.4g} ms ({calls}{modelled})")
            else:
                parts.append(f"{tier} {time * 1000:.4g} ms")
        return (
            f"per-tier time per request of {self.run} ({self.requests} traced requests, "
            f"{self.source}): {', '.join(parts)}"
        )


def tier_demands(path: str | Path, run: str) -> TierDemands:
    """The lightest fitted run's per-tier time from the per-tier table at `path`."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.tier_evidence import read_tier_file

    try:
        rows = read_tier_file(path)
    except MeasurementError as exc:
        raise ExperimentError(str(exc)) from None
    runs = list(dict.fromkeys(str(r["run"]) for r in rows))
    mine = {r["tier"]: r for r in rows if r["run"] == run and r["class"] == TOTAL}
    if not mine:
        raise ExperimentError(
            f"{path}: no run {run!r} (its runs: {', '.join(runs) or 'none'}); the "
            "per-tier times place the lightest fitted run's demands: import the trace taken "
            f"during it with --run {run} (tiersim import otel TRACE --run {run} -o ...)"
        )
    if APP not in mine:
        raise ExperimentError(
            f"{path}: run {run!r} has no {APP!r} tier (its tiers: "
            f"{', '.join(mine)}); expected the application server's SERVER span, or a --tier "
            "rule naming it app at the import"
        )
    if not mine[APP]["time_per_request_s"] > 0:
        raise ExperimentError(
            f"{path}: run {run!r}: the {APP!r} tier's time_per_request_s is "
            f"{mine[APP]['time_per_request_s']!r}; expected the application server's own time > 0"
        )
    for tier, row in mine.items():
        if not (math.isfinite(row["time_per_request_s"]) and row["time_per_request_s"] >= 0):
            raise ExperimentError(
                f"{path}: run {run!r}, tier {tier!r}: time_per_request_s = "
                f"{row['time_per_request_s']!r}; expected seconds >= 0"
            )
    database = mine.get(DATABASE)
    return TierDemands(
        source=str(path),
        run=run,
        requests=int(mine[APP]["requests"]),
        front_s=mine[FRONT]["time_per_request_s"] if FRONT in mine else None,
        app_s=mine[APP]["time_per_request_s"],
        waits={
            tier: row["time_per_request_s"]
            for tier, row in mine.items()
            if tier not in (FRONT, APP)
        },
        database_calls=0.0 if database is None else database["calls_per_request"],
        database_call_s=math.nan if database is None else database["time_per_call_s"],
    )


def find_tier_demands(
    table_path: str | Path, given: str | Path | None, run: str
) -> tuple[TierDemands | None, str | None]:
    """The per-tier times `plan` uses: `given` (`--tiers`; refused when it cannot give them),
    else the per-tier table beside the measurement table (`NAME.tiers.csv`, the import's own),
    else none; and, when the one beside is left out, why."""
    from sim.measurements.tier_evidence import tiers_path

    if given is not None:
        return tier_demands(given, run), None
    beside = tiers_path(table_path)
    if not beside.is_file():
        return None, None
    try:
        return tier_demands(beside, run), None
    except ExperimentError as exc:  # an older trace's table: said, not an error of this plan
        return None, f"the per-tier table beside the table is left out: {exc}"
