"""`tiersim`: run, validate, document and solve model files.

Exit codes (stable, documented in the README):
  0 success;  2 bad command-line usage;  3 invalid model file or override;
  4 the model cannot be simulated as given (unstable: offered load beyond capacity);
  5 a finite workload did not finish within run.max_duration_s;  130 interrupted (Ctrl-C);
  1 an internal error (a bug: please report it with the model file).
`tiersim sweep` exits with the code of its failed points (1 if any was a bug, else the lowest
of 3/4/5 among them; 2 for a results directory of another sweep); `tiersim capacity` with 4
when no value in range meets the SLO.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import math
import os
import sys
from pathlib import Path
from typing import NoReturn, cast

import click
from rich.console import Console

from sim.model.load import ModelError, load_model

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_MODEL, EXIT_UNSTABLE, EXIT_UNFINISHED, EXIT_INTERRUPTED = (
    0,
    1,
    2,
    3,
    4,
    5,
    130,
)

err = Console(stderr=True, highlight=False, soft_wrap=True)


class _Stdout(Console):
    """Standard output.  rich exits 1 (the code of a bug) when the reader closes the pipe;
    this one exits 0 quietly, as the commands' own output does (`_Commands`)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _silence_stdout()
        raise SystemExit(EXIT_OK)


def _console() -> Console:
    """Standard output; wide enough for the result tables when piped (rich assumes 80)."""
    console = _Stdout(highlight=False)
    return console if console.is_terminal else _Stdout(highlight=False, width=120)


def fail(message: str, code: int) -> NoReturn:
    from rich.markup import escape

    # escaped: messages quote TOML ("[[fitted]]", "[0.2, 0.1]") that rich would read as markup
    err.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True)
    sys.exit(code)


def _load_calibration(path: str):
    """`--calibration FILE` (run, capacity): a bad file ends in one line naming the field."""
    from sim.studies.uncertainty.calibrated import CalibrationFileError, load_calibration

    try:
        return load_calibration(path)
    except CalibrationFileError as exc:
        fail(str(exc), EXIT_USAGE)


def _load(path: str, overrides: tuple[str, ...]):
    try:
        return load_model(path, overrides)
    except ModelError as exc:
        fail(str(exc), EXIT_MODEL)


