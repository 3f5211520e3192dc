"""`tiersim plan TABLE --fit RUN --fit RUN -o FOLDER`: an experiment folder for the planner's
path, written from an imported load test by the operational laws alone.

The folder gets the table (`measured.csv`) and an `experiment.toml` on it: the template model
(`models/planner-apache-tomcat.toml` unless `--model`), each run's users as the model's
`clients.users`, `throughput` and `response.mean` as figures, the two (or more) runs to fit,
`[[choose]]` over the candidate core counts, and the free parameters with search ranges the
laws give on the fitted runs:

* the think time by the response-time law, Z = N/X - R (their mean), searched from Z/2 to 2Z;
  a test with no timers (Z under a millisecond) gets think time 0 and no search;
* the demand per request: at most the lightest fitted run's response time R_min (a request
  alone waits for nobody: R = D at one user, more with any queueing), searched from
  R_min/20 to 1.5 R_min (the margin is for the measurement's own noise).

With `--shape` (a light level's per-sample file: its response times, `sim.measurements.
shape`), the request's time is split as a Tomcat request thread spends it: on the host's cores
(`backends.0.demand`, the CPU) and waiting while it holds its thread (`backends.0.io_wait`: I/O,
a remote call, a pool), the wait drawn from the shape the samples have (its family, cv and fixed
offset), not an exponential burst on processor-shared cores, whose tail is that of no real
servlet.  The split between the two is what a load test's response times cannot tell: the
host's utilisation can (the utilisation law, D = U x cores / X, when the table has the host's
`sar`); without it, the CPU demand is an `[[unknown]]` carried over its whole range into every
interval.  The CPU part is a constant per request: the samples' shape already holds all of the
response's variation, and an exponential CPU burst on top would lengthen its tail again.  The
request threads (Tomcat `maxThreads`) are `--threads`: one value (from
server.xml) is set, several are `[[choose]]` candidates.  The measured percentiles
(`response.p50` ... `response.p99`, with their errors from the samples) are figures beside the
means, and the p95 is fitted: the shape decides the tail, and nothing else checks it.
Without `--shape` the lightest fitted run's own file is fitted, where the import recorded it or
beside the table, and without `--threads` the template's thread count is `[[choose]]`
candidates (`sim.studies.planner_defaults`): what the planner is not told is never a confident
guess.

With `--database` (the database evidence table, `tiersim import pg-stat ... -o database.csv`)
the template is `models/planner-apache-tomcat-database.toml`: the node calls one shared
database whose transaction takes one lock every node shares, its time, its lock's share and its
lock waits per run from the database's own statistics (`sim.studies.database_plan`); the lock
waits are figures the fit must meet, and the node's own start values leave the transaction's
time out.  `--jdbc-pool` is the node's JDBC pool (context.xml `Resource` `maxTotal`).

Nothing is set to meet a figure: the ranges only place the search, and `tiersim calibrate`
fits within them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Literal

from sim.studies.database_plan import LOCK_WAIT
from sim.studies.database_plan import TEMPLATE as DATABASE_TEMPLATE
from sim.studies.experiment import ExperimentError
from sim.studies.planner_defaults import thread_candidates
from sim.studies.planner_samples import check_fitted_samples

TEMPLATE = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"
CORES = (1, 2, 4, 8)
NO_THINK_S = 0.001
TABLE_NAME = {"csv": "measured.csv", "parquet": "measured.parquet"}


def scaffold(
    table_path: str | Path,
    fit: list[str],
    folder: str | Path,
    model: str | Path = TEMPLATE,
    cores: tuple[int, ...] = CORES,
    warmup_s: float = 0.0,
    duration_s: float | None = None,
    predict: tuple[int, ...] = (),
    shape=None,
    threads: tuple[int, ...] = (),
    think: str | None = None,
    think_said: str | None = None,
    database: str | Path | None = None,
    jdbc_pool: int | Literal["none"] | None = None,
    find_shape: bool = False,
    threads_candidates: bool = False,
    node_settings: tuple[str, ...] = (),
    threads_source: str | None = None,
    tiers: str | Path | None = None,
) -> dict:
    """Write the experiment folder; returns what was estimated (runs, think, demand).
    `predict`: user counts to predict that no run measured; each becomes a run `usersN` of the
    copied table with its users and no figures (withheld: predicted with an interval, never
    scored).  `shape`: a light level's `ShapeFit` (the thread-holding wait's distribution);
    `threads`: Tomcat maxThreads, set (one value) or chosen among (several); `think`: the
    load generator's timer as a distribution spec (TOML inline table), set instead of fitted;
    `think_said`: where it comes from, for the experiment's comment (a JMeter plan's timers).
    `database`: the database evidence table (the shared tier and its lock, `sim.studies.
    database_plan`); `jdbc_pool`: the node's JDBC pool (context.xml `Resource` `maxTotal`;
    "none": no limit, as a negative maxTotal says).  `find_shape`: without `shape`, fit the
    lightest fitted run's per-sample file, where the import recorded it or beside the table
    (`sim.studies.planner_defaults`).  `threads_candidates`: without `threads`, the template's
    thread count is `[[choose]]` candidates (a model of one's own, `--model`, keeps its own).
    `node_settings`: the node's other Connector settings read from its `server.xml`
    (`backends.0.accept_queue=100`), `threads_source` where `threads` comes from.  `tiers`: a
    traced run's per-tier table (`tiersim import otel`), else the one beside the table: the
    lightest fitted run's time per tier places the demands (`sim.studies.planner_tiers`)."""
    from sim.measurements.laws import run_laws
    from sim.measurements.table import read, table_format

    table = read(table_path)
    laws = {law.run: law for law in run_laws(table, warmup_s)}
    if len(fit) < 2:
        raise ExperimentError(
            "--fit: name two runs (or more) to fit, e.g. --fit users2 --fit users16: one light, "
            "one heavy; the other runs are predicted"
        )
    # a run whose file names no users (k6, Gatling, a trace) has laws without N: not fittable
    missing = [run for run in fit if run not in laws or not math.isfinite(laws[run].users)]
    if missing:
        raise ExperimentError(_unfit(table, missing[0], laws, table_path, warmup_s))
    if not cores or any(c < 1 for c in cores):
        raise ExperimentError(f"--cores {cores}: expected core counts >= 1, e.g. 1,2,4,8")
    chosen = [laws[run] for run in fit]
    think_s = sum(law.think_s for law in chosen) / len(chosen)
    lightest = min(chosen, key=lambda law: law.users)
    demand_s = lightest.response_mean_s
    if jdbc_pool is not None and database is None:
        raise ExperimentError(
            f"--jdbc-pool {jdbc_pool}: the JDBC pool is the database tier's; give --database "
            "database.csv (tiersim import pg-stat ...) to plan the database"
        )
    if isinstance(jdbc_pool, int) and jdbc_pool < 1:
        raise ExperimentError(f"--jdbc-pool {jdbc_pool}: expected the pool's size >= 1")
    tier, waits, database_s = None, {}, 0.0
    if database is not None:  # read and checked before anything is written
        from sim.studies.database_plan import database_lines, read_evidence

        evidence = read_evidence(database, lightest.run)
        waits, database_s = evidence.waits, evidence.transaction_s
        # the lock waits fit the hold where a fitted run measured one
        tier = database_lines(evidence, demand_s, any(run in waits for run in fit), jdbc_pool)
    waits_fitted = [run for run in fit if run in waits]
    model_path = Path(model).resolve()
    if not model_path.is_file():
        raise ExperimentError(f"--model {model}: no such model file")
    name = TABLE_NAME[table_format(table_path)]
    shape_said = None
    if shape is None and find_shape:  # read before anything is written
        shape, shape_said = _light_shape(table_path, lightest.run, warmup_s)
    # a run's percentile is one of its own samples, not a pool of its windows' percentiles:
    # they are figures when each run is one window (imported without --window)
    kept = table[(table["class"] == "total") & (table["window_start_s"] >= warmup_s)]
    one_window = bool(kept.groupby("run")["window_start_s"].nunique().max() <= 1)
    percentiles = [
        c
        for c in PERCENTILE_FIGURES
        if one_window and c in table.columns and table[c].notna().any()
    ]
    # the p95 is fitted where the shape decides the tail (`_split`); a run too small for what
    # it is fitted to is refused before anything is written
    fitted_p = [95.0] if shape is not None and FITTED_PERCENTILE in percentiles else []
    windows = kept.groupby("run")["window_start_s"].nunique().to_dict()
    samples_said = check_fitted_samples(chosen, fitted_p, warmup_s, table_path, windows)
    from sim.studies.planner_tiers import find_tier_demands

    traced, tiers_said = find_tier_demands(table_path, tiers, lightest.run)
    if traced is not None:
        tiers_said = traced.said(database_modelled=database is not None)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    if predict:
        _with_levels(table, predict, warmup_s, table_path, out / name)
    elif Path(table_path).resolve() != (out / name).resolve():
        shutil.copyfile(table_path, out / name)
    _copy_sources(table_path, out / name)
    if waits:
        from sim.studies.database_plan import write_lock_waits

        write_lock_waits(out / name, waits)
    settings = ["clients.users={value}"]
    if think is not None:
        from sim.model.load import ModelError, load_model

        try:  # refused here, with the template's own message, not at the first calibration
            load_model(Path(model), [f"clients.think={think}"])
        except ModelError as exc:
            raise ExperimentError(f"--think {think}: {exc}") from None
        # the test plan's timer, as JMeter runs it: its shape matters past the knee (a thread
        # pool's FIFO queue is not product-form), so it is given, not fitted as an exponential
        settings.append(f"clients.think={think}")
    elif think_s < NO_THINK_S:
        settings.append("clients.think.mean=0")
    if duration_s is not None:
        settings.append(f"run.duration_s={duration_s:g}")
    if any(t < 1 for t in threads):
        raise ExperimentError(
            f"--threads {threads}: expected thread counts >= 1, e.g. 8 or 8,16,200"
        )
    threads_said = threads_source
    templates = (TEMPLATE.resolve(), DATABASE_TEMPLATE.resolve())
    if threads_candidates and not threads and model_path in templates:
        # Tomcat's default is no measurement of this stack: the candidates are fitted and
        # weighed, and one the fitted runs cannot rule out widens every interval
        threads = thread_candidates(max(law.users for law in chosen))
        threads_said = (
            f"maxThreads not given: candidates {', '.join(str(t) for t in threads)} "
            "([[choose]], weighed by the fit); give --threads N from your server.xml"
        )
    if len(threads) == 1:
        settings.append(f"backends.0.threads={threads[0]}")
    settings += node_settings
    split = (
        _split(table, chosen, lightest, shape, cores, database_s, traced)
        if shape is not None
        else None
    )
    if split is not None:
        settings += split["settings"]
    elif traced is not None:  # the front's time, and the waits a shape would otherwise hold
        settings += traced.settings(with_wait=True, database_modelled=database is not None)
    if split is not None and traced is not None and not split["traced_used"]:
        tiers_said = (
            f"{tiers_said}; not used: the host's utilisation (sar) gives the CPU, and the "
            "samples' shape the wait"
        )
    if tier is not None:
        settings += tier["settings"]
    lines = [
        f"# Written by `tiersim plan {Path(table_path).name} "
        + " ".join(f"--fit {run}" for run in fit)
        + "`: the planner's path on an",
        '# imported load test (README, "From your load test to a capacity answer"). Edit freely;',
        "# `tiersim calibrate FOLDER` fits the free parameters and predicts the other runs.",
        *(f"# warning: {said}" for said in samples_said),
        "",
        "[experiment]",
        f'name = "{out.resolve().name}"',
        f'table = "{name}"',
        f"warmup_s = {warmup_s:g}",
        "",
        "[models]",
        f"model = {json.dumps(str(model_path))}",
        "",
        "[factors.users]",
        '"*" = [' + ", ".join(json.dumps(s) for s in settings) + "]",
        "",
        "[[figures]]",
        'column = "throughput"',
        "",
        "[[figures]]",
        'column = "response.mean"',
        "",
    ]
    for column in percentiles:  # measured with their errors from the samples
        lines += ["[[figures]]", f'column = "{column}"', ""]
    if waits:
        lines += [
            "# the locking statement's growth over its light time per call: the lock's wait per",
            "# acquisition, measured by the database (a figure of the runs heavier than the light one)",
            "[[figures]]",
            f'column = "{LOCK_WAIT}"',
            'unit = "s"',
            "",
        ]
    fitted_columns = ["throughput", "response.mean"]
    if split is not None and FITTED_PERCENTILE in percentiles:
        fitted_columns.append(FITTED_PERCENTILE)  # the tail the shape decides
    elif shape is None and find_shape:
        shape_said = (
            f"the p95 is not fitted: {shape_said}; the tail is the model's assumption "
            "(an exponential demand on processor-shared cores), give --shape LIGHT.jtl"
        )
    for run in fit:  # by figure, so that a figure added later is compared, not fitted
        for column in fitted_columns:
            lines += ["[[fitted]]", f'run = "{run}"', f'figure = "{column}"', ""]
    for run in waits_fitted:
        lines += ["[[fitted]]", f'run = "{run}"', f'figure = "{LOCK_WAIT}"', ""]
    if len(threads) > 1:
        lines += [
            "# Tomcat maxThreads: one calibration per candidate, the best fit kept",
            "[[choose]]",
            'parameter = "backends.0.threads"',
            f"values = [{', '.join(str(t) for t in threads)}]",
            "",
        ]
    if tier is not None:
        lines += tier["lines"]
    if split is not None:
        lines += split["lines"]
    else:
        # one demand for the whole light response, or the application server's own time
        bound_s = demand_s
        bound_said = (
            f"# at most the lightest fitted run's response time ({lightest.run}: "
            f"{demand_s * 1000:.4g} ms at {lightest.users:.3g} users)"
            + ("; it starts without the database's" if database_s else "")
        )
        start_s = max(demand_s / 20, (demand_s - database_s) * 0.75)
        if traced is not None:
            bound_s = traced.app_s
            bound_said = (
                f"# at most the application server's own time per request in {lightest.run}'s "
                f"trace ({bound_s * 1000:.4g} ms, {Path(traced.source).name})"
            )
            start_s = bound_s * 0.75
        lines += [
            "# the cores a request can use: one calibration per candidate, the best fit kept",
            "[[choose]]",
            'parameter = "backends.0.cores"',
            f"values = [{', '.join(str(c) for c in cores)}]",
            "",
            bound_said,
            "[[calibrate]]",
            'parameter = "backends.0.demand.mean"',
            f"bounds = [{bound_s / 20!r}, {bound_s * 1.5!r}]",
            f"start = {start_s!r}",
            "",
        ]
    if think is not None:
        lines += [
            f"# the think time is the test plan's timer ({think_said or think}); the response-time law on",
            f"# the fitted runs agrees or not: Z = N/X - R = {think_s * 1000:.4g} ms",
            "",
        ]
    elif think_s >= NO_THINK_S:
        lines += [
            f"# the response-time law on the fitted runs: Z = N/X - R = {think_s * 1000:.4g} ms",
            "[[calibrate]]",
            'parameter = "clients.think.mean"',
            f"bounds = [{think_s / 2!r}, {think_s * 2!r}]",
            f"start = {think_s!r}",
            "",
        ]
    (out / "experiment.toml").write_text("\n".join(lines), encoding="utf-8")
    return {
        "folder": str(out),
        "fit": list(fit),
        "think_s": think_s,
        "demand_bound_s": demand_s,
        "runs": [law.as_dict() for law in laws.values()],
        "split": None if split is None else split["said"],
        "figures": ["throughput", "response.mean", *percentiles] + ([LOCK_WAIT] if waits else []),
        "percentiles_pooled": not one_window,  # runs of several windows: no percentile figures
        "database": None if tier is None else tier["said"],
        "shape": shape_said,
        "wait": None
        if shape is None
        else (
            f"{shape.best.name} (offset {shape.best.offset_s * 1000:.4g} ms, cv "
            f"{shape.best.cv:.3g})"
            + ("" if FITTED_PERCENTILE in fitted_columns else "; the p95 is not fitted")
        ),
        "threads": threads_said,
        "samples": samples_said,  # a warning per fitted run whose errors are assumed
        "tiers": tiers_said,  # the per-tier times used, or why the table beside is not
    }


PERCENTILE_FIGURES = ("response.p50", "response.p90", "response.p95", "response.p99")
FITTED_PERCENTILE = "response.p95"
UNKNOWN_CPU_SHARE = (0.01, 0.9)  # the CPU's share of the light response, without `sar`


def _host_utilisation(table, run: str) -> tuple[str, float] | None:
    """The host column and its mean utilisation over `run`'s windows (`sar`), if recorded."""
    columns = [c for c in table.columns if c.endswith(".cpu.utilization")]
    if not columns:
        return None
    rows = table[(table["run"] == run) & (table["class"] == "total")]
    value = float(rows[columns[0]].mean())
    return None if value != value else (columns[0], value)


BACKGROUND_SHARE = 0.8  # a slope below this share of the light run's law: a busy background


def _busy_slope(table, chosen, cores: int, column: str) -> float | None:
    """The CPU per request without the host's background [s]: the least-squares slope of the
    fitted runs' busy share against their throughput, times the cores (None: fewer than two
    runs with both, or throughputs too close to tell)."""
    points = []
    for law in chosen:
        rows = table[(table["run"] == law.run) & (table["class"] == "total")]
        busy = float(rows[column].mean())
        if busy == busy and law.throughput > 0:
            points.append((law.throughput, busy))
    if len(points) < 2:
        return None
    xs = [x for x, _ in points]
    if max(xs) < 1.5 * min(xs):  # too close: the slope is the noise's
        return None
    mean_x = sum(xs) / len(xs)
    mean_u = sum(u for _, u in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return cores * sum((x - mean_x) * (u - mean_u) for x, u in points) / spread


def _split(
    table, chosen, lightest, shape, cores: tuple[int, ...], database_s: float = 0.0, traced=None
) -> dict:
    """The light response split into CPU (`backends.0.demand`) and the wait a request thread
    holds (`backends.0.io_wait`, of the samples' shape): the settings, the experiment's lines
    and a sentence saying how the split was made.  `database_s`: the shared database's time
    per request at light load, a part of that wait the database tier models itself (the
    wait's search starts without it).  `traced`: the trace's per-tier times (`sim.studies.
    planner_tiers`): without `sar`, the front's time is `proxy.demand` and the CPU's range is
    the application server's own time."""
    best = shape.best
    family = best.spec()  # the varying part: {"dist", "mean", ("cv" | "scv")}
    offset = best.offset_s
    lines: list[str] = []
    wait = {**family, "offset": offset}
    inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in wait.items())
    settings = [f"backends.0.io_wait={{{inline}}}"]
    host = _host_utilisation(table, lightest.run)
    light_s = lightest.response_mean_s
    if host is not None and len(cores) == 1:
        column, utilisation = host
        cpu_s = utilisation * cores[0] / lightest.throughput  # the utilisation law, U x c / X
        cpu_s = min(cpu_s, 0.9 * light_s)
        # The law gives all of the host's busy time to the requests; a host also busy without
        # them (other processes, idle JVMs, the monitoring itself) makes it an upper bound.
        # The fitted runs' busy share against their throughput, U = U0 + D X / c, gives D
        # without the background U0: the CPU per request is carried between the two.
        slope_s = _busy_slope(table, chosen, cores[0], column)
        background = slope_s is not None and slope_s < BACKGROUND_SHARE * cpu_s
        start_s = max(slope_s, 0.0) if background and slope_s is not None else cpu_s
        settings += [
            f"backends.0.cores={cores[0]}",
            f'backends.0.demand={{dist = "deterministic", value = {start_s!r}}}',
        ]
        if background:
            low_s = max(start_s, UNKNOWN_CPU_SHARE[0] * cpu_s)
            lines += [
                "# the CPU per request: the utilisation law at the light run gives it all of the",
                "# host's busy time, an upper bound when the host is busy without the requests;",
                "# the fitted runs' busy share against their throughput gives it without that",
                "# background: an [[unknown]] between the two (sar of the Tomcat process alone,",
                "# pidstat, or a level past the knee would measure it)",
                "[[unknown]]",
                'parameter = "backends.0.demand.value"',
                f"range = [{low_s!r}, {cpu_s!r}]",
                f"start = {low_s!r}",
                f"provenance = \"{low_s * 1000:.3g} ms from the busy share's growth over the "
                f"fitted runs to {cpu_s * 1000:.3g} ms by the utilisation law at {lightest.run}"
                '"',
                "",
            ]
        # A JTL's response also holds the time outside the request thread: JMeter, Apache
        # (mod_proxy_http) and the network, which hold no Tomcat thread.  On one host that time
        # is CPU, and part of the CPU the utilisation law measured; which part, the response
        # times cannot tell (the light levels pin only the sum).  It is an unknown over the
        # host's whole CPU per request, spent by the front (`proxy.demand`, before and after
        # the backend call), and the fitted offset makes up the rest of the light response.
        settings.append('proxy.demand={dist = "deterministic", value = 0.0}')
        lines += [
            "# the time a response spends outside the Tomcat thread (JMeter, Apache, the",
            "# network): part of the host's CPU per request, which part the response times",
            "# cannot tell (an [[unknown]] over the whole of it: a level past the knee, or",
            "# Tomcat's access log with %D, would measure it)",
            "[[unknown]]",
            'parameter = "proxy.demand.value"',
            f"range = [0.0, {start_s!r}]",
            f"provenance = \"0 to the host's CPU per request, {start_s * 1000:.3g} ms by the "
            f"{'busy share over the fitted runs' if background else 'utilisation law at ' + lightest.run}; "
            "Tomcat's access log (%D) or a level past the knee would measure it\"",
            "",
        ]
        said = (
            f"CPU {cpu_s * 1000:.3g} ms per request by the utilisation law ({column} "
            f"{utilisation:.1%} x {cores[0]} cores / {lightest.throughput:.4g} req/s at "
            f"{lightest.run}), of which 0 to all is spent outside the request thread "
            f"(an [[unknown]]); the rest of {light_s * 1000:.4g} ms is waiting"
        )
        if background:
            said += (
                f"; the host is busy without the requests (the busy share grows only "
                f"{start_s * 1000:.3g} ms per request over the fitted runs): the CPU per request "
                f"is an [[unknown]] from {start_s * 1000:.3g} to {cpu_s * 1000:.3g} ms"
            )
    else:
        low, high = (share * light_s for share in UNKNOWN_CPU_SHARE)
        provenance = (
            f"{UNKNOWN_CPU_SHARE[0]:.0%} to {UNKNOWN_CPU_SHARE[1]:.0%} of {lightest.run}'s "
            f"mean response {light_s * 1000:.4g} ms; no sar"
        )
        if traced is not None:  # the CPU works within the server's own time, not the front's
            low, high = UNKNOWN_CPU_SHARE[0] * traced.app_s, min(high, traced.app_s)
            provenance = (
                f"{UNKNOWN_CPU_SHARE[0]:.0%} to all of the application server's own time in "
                f"{lightest.run}'s trace, {traced.app_s * 1000:.4g} ms; no sar"
            )
            settings += traced.settings(with_wait=False, database_modelled=database_s > 0)
        settings.append(f'backends.0.demand={{dist = "deterministic", value = {low!r}}}')
        if len(cores) == 1:
            settings.append(f"backends.0.cores={cores[0]}")
        else:
            lines += [
                "# the cores a request can use: one calibration per candidate, the best fit kept",
                "[[choose]]",
                'parameter = "backends.0.cores"',
                f"values = [{', '.join(str(c) for c in cores)}]",
                "",
            ]
        lines += [
            "# the CPU's part of the light response: no host utilisation was measured, so the",
            "# response times alone cannot split computing from waiting (an [[unknown]]: its",
            "# range is carried into every interval; import with --utilisation to measure it)",
            "[[unknown]]",
            'parameter = "backends.0.demand.value"',
            f"range = [{low!r}, {high!r}]",
            f'provenance = "{provenance}"',
            "",
        ]
        why = (
            "no host utilisation in the table (import with --utilisation)"
            if host is None
            else "the host's utilisation needs its cores to give CPU-seconds (--cores N)"
        )
        said = (
            f"the CPU's part of {light_s * 1000:.4g} ms unknown ({why}): an [[unknown]] over "
            "its range"
        )
    mean = family["mean"]
    source = f"{best.name} from {shape.source} ({shape.samples} samples)"
    if offset > 0:
        # the fixed part is where computing and waiting trade places: the CPU's share (known or
        # an unknown) plus this offset make the light response; the varying part keeps the
        # samples' shape, which is what decides the tail
        lines += [
            f"# the wait a request thread holds: {source}, the varying part fixed",
            f"# (mean {mean * 1000:.4g} ms, {'cv' if 'cv' in family else 'scv'} "
            f"{family.get('cv', family.get('scv'))}); its fixed part fitted",
            "[[calibrate]]",
            'parameter = "backends.0.io_wait.offset"',
            f"bounds = [0.0, {max(1.5 * offset, light_s)!r}]",
            f"start = {max(0.0, offset - database_s)!r}",
            "",
        ]
    else:
        lines += [
            f"# the wait a request thread holds: {source}; its mean fitted",
            "[[calibrate]]",
            'parameter = "backends.0.io_wait.mean"',
            f"bounds = [{mean / 4!r}, {mean * 3!r}]",
            f"start = {max(mean / 4, mean - database_s)!r}",
            "",
        ]
    # the trace places the CPU only where no host utilisation measured it
    traced_used = traced is not None and not (host is not None and len(cores) == 1)
    return {"settings": settings, "lines": lines, "said": said, "traced_used": traced_used}


def _light_shape(table_path, run: str, warmup_s: float):
    """The shape of `run`'s samples (a `ShapeFit`) and a sentence saying where they came from,
    or None and why no per-sample file was found."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.shape import fit_shape, samples_of_file
    from sim.studies.planner_defaults import light_samples

    found, why = light_samples(table_path, run, warmup_s)
    if found is None:
        return None, why
    try:
        samples = samples_of_file(found.file, found.format, found.from_s, found.until_s)
        shape = fit_shape(samples, source=found.file)
    except MeasurementError as exc:  # too few samples, a file changed since: no shape, said
        return None, f"{run}'s samples give no shape ({exc})"
    except ValueError as exc:
        return None, f"{run}'s samples give no shape ({found.file}: elapsed: {exc})"
    until = "the end" if found.until_s is None else f"{found.until_s:.4g} s"
    said = (
        f"the shape of {run}'s {shape.samples} samples ({found.file}, {found.found}, "
        f"{found.from_s:.4g} s to {until})"
    )
    return shape, said


def _unfit(table, run: str, laws: dict, table_path, warmup_s: float) -> str:
    """Why `--fit run` names no run the laws can read: it is not in the table, or it is and
    what it lacks (the users a k6, Gatling or trace file does not record, any success, or a
    window after the warm-up) -- never "no run" for a run the table has."""
    usable = ", ".join(r for r, law in laws.items() if math.isfinite(law.users)) or "none"
    rows = table[(table["class"] == "total") & (table["run"].astype(str) == run)]
    if rows.empty:
        return f"--fit {run}: no run {run!r} in {table_path} (its runs with users: {usable})"
    kept = rows[rows["window_start_s"] >= warmup_s]
    if kept.empty:
        return (
            f"--fit {run}: every window of run {run!r} in {table_path} starts before --warmup "
            f"{warmup_s:g} s (they start at {rows['window_start_s'].min():.4g} s); lower --warmup"
        )
    if kept["users"].isna().all():
        return (
            f"--fit {run}: run {run!r} in {table_path} records no users (a k6, Gatling or "
            "trace file names none); the planner sets each run's users as the model's clients: "
            "fill the run's users column, or import the load generator's own file (a JTL)"
        )
    return (
        f"--fit {run}: run {run!r} in {table_path} has no successful request to fit after "
        f"--warmup {warmup_s:g} s (its runs with users, throughput and response time: {usable})"
    )


def _copy_sources(table_path, copied: Path) -> None:
    """The import's record of the table's source files, beside the experiment's copy."""
    from sim.measurements.sources import sources_path

    record, beside = sources_path(table_path), sources_path(copied)
    if record.is_file() and record.resolve() != beside.resolve():
        shutil.copyfile(record, beside)


def _with_levels(table, users: tuple[int, ...], warmup_s: float, source, path: Path) -> None:
    """The table with a run `usersN` per load level to predict: its users, nothing measured."""
    from sim.measurements.table import nan_to_none, write

    if any(n < 1 for n in users):
        raise ExperimentError(f"--predict {users}: expected user counts >= 1")
    rows = [
        {k: nan_to_none(v) if isinstance(v, float) else v for k, v in record.items()}
        for record in table.to_dict(orient="records")
    ]
    taken = {str(r["run"]) for r in rows}
    for n in users:
        run = f"users{n}"
        if run in taken:
            raise ExperimentError(
                f"--predict {n}: {source} already has a run {run!r}; a measured level is "
                "predicted anyway unless fitted"
            )
        # one empty window where the experiment's warm-up ends, so that it is kept
        rows.append(
            {
                "run": run,
                "window_start_s": warmup_s,
                "window_end_s": warmup_s,
                "class": "total",
                "users": float(n),
            }
        )
    write(rows, path)
