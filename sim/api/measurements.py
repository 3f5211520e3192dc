"""Measurements on the package's face (`import sim`; docs/api.md): load-test files imported as
the tidy measurement table, service demands, operational laws, and an experiment planned from
them -- each one call of the library `tiersim import`, `estimate` and `plan` use."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sim.api import arguments
from sim.api.arguments import ArgumentError
from sim.api.frames import demands_frame

if TYPE_CHECKING:
    import pandas as pd

    from sim.measurements.shape import ShapeFit


def import_measurements(
    format: str,
    files: Sequence[str | Path],
    output: str | Path | None = None,
    *,
    window_s: float | None = None,
    utilisation: Sequence[str | Path] = (),
    run: str | None = None,
    classes: Sequence[str] = (),
    class_by: str = "label",
    log_format: str | None = None,
    encoding: str = "utf-8",
    warmup_s: float = 0.0,
    until_s: float | None = None,
    start: str | float | None = None,
) -> pd.DataFrame:
    """Load-test files of `format` as the tidy measurement table (`tiersim import`;
    docs/measurement-table.md), also written to `output` (.csv or .parquet) when given.
    The options are `tiersim import`'s: `window_s` (--window), `utilisation` (sar or CSV files),
    `run` (one run of all files), `classes` ("PATTERN=NAME", matched by `class_by`: label or
    url), `log_format` (access-log's LogFormat), `encoding`, and the cut: `warmup_s`, `until_s`
    (seconds after time zero) and `start` (time zero: seconds since the epoch, or ISO 8601).
    The files each run was read from are recorded beside `output` (`NAME.sources.csv`) and in
    the frame's `attrs["sources"]`."""
    from sim.measurements import table
    from sim.measurements.classes import ClassMap
    from sim.measurements.importer import FORMATS as KNOWN
    from sim.measurements.importer import ImportOptions, import_files, parse_start
    from sim.measurements.windows import Cut

    arguments.choice(format, "format", KNOWN)
    names = [str(f) for f in arguments.paths(files, "files", "load-test file")]
    if not names:
        raise ArgumentError("files", "no files given: name one load-test file or more")
    written = arguments.optional_path(output, "output", "table file")
    if start is not None and (isinstance(start, bool) or not isinstance(start, (str, int, float))):
        raise ArgumentError("start", f"expected seconds since the epoch or ISO 8601, not {start!r}")
    cut = Cut(
        start_s=None if start is None else parse_start(str(start)),
        warmup_s=arguments.number(warmup_s, "warmup_s", at_least=0.0, unit=" [s]"),
        until_s=arguments.optional_number(until_s, "until_s", above=0.0, unit=" [s]"),
    )
    if written is not None:
        table.table_format(written)  # an unknown suffix refused before the files are read
    options = ImportOptions(
        window_s=arguments.optional_number(window_s, "window_s", above=0.0, unit=" [s]"),
        classes=ClassMap.parse(
            arguments.choice(class_by, "class_by", ("label", "url")),
            list(arguments.strings(classes, "classes", "^/search=search")),
        ),
        run=arguments.optional_text(run, "run"),
        utilisation=[str(p) for p in arguments.paths(utilisation, "utilisation", "sar or CSV")],
        log_format=arguments.optional_text(log_format, "log_format"),
        encoding=arguments.optional_text(encoding, "encoding") or "utf-8",
        cut=cut,
    )
    rows = import_files(format, names, options)
    if written is not None:
        from sim.measurements.sources import write_sources

        table.write(rows, written)
        write_sources(options.sources, written)  # the samples `plan_experiment` reads again
    frame = table.frame(rows)
    frame.attrs["sources"] = list(options.sources)  # the same record, for the frame itself
    return frame


def _table_frame(table: Any, parameter: str = "table") -> pd.DataFrame:
    import pandas as pd

    if isinstance(table, pd.DataFrame):
        return table
    if isinstance(table, (str, Path)):
        return read_measurements(table)
    raise ArgumentError(
        parameter,
        f"expected a measurement table (a DataFrame) or its file's path, not {type(table).__name__}",
    )


def write_measurements(table: pd.DataFrame, path: str | Path) -> None:
    """Write a measurement table as `tiersim import` does (.csv or .parquet by the suffix)."""
    import pandas as pd

    from sim.measurements.table import write

    if not isinstance(table, pd.DataFrame):
        raise ArgumentError("table", f"expected a DataFrame, not {type(table).__name__}")
    write(table.to_dict("records"), arguments.path(path, "path", "table file"))


def read_measurements(path: str | Path) -> pd.DataFrame:
    """A measurement table written by `tiersim import` or `import_measurements`."""
    from sim.measurements.table import read

    return read(arguments.path(path, "path", "table file"))


def estimate(
    table: pd.DataFrame | str | Path,
    *,
    host: str | None = None,
    background: bool = False,
    level: float = 0.95,
) -> pd.DataFrame:
    """Service demands of a measurement table (`tiersim estimate`; a frame or a table file) by
    the utilisation law: one row per host and class with `demand`, `std_error`, `ci_low`,
    `ci_high` (seconds of the whole host per request: times its cores for CPU-seconds), `unit`,
    `at_bound`; `background=True` adds the host's own load as the class "(background)".
    `attrs["warnings"]` names classes the windows cannot tell apart."""
    from sim.measurements.estimate import estimate as estimate_demands

    options: dict[str, Any] = {
        "host": arguments.optional_text(host, "host"),
        "background": arguments.flag(background, "background"),
        "level": arguments.number(level, "level", above=0.0, below=1.0),
        "source": str(table) if isinstance(table, (str, Path)) else "<table>",
    }
    found = estimate_demands(_table_frame(table), **options)
    return demands_frame(found)


def operational_laws(table: pd.DataFrame | str | Path, warmup_s: float = 0.0) -> pd.DataFrame:
    """Each run's operational laws (utilisation, Little, response time: the think time it
    implies), one row per run, with `failed` and `share.failed` (failed / all the requests
    that ended) beside the response time, which is of the answered requests only."""
    import pandas as pd

    from sim.measurements.laws import run_laws
    from sim.present.failures import FAILED_SHARE

    start = arguments.number(warmup_s, "warmup_s", at_least=0.0, unit=" [s]")
    frame = _table_frame(table)
    laws = pd.DataFrame([law.as_dict() for law in run_laws(frame, start)])
    # one name from `tiersim run` to this frame (`estimate --json` keeps `failed_share`)
    return laws.rename(columns={"failed_share": FAILED_SHARE})


def plan_experiment(
    table: pd.DataFrame | str | Path,
    fit: Sequence[str],
    folder: str | Path,
    *,
    model: str | Path | None = None,
    cores: int | Sequence[int] | None = None,
    warmup_s: float = 0.0,
    duration_s: float | None = None,
    predict: int | Sequence[int] = (),
    threads: int | Sequence[int] = (),
    think: str | None = None,
    shape: str | Path | ShapeFit | None = None,
    database: str | Path | None = None,
    jdbc_pool: int | Literal["none"] | None = None,
    context: str | Path | None = None,
    tomcat: str | Path | None = None,
    tomcat_version: str = "10.1",
    jmx: str | Path | None = None,
    jmx_group: str | None = None,
    tiers: str | Path | None = None,
) -> dict:
    """`tiersim plan`: write an experiment folder for a measurement table -- a frame (written
    into the folder as its `measured.csv`) or its file -- with the template model or `model`,
    the runs in `fit` to fit to, the search placed by the operational laws.
    `cores`: the host's core counts to choose among; `predict`: user counts to predict that no
    run measured; `threads`: Tomcat maxThreads, set or chosen among; `think`: the load
    generator's timer as a model-file distribution (e.g. '{dist="uniform", low=0.4,
    high=0.6}'); `shape`: a light level's JTL (its samples after `warmup_s`) or a fitted
    `sim.measurements.shape` result; without it, the lightest fitted run's file as the import
    recorded it beside the table (or RUN.jtl beside it), and the returned `shape` says which,
    or why none (then the p95 is not fitted).
    The cluster on one shared database, as `tiersim plan`'s options: `database`, the database
    evidence table (`import_database(..., output=...)`; the template becomes
    models/planner-apache-tomcat-database.toml); `jdbc_pool`, the node's JDBC pool (context.xml
    `Resource` `maxTotal`, "none": no limit) or `context`, the context.xml that declares it;
    `tomcat`, the node's server.xml (its request Connector's maxThreads, acceptCount and
    maxConnections, Tomcat `tomcat_version`'s defaults where it is silent) instead of `threads`;
    `jmx`, the JMeter test plan whose timers are the think time (its thread group `jmx_group`)
    instead of `think`.  `tiers`: a traced run's per-tier table (`import_measurements("otel",
    ...)` writes NAME.tiers.csv beside NAME.csv; `tiersim plan --tiers`), else the one beside
    the table, if any: the lightest fitted run's time per tier places the demands.  Returns
    what was estimated, with where each value read from these files comes from (`threads`,
    `jdbc_pool`, `test_plan`, `tiers`)."""
    import pandas as pd

    from sim.studies.database_plan import TEMPLATE as DATABASE_TEMPLATE
    from sim.studies.planner import scaffold
    from sim.studies.planner_inputs import (
        PlanOptionError,
        jdbc_pool_input,
        node_input,
        readable,
        think_input,
    )

    if not isinstance(table, pd.DataFrame):
        arguments.path(table, "table", "measurement table")
    runs = list(arguments.strings(fit, "fit", "users2"))
    out = arguments.path(folder, "folder", "folder")
    options: dict[str, Any] = {
        "warmup_s": arguments.number(warmup_s, "warmup_s", at_least=0.0, unit=" [s]"),
        "duration_s": arguments.optional_number(duration_s, "duration_s", above=0.0, unit=" [s]"),
        "predict": arguments.counts(predict, "predict"),
        "threads": arguments.counts(threads, "threads"),
        "think": arguments.optional_text(think, "think"),
    }
    evidence = arguments.optional_path(database, "database", "database evidence table")
    pool_size = arguments.optional_limit(jdbc_pool, "jdbc_pool")
    context_file = arguments.optional_path(context, "context", "Tomcat context.xml")
    tomcat_file = arguments.optional_path(tomcat, "tomcat", "Tomcat server.xml")
    version = arguments.text(tomcat_version, "tomcat_version", "10.1")
    jmx_file = arguments.optional_path(jmx, "jmx", "JMeter test plan")
    group = arguments.optional_text(jmx_group, "jmx_group")
    options["tiers"] = arguments.optional_path(tiers, "tiers", "per-tier table")
    if model is not None:
        options["model"] = arguments.path(model, "model", "model file")
    elif evidence is not None:
        options["model"] = DATABASE_TEMPLATE
    if cores is not None:
        options["cores"] = arguments.counts(cores, "cores")
    if isinstance(shape, (str, Path)):
        from sim.measurements.shape import fit_shape, samples_of_file

        samples = samples_of_file(str(shape), "jtl", options["warmup_s"], None)
        options["shape"] = fit_shape(samples, source=str(shape))
    elif shape is not None:
        from sim.measurements.shape import ShapeFit

        if not isinstance(shape, ShapeFit):
            raise ArgumentError(
                "shape", f"expected a JTL's path or a ShapeFit, not {type(shape).__name__}"
            )
        options["shape"] = shape
    try:  # the stack's files, read before anything is written
        pool = jdbc_pool_input(pool_size, context_file, evidence is not None)
        node = node_input(tomcat_file, version, bool(options["threads"]))
        from_plan = think_input(jmx_file, group, options["think"] is not None, options["warmup_s"])
    except PlanOptionError as exc:
        raise ArgumentError(exc.parameter, str(exc)) from None
    if evidence is not None:
        readable(evidence)
    options.update(database=evidence, jdbc_pool=pool.size)  # a pool without it: refused there
    if node is not None:
        options.update(
            threads=(node.threads,), node_settings=node.settings, threads_source=node.said
        )
    if from_plan is not None:
        options.update(think=from_plan.spec, think_said=from_plan.said)
    if isinstance(table, pd.DataFrame):
        # the experiment reads its table from its folder: the frame is written there, once
        out.mkdir(parents=True, exist_ok=True)
        write_measurements(table, out / "measured.csv")
        source = out / "measured.csv"
        from sim.measurements.sources import write_sources

        write_sources(list(table.attrs.get("sources", [])), source)  # its files, as imported
    else:
        source = Path(table)
    found = scaffold(source, runs, out, find_shape=shape is None, **options)
    found["jdbc_pool"] = pool.said  # where the node's JDBC pool comes from (with `database`)
    found["test_plan"] = [] if from_plan is None else list(from_plan.notes)
    return found


def import_database(
    format: str,
    files: Sequence[str | Path],
    table: str | Path | None = None,
    output: str | Path | None = None,
    *,
    run: str | None = None,
    min_duration_ms: float | None = None,
) -> pd.DataFrame:
    """The database's own files of the load test's runs as the database evidence table
    (`tiersim import pg-stat|pg-log|mysql-slow|mysql-digest`; docs/measurement-table.md): one
    row per run and statement with its calls per request, time per call, lock waits and growth
    with load, also written to `output` (.csv) when given.  `format`: `pg-stat`
    (pg_stat_statements snapshots RUN.before.csv and RUN.after.csv), `pg-log` (PostgreSQL's
    stderr log or csvlog, `log_min_duration_statement`, one per run), `mysql-slow` (the slow
    query log, one per run), `mysql-digest` (performance_schema digest snapshots, as pg-stat);
    `table`: the load test's measurement table file (its runs' users and successful requests,
    for the calls per request); `run`: one run of all the log files; `min_duration_ms`: the
    log's threshold (log_min_duration_statement, long_query_time x 1000)."""
    import pandas as pd

    from sim.measurements.database.evidence import COLUMNS, write
    from sim.measurements.database.importer import FORMATS as KNOWN
    from sim.measurements.database.importer import SNAPSHOTS, DatabaseUsageError
    from sim.measurements.database.importer import import_database as import_evidence

    arguments.choice(format, "format", KNOWN)
    names = [str(f) for f in arguments.paths(files, "files", "database file")]
    if not names:
        raise ArgumentError("files", "no files given: name the database's files of the runs")
    measured = arguments.optional_path(table, "table", "measurement table")
    written = arguments.optional_path(output, "output", "evidence table")
    if written is not None and written.suffix.lower() != ".csv":
        raise ArgumentError(
            "output", f"{written}: the database evidence table is CSV; give a .csv name"
        )
    name = arguments.optional_text(run, "run")
    threshold = arguments.optional_number(
        min_duration_ms, "min_duration_ms", at_least=0.0, unit=" [ms]"
    )
    try:
        rows = import_evidence(format, names, measured, name, threshold)
    except DatabaseUsageError as exc:
        wrong = "run" if name is not None and format in SNAPSHOTS else "min_duration_ms"
        raise ArgumentError(wrong, str(exc)) from None
    if written is not None:
        write(rows, written)
    return pd.DataFrame(rows, columns=COLUMNS)
