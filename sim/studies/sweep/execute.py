"""Run a sweep's points serially, on the local cores, or on a Dask cluster, writing each
finished point to the store as soon as it arrives.

Where a point runs changes nothing in its numbers: its seed comes from the sweep seed and
the point's values (`design.point_seed`), and the parent process alone writes the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from sim import __version__
from sim.exit_codes import ExitCode

# the executors are every study's (sim.studies.executor); re-exported for the sweep's callers
from sim.studies.executor import (  # noqa: F401
    DaskExecutor,
    Executor,
    LostPoints,
    ProcessExecutor,
    SerialExecutor,
)
from sim.studies.sweep.design import Point, expand, point_seed
from sim.studies.sweep.point import FAILURE_EXIT, PointTask
from sim.studies.sweep.spec import SweepPlan
from sim.studies.sweep.store import ResultStore


@dataclass
class SweepOutcome:
    total: int
    skipped: int  # already in the store
    ran: int = 0
    failures: list[dict] = field(
        default_factory=list
    )  # records of failed points (this run and earlier)
    available_metrics: set[str] = field(default_factory=set)
    dropped_duplicates: int = 0

    @property
    def exit_code(self) -> int:
        """0, or the CLI's code of the failures: a bug (1) first, else the lowest code among them."""
        kinds = {f["error_kind"] for f in self.failures}
        if not kinds:
            return 0
        if "internal" in kinds:
            return int(ExitCode.INTERNAL)
        return int(min(FAILURE_EXIT[k] for k in kinds))


def tasks_for(plan: SweepPlan, points: Iterable[Point]) -> list[PointTask]:
    sweep = plan.spec.sweep
    return [
        PointTask(
            point_id=p.id,
            index=p.index,
            values=p.values,
            overrides=(*sweep.set, *p.overrides),
            seed=sweep.seed
            if sweep.random_numbers == "common"
            else point_seed(sweep.seed, p.values),
            replications=sweep.replications,
            metrics=plan.metrics,
            raw_model=plan.base_raw,
            source=str(plan.base_path),
            base_dir=str(plan.base_path.parent),
            calibrated=plan.calibrated,
            draws=sweep.draws,
            draw_replications=sweep.draw_replications,
        )
        for p in points
    ]


def manifest(plan: SweepPlan, points: list[Point]) -> dict:
    sweep = plan.spec.sweep
    return {
        "kind": "sweep",
        "fingerprint": plan.fingerprint([p.id for p in points]),
        "source": str(plan.source),
        "name": sweep.name,
        "description": sweep.description,
        "base": str(plan.base_path),
        "design": sweep.design,
        "factors": plan.factor_paths,
        "metrics": list(plan.metrics),
        "points": len(points),
        "seed": sweep.seed,
        "replications": sweep.replications,
        # the failed share a point may have and count as meeting an SLO: the report marks
        # the points beyond it (not in the fingerprint: it judges the results, not makes them)
        "error_budget": sweep.error_budget,
        "tiersim_version": __version__,
    }


def run_sweep(
    plan: SweepPlan,
    store: ResultStore,
    executor: Executor,
    *,
    retry_failed: bool = False,
    on_point: Callable[[dict, int, int, int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> SweepOutcome:
    """Run every point not yet in the store; `on_point(record, done, total, failed)` after each."""
    points, dropped = expand(plan.spec)
    store.open(manifest(plan, points))
    finished = store.finished()
    if retry_failed:
        store.forget([pid for pid, status in finished.items() if status == "failed"])
        finished = {pid: s for pid, s in finished.items() if s == "ok"}
    todo = [p for p in points if p.id not in finished]
    outcome = SweepOutcome(
        total=len(points), skipped=len(points) - len(todo), dropped_duplicates=dropped
    )
    failed_before = [pid for pid, status in finished.items() if status == "failed"]
    done, failed = outcome.skipped, len(failed_before)
    if on_start is not None:
        on_start(done, len(points))
    for record in executor.map_unordered(tasks_for(plan, todo)):
        outcome.available_metrics.update(record.pop("_available_metrics", ()))
        store.write(record)
        outcome.ran += 1
        done += 1
        if record["status"] != "ok":
            failed += 1
        if on_point is not None:
            on_point(record, done, len(points), failed)
    outcome.failures = _failed_records(store)
    return outcome


def _failed_records(store: ResultStore) -> list[dict]:
    from sim.studies.sweep.store import load_results

    frame = load_results(store.root)
    if frame.empty:
        return []
    failed = frame[frame["status"] != "ok"]
    return failed[["point_id", "point_index", "error_kind", "error", "overrides"]].to_dict(
        "records"
    )


def failure_summary(failures: list[dict], limit: int = 10) -> list[str]:
    kinds = Counter(f["error_kind"] for f in failures)
    lines = [
        f"{len(failures)} point(s) failed: "
        + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    ]
    for f in failures[:limit]:
        first = str(f["error"]).splitlines()[0] if f["error"] else ""
        detail = (
            " ".join(str(f["error"]).split()) if len(str(f["error"]).splitlines()) > 1 else first
        )
        lines.append(
            f"  point {f['point_index']} ({' '.join(f['overrides'])}): {f['error_kind']}: {detail}"
        )
    if len(failures) > limit:
        lines.append(f"  ... and {len(failures) - limit} more (tiersim report shows them all)")
    return lines