class _Commands(click.Group):
    """The command group; a reader that closes the pipe early (`tiersim schema | head -1`) ends
    the command quietly with exit 0: nothing went wrong that the user did not choose."""

    def invoke(self, ctx: click.Context):
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # here, where a closed pipe can still be told apart
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _silence_stdout()
            sys.exit(EXIT_OK)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file (a test's buffer): nothing will be flushed to a pipe


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tiersim")
def main() -> None:
    """Simulate clustered Java web tiers: proxies, pools, app servers, balancers, databases."""


def _refuse_unstable(model_file, model, plan=None) -> None:
    """Exit 4 naming every station the open workload overloads (for run and solve alike)."""
    from sim.model.stability import overloads

    problems = overloads(model, plan)
    if not problems:
        return
    lines = [
        f"{model_file}: unstable configuration: the offered load exceeds capacity, queues would grow forever"
    ]
    lines += [f"  {p.path}: {p.detail} (utilization {p.utilization:.3g} >= 1)" for p in problems]
    lines.append(
        "  fix: lower the arrival rate, add capacity at the named parameter, or bound a queue "
        "(proxy.listen_backlog with proxy.workers)"
    )
    fail("\n".join(lines), EXIT_UNSTABLE)


def _announce_work(model_file, model, replications, timeseries: bool) -> None:
    """Refuse a run that would take hours (exit 3), and say before a long one starts how long."""
    from sim.model.workload import check, estimate, warning

    work = estimate(model, replications=replications, timeseries=timeseries)
    refusal = check(work, model.run.max_events)
    if refusal is not None:
        fail(f"{model_file}: {refusal}", EXIT_MODEL)
    note = warning(work)
    if note is not None:
        err.print(f"warning: {model_file}: {note}", markup=False)


@main.command()
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="PATH=VALUE",
    help="override a parameter, e.g. --set backends.0.threads=30 (repeatable)",
)
@click.option("--replications", "-r", type=click.IntRange(1, 10_000), help="number of replications")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), help="root seed")
@click.option(
    "--json", "as_json", is_flag=True, help="print the JSON result document instead of tables"
)
@click.option(
    "--timeseries",
    type=click.Path(dir_okay=False, writable=True),
    help="write per-interval metrics (CSV) to this file",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "reference", "compiled"]),
    help="simulation engine (run.engine): compiled = numba queueing core, reference = SimPy "
    "calendar, auto = compiled when the model is in its core (default)",
)
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    help="a calibration (`tiersim calibrate EXPERIMENT --save FILE`): run at its fitted "
    "values and add prediction intervals over its parameters' uncertainty",
)
@click.option(
    "--draws",
    type=click.IntRange(2, 4096),
    default=16,
    show_default=True,
    help="with --calibration: parameter draws for the prediction intervals",
)
@click.option(
    "--draw-replications",
    type=click.IntRange(2, 10_000),
    default=2,
    show_default=True,
    help="with --calibration: replications per draw",
)
def run(
    model_file,
    overrides,
    replications,
    seed,
    as_json,
    timeseries,
    engine,
    calibration,
    draws,
    draw_replications,
) -> None:
    """Simulate MODEL_FILE and print results with confidence intervals (and, given a
    calibration, prediction intervals over its parameters' uncertainty)."""
    from sim.present.tables import render, result_document
    from sim.run.simulate import Status, simulate

    if engine is not None:
        overrides = (*overrides, f"run.engine={engine}")
    calibrated = None
    user_overrides = tuple(overrides)
    if calibration:
        calibrated = _load_calibration(calibration)
        # the fitted values first: the user's own --set values win
        overrides = (*calibrated.overrides(), *overrides)
    if timeseries:
        _writable(timeseries, "--timeseries")
    model = _load(model_file, overrides)
    _refuse_unstable(model_file, model)
    _announce_work(model_file, model, replications, timeseries is not None)

    sink, closer = _timeseries_writer(timeseries) if timeseries else (None, None)
    try:
        with _progress("replications") as progress:
            outcome = simulate(
                model,
                replications=replications,
                seed=seed,
                progress=progress.update,
                timeseries=sink,
            )
    finally:
        if closer is not None:
            closer()
    result = outcome.result
    if result is None:  # nothing to show: invalid, unstable, a bug, or Ctrl-C at once
        if outcome.status is Status.INTERRUPTED:
            err.print("interrupted")
            sys.exit(outcome.exit_code)
        fail(f"{model_file}: {outcome.message}", outcome.exit_code)
    propagation = None
    if calibrated is not None and outcome.status is Status.OK:
        from sim.studies.uncertainty.propagate import propagate

        err.print(calibrated.describe(), markup=False)

        def run_at(drawn: list[str], draw_seed: int):
            return simulate(
                _load(model_file, (*drawn, *user_overrides, f"run.seed={draw_seed}")),
                replications=draw_replications,
            )

        try:
            with _progress("parameter draws") as progress:
                propagation = propagate(
                    run_at,
                    {k: i.mean for k, i in result.summary.items()},
                    calibrated,
                    draws,
                    draw_replications,
                    result.seed,
                    progress.update,
                )
        except KeyboardInterrupt:
            err.print("interrupted: the prediction intervals were not finished")
    if as_json:
        document = result_document(result, model_file, list(overrides))
        if propagation is not None:
            document["prediction"] = propagation.as_dict()
        click.echo(json.dumps(document, indent=2, allow_nan=False))
    else:
        render(result, _console(), model_file)
        if propagation is not None:
            from sim.studies.uncertainty.propagate import render as render_prediction

            render_prediction(propagation, _console(), result.units)
    if outcome.status is Status.INTERRUPTED:
        err.print(
            f"interrupted: the {len(result.replications)} finished replication(s) are shown above"
        )
    sys.exit(outcome.exit_code)


