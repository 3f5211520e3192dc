"""`tiersim plan --database database.csv`: the shared database tier and its lock, from the
database's own evidence (docs/measurement-table.md, "The database evidence table").

The model (`models/planner-apache-tomcat-database.toml`) makes one database call per request
stand for the transaction, behind one lock every node shares (`[database.lock]`).  What the
evidence gives, at the lightest fitted run:

* the transaction's time per request, T = sum over the statements of calls per request x time
  per call (`pg_stat_statements`' `total_exec_time` / `calls`, or the logged durations): the
  least the database holds a request, since the round trips between the statements are not in
  it, nor, in `pg_stat_statements`, the COMMIT's WAL flush (it is done after the statement's
  own timing ends);
* the statement(s) that take the lock: those that logged lock waits (`log_lock_waits`) at any
  run, else those whose time per call grows with load (twice their light time or more at some
  heavier run, by at least 5 % of T: a statement of microseconds doubling is noise, not a
  lock); the lock's `share` is their calls per request (at most 1);
* their growth at each heavier run, time per call less the light time per call, is the time
  they waited for the lock (PostgreSQL and InnoDB count the wait in the statement's
  execution): the lock's wait per acquisition, written into the experiment's copy of the
  table as the column `database.lock.wait` and compared with the simulated metric of that
  name.

What the evidence does not give stays an `[[unknown]]` (or a `[[calibrate]]` search a figure
pins), never a guess: the database's own work per call (`database.demand`: which part of T is
CPU and flush, and which is waiting between statements, needs the database host's `sar` and
`pg_stat_wal`'s `wal_sync_time`), and the lock's `hold`, at least the locking statements' own
light time and at most the light response time less the database's least work (the lock is
held through the round trips and the flush the statements' times leave out).  Under a
one-permit lock that every call takes, only `hold` + `demand` matters to the lock; the split is
carried for the question that changes the database.

MySQL's evidence (`events_statements_summary_by_digest`, the slow log) is read alike, with its
own words (`sim.studies.database_sources`): its files time the COMMIT, the redo log's flush
included, and count no row-lock waits, so its locking statement is found by its growth alone,
and InnoDB serves a row's waiters in the order of its lock queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from sim.studies.database_sources import database_of, files_of
from sim.studies.experiment import ExperimentError

TEMPLATE = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat-database.toml"
LOCK_WAIT = "database.lock.wait"
# complete counters first: a snapshot counts every call, a log only those it was told to log
SOURCES = ("pg_stat_statements", "mysql_digest", "postgres_log", "mysql_slow_log")
GROWS = 2.0  # a statement's time per call at the heaviest run over its light time ...
GROWS_SHARE = 0.05  # ... by an increase of at least this share of the transaction's light time
DEMAND_SHARE_LOW = 0.01  # the database's least own work: 1 % of the statements' time


@dataclass
class DatabaseEvidence:
    """What the planner takes from a database evidence table (`sim.measurements.database.
    evidence`), at the lightest fitted run `light_run`."""

    path: str
    source: str
    light_run: str
    light_users: float
    transaction_s: float  # T: sum of calls/request x time/call at the light run
    statements: int  # how many statements T sums
    locking: dict[str, str]  # the statements that take the lock -> why (the evidence's words)
    locking_s: float  # L: their time per request at the light run
    share: float  # the lock's share of the calls: the locking statements' calls per request
    waits: dict[str, float] = field(default_factory=dict)  # run -> wait per acquisition [s]
    # the light run's own wait per acquisition lies in [0, this]: its time per call, when the
    # light run has users enough to wait (each heavier run's growth is counted from it)
    light_wait_bound_s: float = 0.0
    left_out: list[str] = field(default_factory=list)  # runs without a wait figure, and why
    # statements that ran much faster at a heavier run than at the light one, and by how much
    faster: list[str] = field(default_factory=list)


def _number(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    return number if math.isfinite(number) else math.nan


def read_evidence(path: str | Path, light_run: str) -> DatabaseEvidence:
    """The evidence of `path` (a `tiersim import pg-stat|pg-log|... -o` table) at `light_run`."""
    from sim.measurements.database import evidence

    rows = evidence.read(path)
    runs = sorted({str(r["run"]) for r in rows})
    at_light = [r for r in rows if r["run"] == light_run]
    if not at_light:
        files = files_of(sorted({str(r["source"]) for r in rows}), light_run)
        raise ExperimentError(
            f"--database {path}: no statement of run {light_run!r}, the lightest fitted run (its "
            f"runs: {', '.join(runs) or 'none'}); import that run's database files, named after "
            f"it ({files})"
        )

    def known(row) -> bool:
        return (
            row["complete"] == "yes"
            and math.isfinite(_number(row["calls_per_request"]))
            and math.isfinite(_number(row["time_per_call_s"]))
        )

    sources = [s for s in SOURCES if any(r["source"] == s and known(r) for r in at_light)]
    if not sources:
        # the rows' own words first: a slow log cut by long_query_time needs the server run
        # again (or the digest table), not an option of the import
        said = next((str(r["missing"]) for r in at_light if r["missing"]), "")
        raise ExperimentError(
            f"--database {path}: no statement of run {light_run!r} has its calls per request and "
            "time per call: "
            + (
                said
                or "import with --table (the load test's table), and a log of every statement "
                "with --log-min-duration 0"
            )
        )
    source = sources[0]
    mine = [r for r in rows if r["source"] == source and known(r)]
    users = {str(r["run"]): _number(r["users"]) for r in mine}
    light = {str(r["statement"]): r for r in mine if r["run"] == light_run}
    transaction_s = sum(
        _number(r["calls_per_request"]) * _number(r["time_per_call_s"]) for r in light.values()
    )
    locking = _locking(rows, mine, light, users, light_run, transaction_s)
    if not locking:
        heaviest = max(users, key=lambda run: users[run])
        raise ExperimentError(
            f"--database {path}: no statement logged a lock wait, and none's time per call grows "
            f"with load (x{GROWS:g} or more from {light_run} to any heavier run up to {heaviest}, by {GROWS_SHARE:.0%} "
            "of the transaction's time): the evidence shows no shared lock.  "
            f"{database_of(source).lock_evidence}, or plan without --database (the template "
            "with no shared lock)"
        )
    per_request = {s: _number(light[s]["calls_per_request"]) for s in locking}
    found = DatabaseEvidence(
        path=str(path),
        source=source,
        light_run=light_run,
        light_users=users[light_run],
        transaction_s=transaction_s,
        statements=len(light),
        locking=locking,
        locking_s=sum(per_request[s] * _number(light[s]["time_per_call_s"]) for s in locking),
        share=min(1.0, max(per_request.values())),
        faster=_faster(mine, light, users, light_run, transaction_s, locking),
    )
    if found.light_users >= 2:
        found.light_wait_bound_s = found.locking_s / found.share
    _waits(found, mine, light, users)
    return found


def _locking(rows, mine, light, users, light_run: str, transaction_s: float) -> dict[str, str]:
    """The statements that take the lock, each with the evidence that says so."""
    out: dict[str, str] = {}
    for statement in light:
        logged = [
            r
            for r in rows
            if r["statement"] == statement and _number(r["lock_waits"]) > 0 and r["run"] != ""
        ]
        if logged:
            most = max(logged, key=lambda r: _number(r["lock_waits"]))
            out[statement] = (
                f"{_number(most['lock_waits']):g} lock waits logged at {most['run']} "
                f"({most['source']})"
            )
    if out:
        return out
    heavier = [run for run in users if users[run] > users[light_run]]
    for statement, row in light.items():
        base = _number(row["time_per_call_s"])
        grown = []
        for run in heavier:
            at = next((r for r in mine if r["run"] == run and r["statement"] == statement), None)
            if at is None:
                continue
            now = _number(at["time_per_call_s"])
            increase = (now - base) * _number(row["calls_per_request"])
            if base > 0 and now >= GROWS * base and increase >= GROWS_SHARE * transaction_s:
                grown.append((now / base, run, now))
        if grown:
            # the run where it grew most: a lock's wait need not grow with every load (past
            # the node's own threads the queue moves to them, and the lock's wait can fall)
            ratio, run, now = max(grown)
            out[statement] = (
                f"time per call x{ratio:.3g} from {light_run} to {run} "
                f"({base * 1000:.3g} -> {now * 1000:.3g} ms)"
            )
    return out


def _faster(
    mine, light, users, light_run: str, transaction_s: float, locking: dict[str, str]
) -> list[str]:
    """The statements whose time per call fell to 1/GROWS of their light time or less at a
    heavier run, by GROWS_SHARE of the transaction or more (the MariaDB fixtures' COMMIT: 6.3 ms
    a call at one client, 1.2 ms at two).  The model holds one time per call at every load, so
    the light run's transaction carries a cost the heavier runs do not have, and no fit meets
    both: said, not corrected, since only the database knows why (a cold start, or work
    batched under load).  A locking statement is not one: its time holds the lock's wait,
    which falls past the knee as the queue moves to the node's threads."""
    out = []
    heavier = [run for run in users if users[run] > users[light_run]]
    for statement, row in light.items():
        if statement in locking:
            continue
        base = _number(row["time_per_call_s"])
        fell = []
        for run in heavier:
            at = next((r for r in mine if r["run"] == run and r["statement"] == statement), None)
            if at is None:
                continue
            now = _number(at["time_per_call_s"])
            decrease = (base - now) * _number(row["calls_per_request"])
            if now * GROWS <= base and decrease >= GROWS_SHARE * transaction_s:
                fell.append((now / base, run, now))
        if fell:
            ratio, run, now = min(fell)
            out.append(
                f"{statement!r} x{ratio:.3g} from {light_run} to {run} "
                f"({base * 1000:.3g} -> {now * 1000:.3g} ms)"
            )
    return out


