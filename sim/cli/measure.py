"""`tiersim import` and `tiersim estimate`: load-test files to a measurement table, and
service demands from it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from sim.cli.common import err, fail
from sim.exit_codes import ExitCode

if TYPE_CHECKING:
    from sim.present.progress import Reporter


def _need_pandas() -> None:
    try:
        import pandas  # noqa: F401
    except ImportError:
        fail("this command needs pandas: pip install 'tiersim[measure]'", ExitCode.USAGE)


@click.command("import")
@click.argument(
    "format",
    metavar="FORMAT",
    type=click.Choice(["jtl", "ab", "ab-gnuplot", "access-log", "locust"]),
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
    "(JMeter: milliseconds) since the epoch; default the earliest sample's start",
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
) -> None:
    """Read load-test FILES of FORMAT into a measurement table (docs/measurement-table.md).

    FORMAT: jtl (JMeter CSV or XML), ab (ab's report), ab-gnuplot (ab -g), access-log
    (Apache, with --log-format), locust (_stats.csv or _stats_history.csv). Files may be
    gzip-compressed (.gz). Throughput and response times are the successful samples'; the
    failed are counted apart (count.timed_out, count.errors).
    """
    _need_pandas()
    from sim.measurements import table
    from sim.measurements.classes import TOTAL, ClassMap, ClassPatternError
    from sim.measurements.errors import MeasurementError
    from sim.measurements.formats.accesslog import LogFormatError
    from sim.measurements.importer import (
        ImportOptions,
        ImportUsageError,
        import_files,
        parse_start,
    )
    from sim.measurements.windows import Cut

    for path in (*files, *utilisation):
        _readable_file(path)
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
            )
            rows = import_files(format, list(files), options)
        table.write(rows, output)
    except (ImportUsageError, ClassPatternError, LogFormatError) as exc:
        fail(str(exc), ExitCode.USAGE)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except OSError as exc:
        fail(f"{output}: cannot write ({exc.strerror})", ExitCode.USAGE)
    runs = sorted({r["run"] for r in rows})
    classes = sorted({r["class"] for r in rows if r["class"] != TOTAL})
    windows = len({(r["run"], r["window_start_s"]) for r in rows})
    err.print(
        f"wrote {output}: {len(rows)} rows, {len(runs)} run(s), {windows} window(s), "
        f"classes {', '.join(classes)}",
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


def _readable_file(path: str) -> None:
    """Refuse, before reading, a pipe or a device (reading /dev/zero or a FIFO never ends)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        fail(f"{path}: no such file", ExitCode.MODEL)
    except OSError as exc:
        fail(f"{path}: cannot read ({exc.strerror})", ExitCode.MODEL)
    if not stat.S_ISREG(mode):
        fail(
            f"{path}: not a regular file (a pipe, device or socket, which could be read forever); "
            "save it to a file and give that file",
            ExitCode.MODEL,
        )


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
@click.option(
    "--shape-format",
    type=click.Choice(["jtl", "ab-gnuplot"]),
    default="jtl",
    show_default=True,
    help="the --shape file's format",
)
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
    _need_pandas()
    from sim.measurements import report, table
    from sim.measurements.errors import MeasurementError
    from sim.measurements.estimate import estimate, hosts_of
    from sim.measurements.laws import run_laws
    from sim.measurements.levels import cut_windows, level_responses

    _readable_file(table_file)
    if shape_file is not None:
        _readable_file(shape_file)
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
        shape = _fit_shape(shape_file, shape_format, warmup_s, until_s, shape_csv)
    if as_json:
        document = {"table": table_file, "level": level, "hosts": [r.as_dict() for r in results]}
        if laws:
            document["runs"] = [law.as_dict() for law in laws]
        document["responses"] = [r.as_dict() for r in responses]
        if shape is not None:
            document["shape"] = shape.as_dict()
        click.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    report.print_demands(results, level)
    if laws:
        report.print_laws(laws, table_file, results)
    report.print_responses(responses)
    if shape is not None:
        report.print_shape(shape, shape_csv)


def _fit_shape(path: str, format: str, warmup_s: float, until_s, csv_path):
    from sim.measurements.errors import MeasurementError
    from sim.measurements.shape import fit_shape, samples_of_file

    try:
        samples = samples_of_file(path, format, warmup_s, until_s)
        shape = fit_shape(samples, source=path)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except ValueError as exc:
        fail(f"{path}: elapsed: {exc}", ExitCode.MODEL)
    if csv_path is not None:
        import numpy as np

        try:
            np.savetxt(
                csv_path,
                np.maximum(samples - shape.best.offset_s, 0.0),
                fmt="%.9g",
                header="demand_s",
                comments="",
            )
        except OSError as exc:
            fail(f"{csv_path}: cannot write ({exc.strerror})", ExitCode.USAGE)
    return shape


@click.command("plan")
@click.argument("table_file", metavar="TABLE", type=click.Path(dir_okay=False))
@click.option(
    "--fit",
    "fit",
    multiple=True,
    required=True,
    metavar="RUN",
    help="a run to fit (repeat: two or more, one light and one heavy); the others are predicted",
)
@click.option(
    "-o",
    "--output",
    "folder",
    required=True,
    type=click.Path(file_okay=False),
    help="the experiment folder to write (the table is copied into it)",
)
@click.option(
    "--model",
    type=click.Path(dir_okay=False, exists=True),
    help="the model to fit [default: models/planner-apache-tomcat.toml]",
)
@click.option(
    "--cores",
    default="1,2,4,8",
    show_default=True,
    help="candidate core counts of the Tomcat host ([[choose]])",
)
@click.option(
    "--warmup",
    "warmup_s",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="seconds at the start of every run to leave out (a ramp-up)",
)
@click.option(
    "--duration",
    "duration_s",
    type=click.FloatRange(min=1),
    help="simulated seconds per run [default: the model's]",
)
@click.option(
    "--predict",
    "predict",
    multiple=True,
    type=click.IntRange(min=1),
    metavar="USERS",
    help="a load level no run measured, to predict with an interval (repeatable)",
)
@click.option(
    "--shape",
    "shape_file",
    type=click.Path(dir_okay=False),
    help="a light level's per-sample file (a JTL): the wait a request thread holds takes the "
    "shape of its response times (family, cv, fixed offset), and the p95 is fitted",
)
@click.option(
    "--shape-format",
    type=click.Choice(["jtl", "locust", "ab", "accesslog"]),
    default="jtl",
    show_default=True,
    help="the --shape file's format",
)
@click.option(
    "--threads",
    default=None,
    help="Tomcat maxThreads (server.xml): one value is set, several (8,16,200) are [[choose]] "
    "candidates [default: the model's]",
)
def plan_command(
    table_file,
    fit,
    folder,
    model,
    cores,
    warmup_s,
    duration_s,
    predict,
    shape_file,
    shape_format,
    threads,
) -> None:
    """An experiment folder for `tiersim calibrate` from a measurement TABLE (tiersim import):
    the template model, the runs to fit, and search ranges from the operational laws."""
    _need_pandas()
    from sim.measurements.errors import MeasurementError
    from sim.studies.experiment import ExperimentError
    from sim.studies.planner import TEMPLATE, scaffold

    _readable_file(table_file)
    try:
        counts = tuple(int(c) for c in cores.split(","))
    except ValueError:
        fail(
            f"--cores {cores!r}: expected core counts separated by commas, e.g. 1,2,4,8",
            ExitCode.USAGE,
        )
    try:
        thread_counts = () if threads is None else tuple(int(t) for t in threads.split(","))
    except ValueError:
        fail(
            f"--threads {threads!r}: expected thread counts separated by commas, e.g. 8 or "
            "8,16,200",
            ExitCode.USAGE,
        )
    shape = None
    if shape_file is not None:
        _readable_file(shape_file)
        shape = _fit_shape(shape_file, shape_format, warmup_s, None, None)
    try:
        found = scaffold(
            table_file,
            list(fit),
            folder,
            model=model or TEMPLATE,
            cores=counts,
            warmup_s=warmup_s,
            duration_s=duration_s,
            predict=tuple(predict),
            shape=shape,
            threads=thread_counts,
        )
    except (MeasurementError, ExperimentError) as exc:
        fail(str(exc), ExitCode.MODEL)
    except OSError as exc:
        fail(f"{folder}: cannot write the experiment ({exc.strerror or exc})", ExitCode.USAGE)
    click.echo(
        f"wrote {folder}/experiment.toml: fit {', '.join(fit)}; think time "
        f"{found['think_s'] * 1000:.4g} ms by the response-time law; demand at most "
        f"{found['demand_bound_s'] * 1000:.4g} ms; figures {', '.join(found['figures'])}"
    )
    if found["percentiles_pooled"]:
        click.echo(
            "percentiles are not figures: a run of several windows has no percentile of its "
            "own (import without --window, cutting with --warmup/--until, to fit the p95)"
        )
    if shape is not None:
        click.echo(
            f"the wait a request thread holds: {shape.best.name} (offset "
            f"{shape.best.offset_s * 1000:.4g} ms, cv {shape.best.cv:.3g}); {found['split']}"
        )
    if not thread_counts:
        click.echo(
            "maxThreads: the model's (Tomcat's default 200); give --threads N from your "
            "server.xml, or --threads 8,16,200 to choose among candidates"
        )
    click.echo(f"next: tiersim calibrate {folder}")


COMMANDS = [import_command, estimate_command, plan_command]