@main.command()
@click.argument("model_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
def validate(model_files, overrides) -> None:
    """Check model files without running them."""
    from sim.model.stability import overloads
    from sim.model.workload import check, estimate, warning

    worst = EXIT_OK
    for path in model_files:
        try:
            model = load_model(path, overrides)
        except ModelError as exc:
            err.print(str(exc), markup=False)
            worst = max(worst, EXIT_MODEL)
            continue
        problems = overloads(model)
        if problems:
            for p in problems:
                err.print(f"{path}: unstable: {p.path}: {p.detail}", markup=False)
            worst = max(worst, EXIT_UNSTABLE)
            continue
        work = estimate(model)
        refusal = check(work, model.run.max_events)
        if refusal is not None:
            err.print(f"{path}: {refusal}", markup=False)
            worst = max(worst, EXIT_MODEL)
            continue
        click.echo(f"{path}: ok ({model.meta.name})")
        note = warning(work)
        if note is not None:
            err.print(f"warning: {path}: {note}", markup=False)
    sys.exit(worst)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print the JSON Schema instead of the table")
def schema(as_json) -> None:
    """Document every model parameter: path, type, default, unit and allowed range."""
    from sim.model.docs import distribution_rows, parameter_rows
    from sim.model.schema import Model

    if as_json:
        click.echo(json.dumps(Model.model_json_schema(), indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    console = _Stdout(highlight=False, width=max(200, Console().width))
    for title, rows in (
        (
            "Model parameters (TOML path; N = list index; a type that includes none is set to "
            'none with the string "none", in a file or in --set)',
            parameter_rows(),
        ),
        ("Time distributions (wherever a parameter's type says table)", distribution_rows()),
    ):
        table = Table(title=title, title_justify="left", header_style="bold")
        table.add_column("parameter", no_wrap=True)
        for column, width in (("type", 24), ("default", 14), ("unit", 10), ("allowed", 16)):
            table.add_column(column, overflow="fold", max_width=width)
        table.add_column("meaning", overflow="fold", min_width=40)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)


@main.command()
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def solve(model_file, overrides, as_json) -> None:
    """The analytic answer (MVA / Jackson network) where the model is product-form."""
    from sim.analytic.model_solver import NotProductForm, solve_model
    from sim.model.plan import compile_plan

    model = _load(model_file, overrides)
    plan = compile_plan(model)
    _refuse_unstable(model_file, model, plan)
    try:
        answer = solve_model(model, plan)
    except NotProductForm as exc:
        message = f"{model_file}: no exact analytic solution: {exc}"
        if as_json:
            click.echo(json.dumps({"solvable": False, "reason": str(exc)}))
        else:
            click.echo(message)
        sys.exit(EXIT_OK)
    if as_json:
        click.echo(json.dumps({"solvable": True, **answer.as_dict()}, indent=2))
    else:
        answer.render(_console())


@main.command()
@click.argument("experiment")
@click.option("--replications", "-r", type=click.IntRange(1, 10_000), help="replications per row")
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="processes for the rows' runs (the numbers are the same for any number)",
)
@click.option(
    "--cross-validate",
    is_flag=True,
    help="leave each published figure out, fit on the others, predict it with its 90 % "
    "prediction interval (the experiment's calibration, from its cache, is the starting point)",
)
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows")
def reproduce(experiment, replications, workers, cross_validate, as_json) -> None:
    """Run an experiment's published table (experiments/EXPERIMENT) and compare."""
    from sim.studies.reproduce import ExperimentError, render
    from sim.studies.reproduce import reproduce as run_experiment

    try:
        if cross_validate:
            from sim.studies.calibrate import default_cache
            from sim.studies.reproduce import load_experiment
            from sim.studies.uncertainty.crossval import cross_validate as leave_one_out
            from sim.studies.uncertainty.crossval import render as render_cv

            folder, spec, _ = load_experiment(experiment)
            with _progress("rows") as progress:
                result = leave_one_out(
                    experiment,
                    replications=replications,
                    cache=default_cache(folder, spec),
                    workers=workers,
                    row_progress=progress.update,
                )
            if as_json:
                scored = [row.as_dict() for row in result.rows]
                click.echo(json.dumps(scored, indent=2, allow_nan=False))
            else:
                render_cv(result, _console())
            return
        with _progress("rows") as progress, _pool_map(workers) as map_:
            rows = run_experiment(
                experiment, replications=replications, progress=progress.update, map_=map_
            )
    except ExperimentError as exc:
        fail(str(exc), EXIT_MODEL)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2, allow_nan=False))
    else:
        render(rows, _console())


