"""`tiersim import` and `tiersim estimate`: load-test files to a measurement table, and
service demands from it."""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

import click

from sim.cli.common import err, fail, writable
from sim.cli.measured_files import (
    fit_shape_of_file,
    need_pandas,
    readable_file,
    shape_format_option,
)
from sim.exit_codes import ExitCode
from sim.measurements.format_names import DATABASE_FORMATS, FORMATS

if TYPE_CHECKING:
    from sim.present.progress import Reporter


@click.command("import")
@click.argument(
    "format",
    metavar="FORMAT",
    # load tests, then the database's evidence (a table of its own)
    type=click.Choice([*FORMATS, *DATABASE_FORMATS]),
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="the table to write: .csv or .parquet",
)
@click.option(
    "--window",
    "window_s",
    type=float,
    metavar="SECONDS",
    help="window length; default one window for the whole run",
)
@click.option(
    "--class-by",
    "class_by",
    type=click.Choice(["label", "url"]),
    default="label",
    show_default=True,
    help="what names a sample's class",
)
@click.option(
    "--class",
    "patterns",
    multiple=True,
    metavar="PATTERN=NAME",
    help="samples whose label (or URL) matches the regex PATTERN are class NAME; "
    "the first match wins, the unmatched are class 'other' (repeatable)",
)
@click.option(
    "--run",
    "run_name",
    metavar="NAME",
    help="one run of all the files (joined by time) named NAME; default a run per file",
)
@click.option(
    "--utilisation",
    "--utilization",
    "utilisation",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="host CPU: sadf -d output of sar -u, or a time,host,cpu CSV (repeatable)",
)
@click.option("--log-format", metavar="FORMAT", help="access-log: the server's LogFormat string")
@click.option("--encoding", default="utf-8", show_default=True, help="the files' text encoding")
@click.option(
    "--start",
    "start",
    metavar="TIME",
    help="the test's start, time zero: ISO 8601 with zone (2026-11-23T19:26:24Z) or seconds "
    "(JMeter: milliseconds) since the epoch; default the earliest sample's start (Gatling: "
    "its first injected event, where its report starts the run)",
)
@click.option(
    "--warmup",
    "warmup_s",
    type=float,
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="leave out the samples that complete before this second after time zero (a ramp-up)",
)
@click.option(
    "--until",
    "until_s",
    type=float,
    metavar="SECONDS",
    help="leave out the samples that complete after this second after time zero (the drain "
    "after the test's end); default the last completion",
)
@click.option(
    "--tier",
    "tier_rules",
    multiple=True,
    metavar="TIER=FIELD:REGEX",
    help="otel: spans whose FIELD (name, kind or an attribute such as service.name) matches "
    "REGEX are TIER, before the default rules (database, front, app; repeatable)",
)
@click.option(
    "--table",
    "table_file",
    type=click.Path(dir_okay=False),
    metavar="TABLE",
    help="pg-stat, pg-log, mysql-slow, mysql-digest: the load test's measurement table "
    "(its runs' users and successful requests, for the calls per request)",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="the files read (JSON lines, each file's samples kept beside it as it is read; a "
    "rerun after Ctrl-C reads only the rest) [default: .tiersim-cache/import-KEY.jsonl in the "
    "current folder, removed once the table is written]",
)
@click.option("--no-cache", is_flag=True, help="keep no file read")
@click.option(
    "--log-min-duration",
    "min_duration_ms",
    type=float,
    metavar="MS",
    help="pg-log, mysql-slow: the server's threshold (log_min_duration_statement, "
    "long_query_time x 1000); 0 means every statement is in the log",
)
def import_command(
    format,
    files,
    output,
    window_s,
    class_by,
    patterns,
    run_name,
    utilisation,
    log_format,
    encoding,
    start,
    warmup_s,
    until_s,
    tier_rules,
    table_file,
    min_duration_ms,
    cache,
    no_cache,
) -> None:
    """Read load-test FILES of FORMAT into a measurement table (docs/measurement-table.md).

    FORMAT: jtl (JMeter CSV or XML), ab (ab's report), ab-gnuplot (ab -g), access-log
    (Apache, with --log-format), locust (_stats.csv or _stats_history.csv), k6 (--out json
    or --out csv), k6-summary (--summary-export or handleSummary JSON), gatling (its
    simulation.log, text or the binary of Gatling 3.13+), gatling-stats (js/stats.json),
    otel (OTLP JSON traces; also writes the per-tier table OUTPUT.tiers.csv). Files may be
    gzip-compressed (.gz). Throughput and response times are the successful samples'; the
    failed are counted apart (count.timed_out, count.errors).

    The database's evidence, per run, into a database evidence table: pg-stat
    (pg_stat_statements snapshots RUN.before.csv and RUN.after.csv), pg-log (PostgreSQL's
    stderr log or csvlog, one per run), mysql-slow (the slow query log, one per run),
    mysql-digest (events_statements_summary_by_digest snapshots, as pg-stat); with --table.
    """
    need_pandas()
    if format in DATABASE_FORMATS:
        load_test_options = {
            "--window": window_s is not None,
            "--utilisation": bool(utilisation),
            "--log-format": log_format is not None,
            "--start": start is not None,
            "--class": bool(patterns),
            "--warmup/--until": bool(warmup_s) or until_s is not None,
            "--class-by": class_by != "label",
            # the database's files are read as UTF-8 (psql, mysql and the servers write it)
            "--encoding": encoding.lower().replace("_", "-") not in ("utf-8", "utf8"),
            "--cache/--no-cache": cache is not None or no_cache,
        }
        _import_database(
            format, files, output, table_file, run_name, min_duration_ms, load_test_options
        )
        return
    if table_file is not None or min_duration_ms is not None:
        fail(
            f"--{'table' if table_file is not None else 'log-min-duration'} is for the "
            f"database's files (pg-stat, pg-log, mysql-slow, mysql-digest), not {format}",
            ExitCode.USAGE,
        )
    from sim.measurements import table
    from sim.measurements.classes import TOTAL, ClassMap, ClassPatternError
    from sim.measurements.errors import MeasurementError
    from sim.measurements.formats.accesslog import LogFormatError
    from sim.measurements.formats.otel_tiers import TierRuleError
    from sim.measurements.importer import (
        ImportOptions,
        ImportUsageError,
        import_runs,
        parse_start,
    )
    from sim.measurements.windows import Cut
    from sim.studies.kept import CacheError

    for path in (*files, *utilisation):
        readable_file(path)
    writable(output, "-o")  # a missing folder said before the files are read
    kept, default = _kept_samples(format, files, output, cache, no_cache)
    try:
        table.table_format(output)
        cut = Cut(
            start_s=parse_start(start) if start is not None else None,
            warmup_s=warmup_s,
            until_s=until_s,
        )
        with _Steps() as progress:
            options = ImportOptions(
                window_s=window_s,
                classes=ClassMap.parse(class_by, patterns),
                run=run_name,
                utilisation=list(utilisation),
                log_format=log_format,
                encoding=encoding,
                cut=cut,
                progress=progress,
                tier_rules=list(tier_rules),
                read=kept.read,
            )
            try:
                rows, tiers = import_runs(format, list(files), options)
            finally:
                if kept.said() is not None:
                    err.print(kept.said(), markup=False)
        table.write(rows, output)
        from sim.measurements.sources import write_sources

        write_sources(options.sources, output)  # the samples `tiersim plan` fits a shape from
        if tiers:
            from sim.measurements.trace_import import tiers_path, write_tiers

            write_tiers(tiers, tiers_path(output))
    except (ImportUsageError, ClassPatternError, LogFormatError, TierRuleError) as exc:
        fail(str(exc), ExitCode.USAGE)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except OSError as exc:
        fail(f"{output}: cannot write ({exc.strerror or exc})", ExitCode.USAGE)
    except CacheError as exc:
        fail(str(exc), ExitCode.USAGE)
    except KeyboardInterrupt:
        if kept.path is None or not kept.total:
            raise  # nothing kept: "interrupted", as any command says it
        err.print(
            f"interrupted: {kept.total} file(s) read are kept in {kept.path}; rerun the same "
            "command to go on",
            markup=False,
        )
        sys.exit(ExitCode.INTERRUPTED)
    if default:
        kept.remove()  # the table is written: nothing is left to resume
    runs = sorted({r["run"] for r in rows})
    classes = sorted({r["class"] for r in rows if r["class"] != TOTAL})
    windows = len({(r["run"], r["window_start_s"]) for r in rows})
    err.print(
        f"wrote {output}: {len(rows)} rows, {len(runs)} run(s), {windows} window(s), "
        f"classes {', '.join(classes)}",
        markup=False,
    )
    for option, (_, name) in zip(patterns, options.classes.patterns):
        if name not in classes:  # a pattern that matched nothing is said, not silently empty
            err.print(
                f"warning: --class {option!r} matched no sample's {class_by} (kept by the "
                f"cut), so class {name!r} has no row; the unmatched are class 'other'",
                markup=False,
            )
    if tiers:
        from sim.measurements.trace_import import summary_lines

        for line in summary_lines(tiers, output):
            err.print(line, markup=False)