def _waits(found: DatabaseEvidence, mine, light, users) -> None:
    """Each heavier run's wait per acquisition: the locking statements' growth per request
    (calls per request x (time per call - its light time)) over the acquisitions per request."""
    light_users = users[found.light_run]
    for run in sorted(users, key=lambda r: users[r]):
        if users[run] <= light_users:
            continue
        at = {str(r["statement"]): r for r in mine if r["run"] == run}
        absent = [s for s in found.locking if s not in at]
        if absent:
            found.left_out.append(f"{run}: no time per call of {absent[0]!r}")
            continue
        grown = sum(
            _number(at[s]["calls_per_request"])
            * (_number(at[s]["time_per_call_s"]) - _number(light[s]["time_per_call_s"]))
            for s in found.locking
        )
        wait = grown / found.share
        if not wait > 0:
            # a mean wait cannot be negative: the statement ran no slower than at the light
            # run, within the measurement's noise, and there is no figure to meet
            found.left_out.append(f"{run}: no growth ({wait * 1000:.3g} ms)")
            continue
        # The growth is counted from the light run's time per call, which holds that run's
        # own wait: the wait at this run is the growth plus a light wait somewhere in
        # [0, light_wait_bound_s], its middle taken, its spread the figure's error
        # (`wait_error`).  Compared with the simulated wait as it is, the growth alone is short
        # by the light wait, and the hold fitted to it too short.
        found.waits[run] = wait + found.light_wait_bound_s / 2