@main.command()
@click.argument("experiment")
@click.option(
    "--replications",
    "-r",
    type=click.IntRange(1, 10_000),
    help="replications per row and evaluation",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="evaluation cache (JSON lines; a rerun resumes from "
    "it) [default: .tiersim-cache/calibrate-NAME.jsonl]",
)
@click.option("--no-cache", is_flag=True, help="keep no cache")
@click.option(
    "--max-evaluations",
    type=click.IntRange(1, 100_000),
    help="stop after this many evaluations [default: 30 x (parameters + 1)]",
)
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(1, 1024),
    default=1,
    show_default=True,
    help="processes for an evaluation's rows (the fit is the same for any number)",
)
@click.option(
    "--draws",
    type=click.IntRange(0, 4096),
    default=0,
    show_default=True,
    help="prediction intervals from this many parameter draws (Sobol, from the fit's "
    "covariance), each simulated with its own seeds; 0: linear (Gauss-Newton) intervals",
)
@click.option(
    "--draw-replications",
    type=click.IntRange(2, 10_000),
    default=2,
    show_default=True,
    help="replications per draw",
)
@click.option(
    "--no-uncertainty",
    is_flag=True,
    help="skip the parameter intervals and prediction intervals (p + 1 runs of the table fewer)",
)
@click.option(
    "--json", "as_json", is_flag=True, help="print the fitted parameters, targets and rows as JSON"
)
@click.option(
    "--save",
    type=click.Path(dir_okay=False),
    help="also write the calibration (the --json document) to this file, for "
    "`tiersim run/capacity --calibration FILE`",
)
def calibrate(
    experiment,
    replications,
    cache,
    no_cache,
    max_evaluations,
    workers,
    draws,
    draw_replications,
    no_uncertainty,
    as_json,
    save,
) -> None:
    """Fit EXPERIMENT's [[calibrate]] parameters to its [[fitted]] figures, then predict the rest.

    EXPERIMENT is a bundled name (experiments/NAME) or a folder with an experiment.toml that maps
    your own measurements (a CSV) onto a model file."""
    from sim.studies.calibrate import calibrate as fit
    from sim.studies.calibrate import default_cache, render
    from sim.studies.reproduce import ExperimentError, load_experiment

    reporter = _progress("rows")

    def show(count: int, cost: float, values) -> None:
        shown = ", ".join(f"{v:.5g}" for v in values)
        reporter.say(f"evaluation {count}: sum of squared relative errors {cost:.3g} at ({shown})")

    if save:
        _writable(save, "--save")
    try:
        folder, spec, _ = load_experiment(experiment)
        path = None if no_cache else Path(cache) if cache else default_cache(folder, spec)
        if path is not None and not cache:
            with contextlib.suppress(OSError):  # the default folder; else said just below
                path.parent.mkdir(parents=True, exist_ok=True)
        if path is not None:
            _writable(str(path), "--cache")
        from sim.studies.choose import calibrate_choosing

        with reporter:
            result, choices = calibrate_choosing(
                experiment,
                fit,
                replications=replications,
                cache=path,
                max_evaluations=max_evaluations,
                progress=show,
                row_progress=reporter.update,
                workers=workers,
                analyse=not no_uncertainty,
                draws=draws,
                draw_replications=draw_replications,
            )
    except ExperimentError as exc:
        fail(str(exc), EXIT_MODEL)
    except KeyboardInterrupt:
        err.print(
            "interrupted: finished evaluations are in the cache; rerun the same command to go on"
        )
        sys.exit(EXIT_INTERRUPTED)
    # [[choose]]'s candidates go with the fit: the chosen one's settings are part of it
    document = json.dumps(
        result.as_dict() | ({"choices": choices} if choices else {}), indent=2, allow_nan=False
    )
    if as_json:
        click.echo(document)
    else:
        if choices:  # [[choose]]: one calibration per candidate, the best one shown below
            from sim.studies.choose import render as render_choices

            render_choices(choices, _console())
        render(result, _console())
    if save:
        try:
            Path(save).write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            fail(f"--save {save}: cannot write ({exc.strerror}); write elsewhere", EXIT_USAGE)
        err.print(
            f"wrote {save}"
            + (
                " (without uncertainty: --calibration needs a calibration run without "
                "--no-uncertainty)"
                if no_uncertainty
                else ""
            ),
            markup=False,
        )