def _kept_samples(format, files, output, cache, no_cache):
    """The files an earlier run of the same import read, and where this one keeps what it
    reads (`sim.studies.kept_samples`), and whether that is the default (removed once the
    table is written); the default is skipped, with a warning, where it cannot be written."""
    from sim.cli.common import kept_file, resumable_file
    from sim.studies.kept import CacheError
    from sim.studies.kept_samples import KEPT_FORMATS, KeptSamples, default_cache

    if format not in KEPT_FORMATS:
        if cache is not None:
            fail(
                f"--cache keeps the samples of the per-sample files read "
                f"({', '.join(KEPT_FORMATS)}), not of {format} files: leave --cache out",
                ExitCode.USAGE,
            )
        return KeptSamples(None), False
    path = None
    if cache is None and not no_cache:
        path = resumable_file(
            default_cache(json.dumps([format, list(files), output])), "files read"
        )
    elif cache is not None:
        path = kept_file(cache, no_cache, None)
    try:
        return KeptSamples(path), cache is None and path is not None
    except CacheError as exc:
        fail(str(exc), ExitCode.USAGE)


def _import_database(
    format, files, output, table_file, run_name, min_duration_ms, load_test_options
):
    """`tiersim import pg-stat|pg-log|mysql-slow|mysql-digest`: the database evidence table."""
    from sim.measurements.database.importer import DatabaseUsageError, import_database
    from sim.measurements.errors import MeasurementError

    for option, given in load_test_options.items():
        if given:
            fail(
                f"{option} is for load-test files; {format} evidence is per run (snapshot the "
                "statistics, or cut the log, at the run's ends instead)",
                ExitCode.USAGE,
            )
    for path in (*files, *([table_file] if table_file else [])):
        readable_file(path)
    writable(output, "-o")
    if not output.lower().endswith(".csv"):
        fail(f"-o {output}: the database evidence table is CSV; give a .csv name", ExitCode.USAGE)
    try:
        rows = import_database(format, list(files), table_file, run_name, min_duration_ms)
        from sim.measurements.database.evidence import write

        write(rows, output)
    except DatabaseUsageError as exc:
        fail(str(exc), ExitCode.USAGE)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except OSError as exc:
        fail(f"{output}: cannot write ({exc.strerror or exc})", ExitCode.USAGE)
    runs = list(dict.fromkeys(str(r["run"]) for r in rows))
    statements = len({(r["source"], r["statement_id"]) for r in rows})
    gaps = sum(1 for r in rows if r["missing"])
    err.print(
        f"wrote {output}: {len(rows)} rows, {len(runs)} run(s), {statements} statement(s)"
        + (f"; {gaps} row(s) name missing evidence (column missing)" if gaps else ""),
        markup=False,
    )