def wait_error(found: DatabaseEvidence, runs: list[str]) -> float | None:
    """The lock wait figures' relative error at the fitted `runs`: the light run's own wait, a
    uniform over [0, light_wait_bound_s], as a share of each figure (the largest), or None when
    the light run could not wait (one user)."""
    shares = [
        found.light_wait_bound_s / math.sqrt(12) / found.waits[run]
        for run in runs
        if run in found.waits
    ]
    return max(shares) if shares and found.light_wait_bound_s > 0 else None


def write_lock_waits(table_path: Path, waits: dict[str, float]) -> None:
    """The experiment's copy of the measurement table with the column `database.lock.wait`: the
    run's wait per acquisition on each of its class-`total` rows (a run pooled from several
    windows keeps it), empty elsewhere."""
    from sim.measurements.classes import TOTAL
    from sim.measurements.table import nan_to_none, read, write

    table = read(table_path)
    rows = []
    for record in table.to_dict(orient="records"):
        row = {k: nan_to_none(v) if isinstance(v, float) else v for k, v in record.items()}
        wait = waits.get(str(row["run"])) if row["class"] == TOTAL else None
        row[LOCK_WAIT] = wait
        rows.append(row)
    write(rows, table_path)


def _waiters_cost_lines(found: DatabaseEvidence, why: str) -> list[str]:
    """The `[[unknown]]` of what each waiter costs the lock's next holder
    (`database.lock.wake_per_waiter_s`): at most the locking statement's own time per call at
    the light run -- a waiter woken to re-lock the new version redoes at most its statement's
    work, the row found and locked again -- and at least 1 % of it (a process woken and put
    back to sleep, the floor `DEMAND_SHARE_LOW` gives the database's own work), on a log
    scale: from a wake-up's microseconds to a statement's milliseconds.  A one-node test with
    few waiters per grant cannot pin it; it is what a second node's waiters cost."""
    per_call = found.locking_s / found.share if found.share > 0 else found.locking_s
    low = DEMAND_SHARE_LOW * per_call
    return [
        f"# each waiter left at a grant lengthens the holder's section: {why}; from",
        f"# {DEMAND_SHARE_LOW:.0%} of to all of the locking statement's {per_call * 1000:.4g} ms per call at "
        f"{found.light_run} (a woken",
        "# waiter redoes at most its statement's work)",
        "[[unknown]]",
        'parameter = "database.lock.wake_per_waiter_s"',
        f"range = [{low!r}, {per_call!r}]",
        f"provenance = \"{DEMAND_SHARE_LOW:.0%} of to all of the locking statement's "
        f"{per_call * 1000:.4g} ms per call at {found.light_run}; a heavier run where several "
        "waiters queue at each grant (two nodes past the lock's knee) would measure it\"",
        "",
    ]