@main.command()
@click.argument("timeseries_file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--column",
    "-c",
    "columns",
    multiple=True,
    help="column to plot (repeatable; default: every *_now column)",
)
@click.option("--replication", type=int, default=0, show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), required=True, help="HTML file to write"
)
def plot(timeseries_file, columns, replication, output) -> None:
    """Plot a --timeseries CSV (Plotly HTML, self-contained)."""
    from sim.present.plots import read_timeseries, timeseries_figure

    _writable(output, "--output")
    try:
        figure = timeseries_figure(
            read_timeseries(timeseries_file, replication),
            list(columns) or None,
            title=f"{timeseries_file}, replication {replication}",
        )
    except (ValueError, KeyError) as exc:
        fail(f"{timeseries_file}: {exc}", EXIT_MODEL)
    try:
        figure.write_html(output, include_plotlyjs=True)
    except OSError as exc:
        fail(f"--output {output}: cannot write ({exc.strerror}); write elsewhere", EXIT_USAGE)
    click.echo(f"wrote {output}")


@main.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option(
    "--results",
    "-o",
    type=click.Path(file_okay=False),
    help="results directory (default: results/<sweep file name>); rerun to resume",
)
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(1, 4096),
    help="local worker processes (default: one per core)",
)
@click.option("--serial", is_flag=True, help="run the points one after another in this process")
@click.option(
    "--scheduler", metavar="ADDRESS", help="run on an existing Dask cluster, e.g. tcp://host:8786"
)
@click.option(
    "--local-cluster",
    "local_cluster",
    type=click.IntRange(1, 4096),
    metavar="N",
    help="run on a Dask LocalCluster of N worker processes",
)
@click.option(
    "--retry-failed", is_flag=True, help="run again the points that failed in an earlier run"
)
def sweep(sweep_file, results, workers, serial, scheduler, local_cluster, retry_failed) -> None:
    """Run every point of SWEEP_FILE (base model x factors), keeping each finished point."""
    _need_sweep_extra()
    from sim.studies.sweep.execute import LostPoints, failure_summary, run_sweep
    from sim.studies.sweep.progress import SweepProgress
    from sim.studies.sweep.spec import SweepError, load_sweep
    from sim.studies.sweep.store import ResultStore, StoreError

    chosen = [
        name
        for name, given in (
            ("--serial", serial),
            ("--workers", workers),
            ("--scheduler", scheduler),
            ("--local-cluster", local_cluster),
        )
        if given
    ]
    if len(chosen) > 1:
        fail(f"choose one way to run: {' and '.join(chosen)} were both given", EXIT_USAGE)
    try:
        plan = load_sweep(sweep_file)
    except SweepError as exc:
        fail(str(exc), EXIT_MODEL)
    store = ResultStore(results or Path("results") / Path(sweep_file).stem)
    try:
        with (
            _executor(serial, workers, scheduler, local_cluster) as executor,
            SweepProgress(err) as progress,
        ):
            outcome = run_sweep(
                plan,
                store,
                executor,
                retry_failed=retry_failed,
                on_point=progress.point,
                on_start=progress.start,
            )
            where = executor.describe()
    except StoreError as exc:
        fail(str(exc), EXIT_USAGE)
    except LostPoints as exc:
        fail(
            f"{exc}; rerun the same command to run them (finished points are kept in {store.root})",
            EXIT_INTERNAL,
        )
    except KeyboardInterrupt:
        err.print(
            f"interrupted: finished points are kept in {store.root}; rerun the same command to resume"
        )
        sys.exit(EXIT_INTERRUPTED)
    click.echo(
        f"{plan.spec.sweep.name}: {outcome.total} points, {outcome.ran} run {where}, "
        f"{outcome.skipped} already in {store.root}"
    )
    if outcome.dropped_duplicates:
        click.echo(f"  ({outcome.dropped_duplicates} duplicate point(s) of the design dropped)")
    missing = [
        m for m in plan.metrics if outcome.available_metrics and m not in outcome.available_metrics
    ]
    if missing:
        err.print(
            f"warning: no point produced {', '.join(missing)}; metrics of this model: "
            f"{', '.join(sorted(outcome.available_metrics))}",
            markup=False,
        )
    if outcome.failures:
        err.print("\n".join(failure_summary(outcome.failures)), markup=False)
        sys.exit(outcome.exit_code)


