"""`tiersim import` and `tiersim estimate`: load-test files to a measurement table, and
service demands from it."""

from __future__ import annotations

import json
import math

import click

from sim.cli.common import err, fail
from sim.exit_codes import ExitCode


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
def import_command(
    format, files, output, window_s, class_by, patterns, run_name, utilisation, log_format, encoding
) -> None:
    """Read load-test FILES of FORMAT into a measurement table (docs/measurement-table.md).

    FORMAT: jtl (JMeter CSV or XML), ab (ab's report), ab-gnuplot (ab -g), access-log
    (Apache, with --log-format), locust (_stats.csv or _stats_history.csv).
    """
    _need_pandas()
    from sim.measurements import table
    from sim.measurements.classes import TOTAL, ClassMap, ClassPatternError
    from sim.measurements.errors import MeasurementError
    from sim.measurements.formats.accesslog import LogFormatError
    from sim.measurements.importer import ImportOptions, ImportUsageError, import_files

    for path in (*files, *utilisation):
        _readable_file(path)
    try:
        table.table_format(output)
        options = ImportOptions(
            window_s=window_s,
            classes=ClassMap.parse(class_by, patterns),
            run=run_name,
            utilisation=list(utilisation),
            log_format=log_format,
            encoding=encoding,
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


def _cell(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4g}"


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
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def estimate_command(table_file, host, background, level, as_json) -> None:
    """Service demands per host and class from a measurement TABLE: D = U/X for one class,
    non-negative least squares of U on the classes' throughputs for several."""
    _need_pandas()
    from sim.measurements import table
    from sim.measurements.errors import MeasurementError
    from sim.measurements.estimate import estimate

    _readable_file(table_file)
    from sim.measurements.estimate import hosts_of
    from sim.measurements.laws import run_laws

    try:
        measured = table.read(table_file)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    laws = run_laws(measured)
    if not hosts_of(measured) and laws and host is None:
        # no utilisation recorded: the response-time law still gives each run's think time
        _print_laws(laws, table_file, as_json, level, [])
        return
    try:
        results = estimate(
            measured,
            host=host,
            background=background,
            level=level,
            source=table_file,
        )
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except ValueError as exc:
        fail(f"{table_file}: {exc}", ExitCode.MODEL)
    for result in results:
        for warning in result.warnings:
            err.print(f"warning: {result.host}: {warning}", markup=False)
    if laws:
        _print_laws(laws, table_file, as_json, level, results)
        return
    if as_json:
        document = {"table": table_file, "level": level, "hosts": [r.as_dict() for r in results]}
        click.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    _print_demands(results, level)


def _print_demands(results, level: float) -> None:
    for result in results:
        click.echo(
            f"{result.host}: {result.method}; {result.windows} window(s), residual sd "
            f"{_cell(result.residual_std)}, condition number {_cell(result.condition_number)}"
        )
        click.echo(
            f"  {'class':<20} {'demand [s]':>11} {'std error':>11} "
            f"{f'{level:.0%} low':>11} {f'{level:.0%} high':>11}"
        )
        for demand in result.demands:
            flag = "  (at 0: bound)" if demand.at_bound else ""
            click.echo(
                f"  {demand.name:<20} {_cell(demand.demand_s):>11} {_cell(demand.std_error_s):>11} "
                f"{_cell(demand.low_s):>11} {_cell(demand.high_s):>11}{flag}"
            )


def _print_laws(laws, table_file: str, as_json: bool, level: float, results) -> None:
    """The demands (if any), then each run's users, throughput, response time and the think
    time the response-time law gives, Z = N/X - R."""
    if as_json:
        document = {
            "table": table_file,
            "level": level,
            "hosts": [r.as_dict() for r in results],
            "runs": [law.as_dict() for law in laws],
        }
        click.echo(json.dumps(document, indent=2, allow_nan=False))
        return
    _print_demands(results, level)
    if not results:
        click.echo(
            f"{table_file}: no <host>.cpu.utilization column (import with --utilisation FILE for "
            "the utilisation law); the lowest load's response time bounds the demand from above"
        )
    click.echo("response-time law per run (class total): think time Z = N/X - R")
    click.echo(
        f"  {'run':<20} {'users N':>8} {'X [1/s]':>10} {'R [s]':>10} {'Z [s]':>10} {'requests':>9}"
    )
    for law in laws:
        click.echo(
            f"  {law.run:<20} {_cell(law.users):>8} {_cell(law.throughput):>10} "
            f"{_cell(law.response_mean_s):>10} {_cell(law.think_s):>10} {law.completed:>9}"
        )


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
def plan_command(table_file, fit, folder, model, cores, warmup_s, duration_s, predict) -> None:
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
        found = scaffold(
            table_file,
            list(fit),
            folder,
            model=model or TEMPLATE,
            cores=counts,
            warmup_s=warmup_s,
            duration_s=duration_s,
            predict=tuple(predict),
        )
    except (MeasurementError, ExperimentError) as exc:
        fail(str(exc), ExitCode.MODEL)
    except OSError as exc:
        fail(f"{folder}: cannot write the experiment ({exc.strerror or exc})", ExitCode.USAGE)
    click.echo(
        f"wrote {folder}/experiment.toml: fit {', '.join(fit)}; think time "
        f"{found['think_s'] * 1000:.4g} ms by the response-time law; demand at most "
        f"{found['demand_bound_s'] * 1000:.4g} ms; next: tiersim calibrate {folder}"
    )


COMMANDS = [import_command, estimate_command, plan_command]