class _Steps:
    """Progress of the steps of a long import on stderr, `progress(step, done, total)`: a bar
    on a terminal, plain lines elsewhere, once a step has taken a few seconds (a small file
    prints nothing)."""

    def __init__(self) -> None:
        self.step: str | None = None
        self.reporter: Reporter | None = None

    def __enter__(self) -> _Steps:
        return self

    def __call__(self, step: str, done: int, total: int) -> None:
        if step != self.step:
            from sim.present.progress import Reporter

            self.__exit__()
            self.step = step
            self.reporter = Reporter(err, step).__enter__()
        assert self.reporter is not None
        self.reporter.update(done, total)

    def __exit__(self, *exc) -> None:
        if self.reporter is not None:
            self.reporter.__exit__()
            self.reporter = None


@click.command("estimate")
@click.argument("table_file", metavar="TABLE", type=click.Path(dir_okay=False))
@click.option("--host", help="only this host (a <host>.cpu.utilization column)")
@click.option(
    "--background", is_flag=True, help="also fit a background utilisation U0 that no class explains"
)
@click.option(
    "--level",
    type=click.FloatRange(0.5, 0.999),
    default=0.95,
    show_default=True,
    help="confidence level of the intervals",
)
@click.option(
    "--warmup",
    "warmup_s",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="leave out the windows that start before this second of their run (and, with "
    "--shape, the samples completing before it)",
)
@click.option(
    "--until",
    "until_s",
    type=float,
    metavar="SECONDS",
    help="leave out the windows that end after this second of their run (the drain after "
    "the test; with --shape, the samples completing after it)",
)
@click.option(
    "--shape",
    "shape_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="a light load level's per-sample file: fit the demand's distribution to it",
)
@shape_format_option
@click.option(
    "--shape-csv",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="write the --shape samples less the fitted offset (column demand_s), for an "
    "empirical distribution",
)
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def estimate_command(
    table_file,
    host,
    background,
    level,
    warmup_s,
    until_s,
    shape_file,
    shape_format,
    shape_csv,
    as_json,
) -> None:
    """Service demands per host and class from a measurement TABLE: D = U/X for one class,
    non-negative least squares of U on the classes' throughputs for several; each run's
    response-time law and response times with their measurement errors; with --shape, the
    demand's distribution fitted to a light level's samples."""
    need_pandas()
    from sim.measurements import report, table
    from sim.measurements.errors import MeasurementError
    from sim.measurements.estimate import estimate, hosts_of
    from sim.measurements.laws import run_laws
    from sim.measurements.levels import cut_windows, level_responses

    readable_file(table_file)
    if shape_file is not None:
        readable_file(shape_file)
    if shape_csv is not None:
        if shape_file is None:
            fail("--shape-csv writes the --shape samples; give --shape FILE", ExitCode.USAGE)
        writable(shape_csv, "--shape-csv")  # a missing folder said before the fit
    if until_s is not None and not until_s > warmup_s:
        fail(
            f"--until {until_s:g} s is not after --warmup {warmup_s:g} s; expected --until later "
            "than --warmup, both seconds after each run's start",
            ExitCode.USAGE,
        )
    try:
        measured = table.read(table_file)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    kept = cut_windows(measured, warmup_s, until_s)
    if kept.empty:
        fail(
            f"{table_file}: window_start_s, window_end_s: --warmup {warmup_s:g} s"
            + (f" and --until {until_s:g} s" if until_s is not None else "")
            + f" leave no window (the windows span {measured['window_start_s'].min():.4g} s to "
            f"{measured['window_end_s'].max():.4g} s); expected a cut around whole windows",
            ExitCode.MODEL,
        )
    laws = run_laws(kept)
    responses = level_responses(kept)
    from sim.measurements.table import nan_to_none
    from sim.measurements.tier_evidence import failed_shares, print_tiers, read_tiers, tiers_path

    try:
        tiers = read_tiers(table_file)  # a traced run's per-tier table beside the table
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    results = []
    if hosts_of(kept) or host is not None or not laws:
        try:
            results = estimate(
                kept, host=host, background=background, level=level, source=table_file
            )
        except MeasurementError as exc:
            fail(str(exc), ExitCode.MODEL)
        except ValueError as exc:
            fail(f"{table_file}: {exc}", ExitCode.MODEL)
        for result in results:
            for warning in result.warnings:
                err.print(f"warning: {result.host}: {warning}", markup=False)
    shape = None
    if shape_file is not None:
        shape = fit_shape_of_file(shape_file, shape_format, warmup_s, until_s, shape_csv)
    if as_json:
        document = {"table": table_file, "level": level, "hosts": [r.as_dict() for r in results]}
        if laws:
            # a run whose file names no users (k6, Gatling, a trace) has no N nor Z: null
            document["runs"] = [
                {k: nan_to_none(v) if isinstance(v, float) else v for k, v in law.as_dict().items()}
                for law in laws
            ]
        document["responses"] = [r.as_dict() for r in responses]
        if shape is not None:
            document["shape"] = shape.as_dict()
        if tiers is not None:
            shares = failed_shares(measured)
            document["tiers"] = [
                {
                    **{k: nan_to_none(v) if isinstance(v, float) else v for k, v in row.items()},
                    "failed_share": nan_to_none(shares.get((row["run"], row["class"]), math.nan)),
                }
                for row in tiers
            ]
        click.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    report.print_demands(results, level)
    if laws:
        report.print_laws(laws, table_file, results)
    report.print_responses(responses, failed_explained=bool(laws))
    if tiers:
        print_tiers(tiers, tiers_path(table_file), failed_shares(measured))
    if shape is not None:
        report.print_shape(shape, shape_csv)


COMMANDS = [import_command, estimate_command]