@main.command()
@click.argument("source", type=click.Path(exists=True))
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), required=True, help="HTML file to write"
)
def report(source, output) -> None:
    """Plotly HTML report of a sweep's RESULTS directory or a `reproduce --json` file."""
    _need_sweep_extra()
    from sim.present.report import ReportError, build_report, write_html

    _writable(output, "--output")
    try:
        title, figures, summary = build_report(source)
    except ReportError as exc:
        fail(str(exc), EXIT_MODEL)
    try:
        write_html(output, title, figures, summary)
    except OSError as exc:
        fail(f"--output {output}: cannot write ({exc.strerror}); write elsewhere", EXIT_USAGE)
    click.echo(f"wrote {output} ({len(figures)} figure{'s' if len(figures) != 1 else ''})")


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option(
    "--slo",
    "slos",
    multiple=True,
    required=True,
    metavar="METRIC<VALUE",
    help="objective, e.g. p95<1.0, mean<0.5, throughput>100 (repeatable: all must hold)",
)
@click.option(
    "--vary",
    "path",
    required=True,
    help="parameter to search, e.g. clients.users or backends.0.count",
)
@click.option(
    "--direction",
    type=click.Choice(["largest", "smallest"]),
    help="largest value meeting the SLO (default for loads) or smallest (default for capacities)",
)
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
@click.option(
    "--replications", "-r", type=click.IntRange(2, 10_000), help="replications per evaluation"
)
@click.option(
    "--seed", type=click.IntRange(0, 2**63 - 1), help="root seed (the same for every evaluation)"
)
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.02,
    show_default=True,
    help="stop when the bracket is narrower than this fraction of the value (whole numbers: at least 1)",
)
@click.option("--min", "minimum", type=float, help="smallest value to try")
@click.option("--max", "maximum", type=float, help="largest value to try")
@click.option(
    "--knee",
    "knee_points",
    type=click.IntRange(0, 100),
    default=8,
    show_default=True,
    help="evaluate the curve at this many points and report its knee (0: skip)",
)
@click.option("--no-analytic", is_flag=True, help="skip the analytic first guess")
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(1, 4096),
    help="local worker processes (default: one per core)",
)
@click.option("--serial", is_flag=True, help="evaluate in this process")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    help="a calibration (`tiersim calibrate EXPERIMENT --save FILE`): search at its fitted "
    "values, then at --draws parameter draws, and answer with a range",
)
@click.option(
    "--draws",
    type=click.IntRange(2, 1024),
    default=8,
    show_default=True,
    help="with --calibration: parameter draws (one search each)",
)
def capacity(
    source,
    slos,
    path,
    direction,
    overrides,
    replications,
    seed,
    tolerance,
    minimum,
    maximum,
    knee_points,
    no_analytic,
    workers,
    serial,
    as_json,
    calibration,
    draws,
) -> None:
    """Largest load (or smallest cluster) of SOURCE (a model or sweep file) that meets an SLO;
    given a calibration, a range over its parameters' uncertainty."""
    _need_sweep_extra()
    from sim.studies.capacity import search as cap
    from sim.studies.capacity.slo import SloError, check_metrics, model_metrics, parse_slo
    from sim.studies.sweep.execute import ProcessExecutor, SerialExecutor
    from sim.studies.sweep.spec import SweepError

    for option, bound in (("--min", minimum), ("--max", maximum)):
        if bound is not None and not math.isfinite(bound):
            fail(
                f"{option} {bound}: give a finite number (or leave {option} out for the "
                "default range)",
                EXIT_USAGE,
            )
    if minimum is not None and maximum is not None and minimum >= maximum:
        fail(f"--min {minimum:g} must be below --max {maximum:g}", EXIT_USAGE)
    calibrated = None
    user_overrides = tuple(overrides)
    if calibration:
        calibrated = _load_calibration(calibration)
        overrides = (*calibrated.overrides(), *overrides)  # the user's --set values win
        err.print(calibrated.describe(), markup=False)
    try:
        objectives = [parse_slo(text) for text in slos]
        base = cap.search_base(source, overrides, replications, seed)
        real_path, integer, start = cap.resolve_path(base, path)
        direction = direction or cap.default_direction(real_path)
        check_metrics(objectives, model_metrics(base.model()))
    except SloError as exc:
        fail(str(exc), EXIT_USAGE)
    except (SweepError, cap.CapacityError) as exc:
        fail(f"{source}: {exc}" if not str(exc).startswith(str(source)) else str(exc), EXIT_MODEL)
    low = minimum if minimum is not None else (1.0 if integer else start / 2**20)
    high = maximum if maximum is not None else start * 2**20
    if low >= high:  # one bound given, beyond the default of the other
        given = f"--min {minimum:g}" if minimum is not None else f"--max {maximum:g}"
        fail(
            f"{given} leaves no range to search for {real_path} (from {low:g} to {high:g}): "
            "give both --min and --max",
            EXIT_USAGE,
        )
    executor = SerialExecutor() if serial else ProcessExecutor(workers)
    count = 1 if serial else cast(ProcessExecutor, executor).workers

    reporter = _progress("capacity search", bar=False)
    evaluations = 0

    def show(evaluation) -> None:
        nonlocal evaluations
        evaluations += 1
        verdict = "meets" if evaluation.met else "does not meet"
        reporter.say(f"  evaluation {evaluations}: {real_path} = {evaluation.value:g}: {verdict}")

    try:
        with executor, reporter:
            result = cap.search(
                base,
                real_path,
                objectives,
                direction=direction,
                integer=integer,
                start=start,
                executor=executor,
                tolerance=tolerance,
                bounds=(low, high),
                workers=count,
                use_analytic=not no_analytic,
                knee_points=knee_points,
                on_evaluation=show,
            )
    except cap.CapacityError as exc:
        fail(f"{source}: {exc}", EXIT_MODEL)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    spread = None
    if calibrated is not None:
        import dataclasses

        from sim.studies.capacity.uncertain import capacity_range

        def search_at(drawn: tuple[str, ...], draw_seed: int):
            at = dataclasses.replace(base, overrides=(*drawn, *user_overrides), seed=draw_seed)
            return cap.search(
                at,
                real_path,
                objectives,
                direction=direction,
                integer=integer,
                start=result.best.value if result.best is not None else start,
                executor=draw_executor,
                tolerance=tolerance,
                bounds=(low, high),
                workers=count,
                use_analytic=False,  # started from the fitted answer, the nearest guess
                knee_points=0,
            )

        draw_reporter = _progress("parameter draws (a search each)")
        draw_executor = SerialExecutor() if serial else ProcessExecutor(workers)
        try:
            with draw_executor, draw_reporter:
                spread = capacity_range(
                    search_at, calibrated, draws, base.seed, result, integer, draw_reporter.update
                )
        except cap.CapacityError as exc:
            fail(f"{source}: at a parameter draw: {exc}", EXIT_MODEL)
        except KeyboardInterrupt:
            err.print("interrupted: the answer at the fitted values is below")
    if as_json:
        document = result.as_dict()
        if spread is not None:
            document["calibrated_range"] = spread.as_dict()
        click.echo(json.dumps(document, indent=2, default=str))
    else:
        from sim.studies.capacity.view import render

        render(result, _console())
        if spread is not None:
            _console().print(spread.sentence(), markup=False)
            if spread.model_error_sd > 0:
                _console().print(
                    f"  not in this range: the calibration's model error, "
                    f"{spread.model_error_sd:.1%} of every figure",
                    markup=False,
                )
    if result.best is None:
        sys.exit(EXIT_UNSTABLE)