def database_lines(
    found: DatabaseEvidence,
    light_response_s: float,
    pinned: bool,
    jdbc_pool: int | str | None,
) -> dict:
    """The settings and the experiment's lines for the database tier: `pinned` when a fitted
    run has a lock wait figure (the hold is then searched, `[[calibrate]]`, else carried as an
    `[[unknown]]` over its range)."""
    t, lock, light = found.transaction_s, found.locking_s, found.light_run
    if light_response_s <= t:
        raise ExperimentError(
            f"--database {found.path}: the statements of {light} take {t * 1000:.4g} ms per "
            f"request, the run's whole response {light_response_s * 1000:.4g} ms: the evidence "
            "and the table are not of the same runs (name the database files after the runs)"
        )
    database = database_of(found.source)
    order = database.lock_order
    settings = [f"database.lock.share={found.share!r}", f"database.lock.order={order}"]
    if jdbc_pool is not None:
        settings.append(f"backends.0.jdbc_pool={jdbc_pool}")
    demand_low = DEMAND_SHARE_LOW * t
    demand_high = max(t - lock, 2 * demand_low)
    demand_start = math.sqrt(demand_low * demand_high)
    settings.append(f'database.demand={{dist = "deterministic", value = {demand_start!r}}}')
    hold_low = lock
    hold_high = light_response_s - demand_low
    if hold_high <= hold_low:
        raise ExperimentError(
            f"--database {found.path}: the locking statements take {lock * 1000:.4g} ms per "
            f"request at {light}, as long as the run's whole response {light_response_s * 1000:.4g} "
            "ms: the evidence and the table are not of the same runs"
        )
    hold_start = min(max(t - demand_start, hold_low), hold_high)
    # a locking statement timed at 0 (a snapshot's rounding) has no log scale below it
    scale = [] if hold_low > 0 else ['scale = "linear"']
    named = "; ".join(f"{s!r}: {why}" for s, why in found.locking.items())
    lines = [
        f"# the shared database, from {Path(found.path).name} ({found.source}) at {light}: one",
        f"# call per request stands for the transaction, {found.statements} statements taking "
        f"{t * 1000:.4g} ms per request;",
        f"# the lock is taken by {named}",
        f"# its waiters are served in {order} order: {database.order_why}",
        "[[unknown]]",
        'parameter = "database.demand.value"',
        f"range = [{demand_low!r}, {demand_high!r}]",
        f"start = {demand_start!r}",
        f"provenance = \"the database's own work per transaction (CPU and flush): "
        f"{DEMAND_SHARE_LOW:.0%} of the statements' {t * 1000:.4g} ms at {light} up to all of it "
        f"but the locking statement's {lock * 1000:.4g} ms; {database.flush_measurement} "
        'would measure it"',
        "",
    ]
    hold_said = (
        f"at least the locking statement's {lock * 1000:.4g} ms at {light}, at most the light "
        f"response {light_response_s * 1000:.4g} ms less the database's least work "
        f"({database.untimed.format(ms=f'{t * 1000:.4g}')})"
    )
    if pinned:
        lines += [
            f"# the lock's hold besides the database's work: {hold_said}; the lock waits fix it",
            "[[calibrate]]",
            'parameter = "database.lock.hold.value"',
            f"bounds = [{hold_low!r}, {hold_high!r}]",
            f"start = {hold_start!r}",
            *scale,
            "",
        ]
    else:
        lines += [
            "# the lock's hold besides the database's work: no fitted run has a lock wait to fix",
            "# it (fit a run where the locking statement grows), so it is carried over its range",
            "[[unknown]]",
            'parameter = "database.lock.hold.value"',
            f"range = [{hold_low!r}, {hold_high!r}]",
            f"start = {hold_start!r}",
            *scale,
            f'provenance = "{hold_said}"',
            "",
        ]
    if database.waiters_cost is not None:
        lines += _waiters_cost_lines(found, database.waiters_cost)
    if found.light_users >= 2:
        # the light time per call is what the growth is counted from: a statement that already
        # waits there makes every wait figure short by that wait, and the hold's floor long
        lines += [
            f"# the lock waits are counted from {light}'s time per call ({found.light_users:.3g} users,",
            "# which may wait already): a run of one user as the lightest fitted makes them whole",
            "",
        ]
    said = (
        f"the transaction {t * 1000:.4g} ms per request at {light} ({found.source}, "
        f"{found.statements} statements); the lock taken by {named}, share {found.share:.3g}; "
        "lock waits per acquisition "
        + (
            ", ".join(f"{run} {w * 1000:.4g} ms" for run, w in found.waits.items())
            or "measured at no run"
        )
        + (f" (none at {'; '.join(found.left_out)})" if found.left_out else "")
        + (
            f"; counted from {light}'s time per call, {found.light_users:.3g} users that may "
            "wait already (a one-user run as the lightest fitted makes them whole)"
            if found.light_users >= 2
            else ""
        )
        + (
            f"; faster under load than at {light}: {', '.join(found.faster)}: the model's one "
            f"time per call keeps {light}'s, so a fit of {light} and a heavier run misses one "
            f"or both (a cold start at {light}, or work the database batches under load)"
            if found.faster
            else ""
        )
    )
    return {"settings": settings, "lines": lines, "said": said}
