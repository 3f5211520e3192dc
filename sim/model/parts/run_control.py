"""Run control (`[run]`) as the engines read it: which engine runs the model (`run.engine`),
when a replication starts recording (`run.warmup`), when it ends (`run.duration_s`,
`run.requests`, `run.max_duration_s`), the runaway guard (`run.max_in_flight`) and the
`--timeseries` interval (`run.timeseries_interval_s`).

Both engines stopped and windowed a replication by reading `[run]` and `Model.finite`
themselves, each with its own copy of "a fixed warm-up only on a steady-state run" and of the
horizon; here each is decided once.  The settings the engines never read (`run.seed`,
`run.replications`, `run.confidence`, `run.precision`, `run.max_events`) are the run's, above
the engines (`sim.run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Engine = Literal["auto", "reference", "compiled"]


@dataclass(frozen=True)
class RunControl:
    """How one replication is run, on either engine."""

    engine: Engine  # `run.engine`: auto chooses by the model's features (`sim.engines.choose`)
    # a finite workload (ab `-n`, `clients.requests_per_user`, `clients.total_*`): it records
    # from its start, runs to its last outcome and reports its makespan, with no warm-up
    finite: bool
    # `run.warmup = "mser"` on a steady-state run: the warm-up is chosen after the fact by
    # MSER-5 (White 1997) over a progress grid of the replication
    mser: bool
    # `run.warmup` as a fixed time on a steady-state run: recording starts then (0: at once);
    # None: MSER, "none" or a finite workload (recording starts with the run)
    warmup_s: float | None
    duration_s: float | None  # `run.duration_s`: simulated time after the warm-up [s]
    # `run.requests` on a steady-state run: recording stops after this many responses;
    # None: no such rule (a finite workload runs to its end)
    stop_after_requests: int | None
    # the simulated time a replication runs to at most [s]: the warm-up plus
    # `run.duration_s` on a steady-state run, else `run.max_duration_s` (a finite workload's,
    # or a run of `run.requests`'s, safety limit)
    horizon_s: float
    max_duration_s: float  # `run.max_duration_s` [s]
    # `run.max_in_flight`: a replication with more requests inside the servers is a runaway
    # queue, and is stopped
    max_in_flight: int
    timeseries_interval_s: float  # `run.timeseries_interval_s`: one `--timeseries` row each [s]


def run_control(model: Any) -> RunControl:
    """The run control of `model` (a `sim.model.schema.Model`)."""
    run = model.run
    finite = bool(model.finite)
    warmup_s = run.warmup if isinstance(run.warmup, float) and not finite else None
    steady = run.duration_s is not None and not finite
    horizon_s = (warmup_s or 0.0) + run.duration_s if steady else run.max_duration_s
    return RunControl(
        engine=run.engine,
        finite=finite,
        mser=run.warmup == "mser" and not finite,
        warmup_s=warmup_s,
        duration_s=run.duration_s,
        stop_after_requests=None if finite else run.requests,
        horizon_s=horizon_s,
        max_duration_s=run.max_duration_s,
        max_in_flight=run.max_in_flight,
        timeseries_interval_s=run.timeseries_interval_s,
    )