def _need_sweep_extra() -> None:
    """Sweeps, reports and capacity searches need the `sweep` extra (pandas, pyarrow, dask)."""
    import importlib.util

    missing = [name for name in ("pandas", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        fail(f"this command needs {', '.join(missing)}: pip install 'tiersim[sweep]'", EXIT_USAGE)


def _executor(serial: bool, workers: int | None, scheduler: str | None, local_cluster: int | None):
    from sim.studies.sweep.execute import DaskExecutor, ProcessExecutor, SerialExecutor

    if serial:
        return SerialExecutor()
    if scheduler or local_cluster:
        try:
            return DaskExecutor(address=scheduler, local_workers=local_cluster)
        except ImportError:
            fail(
                "--scheduler / --local-cluster need dask.distributed: pip install 'tiersim[sweep]'",
                EXIT_USAGE,
            )
        except (OSError, TimeoutError) as exc:
            fail(f"--scheduler {scheduler}: cannot connect ({exc})", EXIT_USAGE)
    return ProcessExecutor(workers)


def _writable(path: str, option: str) -> None:
    """Exit 2 before any work when an output file cannot be written (a missing folder)."""
    from sim.files import FileProblem, check_output

    try:
        check_output(path, option)
    except FileProblem as exc:
        fail(str(exc), EXIT_USAGE)


def _timeseries_writer(path: str):
    # stays open for the whole run: the sink writes each sample as it comes
    try:
        handle = open(Path(path), "w", newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        fail(f"--timeseries {path}: cannot write ({exc.strerror}); write elsewhere", EXIT_USAGE)
    state: dict = {"writer": None, "columns": None}

    def sink(replication: int, time: float, metrics: dict[str, float]) -> None:
        if state["writer"] is None:
            state["columns"] = ["replication", "time", *sorted(metrics)]
            state["writer"] = writer = csv.writer(handle)
            writer.writerow(state["columns"])
        row = {"replication": replication, "time": time, **metrics}
        state["writer"].writerow([_cell(row.get(c)) for c in state["columns"]])

    return sink, handle.close


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else f"{value:.9g}"
    return str(value)


@contextlib.contextmanager
def _pool_map(workers: int):
    """The studies' executor's ordered map: serial, or a pool of `workers` processes."""
    from sim.studies.executor import ProcessExecutor, SerialExecutor

    with SerialExecutor() if workers <= 1 else ProcessExecutor(workers) as executor:
        yield executor.map


def _progress(label: str, bar: bool = True):
    """Progress on stderr: a live bar on a terminal, rate-limited plain lines elsewhere (a CI
    log, nohup, a notebook), nothing for a command of a few seconds."""
    from sim.present.progress import Reporter

    return Reporter(err, label, bar=bar)


# Measurement files: `tiersim import` and `tiersim estimate` (sim/cli/measure.py).
from sim.cli.measure import estimate_command, import_command, plan_command  # noqa: E402

main.add_command(import_command)
main.add_command(estimate_command)
main.add_command(plan_command)


def entry() -> None:
    """Console-script entry: an unexpected exception is reported in one line, not a traceback
    (set TIERSIM_DEBUG=1 to see it)."""
    import os

    try:
        main(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as exc:
        if os.environ.get("TIERSIM_DEBUG"):
            raise
        err.print(
            f"[bold red]internal error:[/bold red] {type(exc).__name__}: {exc}\n"
            "this is a bug in tiersim; rerun with TIERSIM_DEBUG=1 and report the traceback with the model file"
        )
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    entry()

from sim.cli.configs import export_group, from_config_command  # noqa: E402

main.add_command(from_config_command)
main.add_command(export_group)
