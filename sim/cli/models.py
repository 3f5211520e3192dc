"""`tiersim run`, `validate`, `schema`, `solve` and `plot`: one model file at a time."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from sim.cli.common import (
    Stdout,
    announce_work,
    console,
    echo_json,
    err,
    executor_options,
    fail,
    load_calibration_or_fail,
    load_measured_level_or_fail,
    load_or_fail,
    progress_reporter,
    refuse_unstable,
    timeseries_writer,
    writable,
)
from sim.exit_codes import ExitCode

if TYPE_CHECKING:
    from sim.model.schema import Model
    from sim.present.progress import Reporter


@click.command()
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
@click.option(
    "--measured",
    type=click.Path(dir_okay=False),
    help="with --calibration: the measurement table (`tiersim import`) of the level this run "
    "is to be compared with; its figures' intervals then hold that measurement's own noise "
    "(its window, its count of requests): intervals of a measurement, not of the mean figure",
)
@click.option(
    "--measured-run",
    metavar="RUN",
    help="with --measured: the table's run (level, imported as one window) to compare with; "
    "needed when the table holds several",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="finished replications (JSON lines, each kept as it finishes; a rerun of the same "
    "command after Ctrl-C replays them and runs the rest) [default: .tiersim-cache/"
    "run-NAME-KEY.jsonl in the current folder, removed once the run has finished]",
)
@click.option("--no-cache", is_flag=True, help="keep no finished replications")
@executor_options(what="the --calibration draws")
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
    measured,
    measured_run,
    cache,
    no_cache,
    run_on,
) -> None:
    """Simulate MODEL_FILE and print results with confidence intervals (and, given a
    calibration, prediction intervals over its parameters' uncertainty: of the stack's mean
    figures, or with --measured of a measurement of them).

    Each finished replication is kept (--cache): a rerun of the same command after Ctrl-C
    runs only the rest, with the same figures."""
    from sim.model.load import ModelError
    from sim.present.tables import render, result_document
    from sim.run.simulate import Status, simulate

    run_on.check()
    if run_on.given() and not calibration:
        fail(
            f"{run_on.given()[0]} places the --calibration draws: give --calibration FILE, or "
            "leave it out (a run's replications run here)",
            ExitCode.USAGE,
        )
    if (measured or measured_run) and not calibration:
        fail(
            "--measured widens the --calibration prediction intervals by the measured level's "
            "own noise: give --calibration FILE, or leave --measured out",
            ExitCode.USAGE,
        )
    if measured_run and not measured:
        fail(
            "--measured-run names a run of the --measured table: give --measured TABLE",
            ExitCode.USAGE,
        )
    level = load_measured_level_or_fail(measured, measured_run) if measured else None
    if engine is not None:
        overrides = (*overrides, f"run.engine={engine}")
    calibrated = None
    user_overrides = tuple(overrides)
    if calibration:
        calibrated = load_calibration_or_fail(calibration)
        # the fitted values first: the user's own --set values win
        overrides = (*calibrated.overrides(), *overrides)
    if timeseries:
        writable(timeseries, "--timeseries")
    model = load_or_fail(model_file, overrides)
    refuse_unstable(model_file, model)
    kept, default = kept_replications(
        model_file, model, cache, no_cache, timeseries, (seed, replications, calibration, draws)
    )
    announce_work(model_file, model, replications, timeseries is not None)

    sink, closer = timeseries_writer(timeseries) if timeseries else (None, None)
    try:
        with progress_reporter("replications", fields=("simulated",)) as reporter:
            progress = ReplicationProgress(reporter, model, replications)
            outcome = simulate(
                model,
                replications=replications,
                seed=seed,
                progress=progress.replications,
                timeseries=sink,
                simulated=progress.simulated,
                kept=kept,
            )
    finally:
        if closer is not None:
            closer()
    if kept.said() is not None:
        err.print(kept.said(), markup=False)
    result = outcome.result
    if result is None:  # nothing to show: invalid, unstable, a bug, or Ctrl-C at once
        if outcome.status is Status.INTERRUPTED:
            err.print(interrupted_run(kept, 0), markup=False)
            sys.exit(outcome.exit_code)
        if default is not None:  # a failure a rerun meets again: nothing to resume
            default.unlink(missing_ok=True)
        fail(f"{model_file}: {outcome.message}", outcome.exit_code)
    propagation = lost = None
    interrupted = outcome.status is Status.INTERRUPTED
    if calibrated is not None and outcome.status is Status.OK:
        from sim.studies.executor import LostWork
        from sim.studies.predict import draws_at

        err.print(calibrated.describe(), markup=False)
        draws_kept = kept.sharing("parameter draws")
        try:
            with run_on.executor() as executor, progress_reporter("parameter draws") as progress:
                propagation = draws_at(
                    model_file,
                    calibrated,
                    outcome,
                    user_overrides,
                    draws,
                    draw_replications,
                    progress.update,
                    executor.map,
                    level,
                    draws_kept,
                )
        except ModelError as exc:
            fail(str(exc), ExitCode.MODEL)
        except LostWork as exc:
            lost = (
                f"{exc}: the prediction intervals were not finished (the run at the fitted "
                "values is shown); rerun the same command"
            )
        except KeyboardInterrupt:
            said = "interrupted: the prediction intervals were not finished"
            if draws_kept.path is not None and draws_kept.total:
                said += (
                    f"; {draws_kept.total} finished draw(s) are kept in {draws_kept.path}: "
                    "rerun the same command to go on"
                )
            err.print(said, markup=False)
            interrupted = True
        if draws_kept.said() is not None:
            err.print(draws_kept.said(), markup=False)
    if as_json:
        document = result_document(result, model_file, list(overrides))
        if propagation is not None:
            document["prediction"] = propagation.as_dict()
        echo_json(document)
    else:
        render(result, console(), model_file)
        if propagation is not None:
            from sim.studies.calibration.propagate import render as render_prediction

            render_prediction(propagation, console(), result.units)
    if outcome.status is Status.INTERRUPTED:
        err.print(interrupted_run(kept, len(result.replications)), markup=False)
    if lost is not None:
        fail(lost, ExitCode.INTERNAL)
    if default is not None and not interrupted:
        default.unlink(missing_ok=True)  # the run is whole: nothing is left to resume
    sys.exit(ExitCode.INTERRUPTED if interrupted else outcome.exit_code)


def kept_replications(model_file, model, cache, no_cache, timeseries, inputs):
    """Where the run keeps its finished replications (`sim.studies.kept_replications`) and
    the ones an earlier run of the same command kept; the default file (removed once the run
    is whole), or None.  None kept with --no-cache or --timeseries (a replayed replication
    would write no samples), nor by default for a run of one replication with nothing after
    it (nothing would be left to resume); the default is skipped, with a warning, where it
    cannot be written."""
    from sim.cli.common import kept_file, resumable_file
    from sim.studies.kept import CacheError
    from sim.studies.kept_replications import KeptReplications, default_cache

    if timeseries and cache is not None:
        fail(
            "--cache replays kept replications, which write no --timeseries samples: give one",
            ExitCode.USAGE,
        )
    default = None
    _, replications, calibration, _ = inputs
    # a run of one replication and nothing after it has nothing to resume after Ctrl-C
    control = model.run
    alone = (
        (replications or control.replications) == 1
        and (replications is not None or control.precision is None)
        and not calibration
    )
    if cache is None and not no_cache and not timeseries and not alone:
        # everything the output depends on beside the code, which each line's key holds
        default = resumable_file(
            default_cache(model_file, json.dumps([model.model_dump_json(), *inputs])),
            "finished replications",
        )
    path = kept_file(cache, no_cache, None) if cache is not None else default
    try:
        return KeptReplications(path), default
    except CacheError as exc:
        fail(str(exc), ExitCode.USAGE)


def interrupted_run(kept, shown: int) -> str:
    """What an interrupted run says of its finished replications: shown, and where kept."""
    finished = kept.total if kept.path is not None else 0
    if shown and finished:
        return (
            f"interrupted: the {shown} finished replication(s) are shown above and kept in "
            f"{kept.path}; rerun the same command to go on"
        )
    if shown:
        return f"interrupted: the {shown} finished replication(s) are shown above"
    if finished:
        return (
            f"interrupted: {finished} finished replication(s) are kept in {kept.path}; rerun "
            "the same command to go on"
        )
    return "interrupted"


class ReplicationProgress:
    """`tiersim run`'s progress: the replications done, and the simulated time of the one under
    way (a long replication says it several times a second, on either engine)."""

    def __init__(self, reporter: Reporter, model: Model, replications: int | None) -> None:
        self.reporter = reporter
        control = model.run
        self.done = 0
        self.total = (
            control.precision.max_replications
            if replications is None and control.precision is not None
            else replications or control.replications
        )

    def replications(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.reporter.update(done, total, simulated="")

    def simulated(self, now_s: float, until_s: float) -> None:
        self.reporter.update(self.done, self.total, simulated=f"{now_s:,.0f} of {until_s:,.0f} s")


@click.command()
@click.argument("model_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
def validate(model_files, overrides) -> None:
    """Check model files without running them."""
    from sim.model.load import ModelError, constant_times, load_model
    from sim.model.stability import overloads
    from sim.model.workload import check, estimate, warning

    worst = ExitCode.OK
    for path in model_files:
        try:
            model = load_model(path, overrides)
        except ModelError as exc:
            err.print(str(exc), markup=False)
            worst = max(worst, ExitCode.MODEL)
            continue
        from sim.configs.placeholders import refusal as placeholder_refusal
        from sim.configs.placeholders import unfilled

        left = unfilled(path, overrides)
        if left:
            # a from-config model's marked placeholders are not the stack's values: the model
            # loads, but nothing it would answer is about the stack until they are filled
            err.print(placeholder_refusal(path, left, "tiersim validate", "--set"), markup=False)
            worst = max(worst, ExitCode.MODEL)
            continue
        problems = overloads(model)
        if problems:
            for p in problems:
                err.print(f"{path}: unstable: {p.path}: {p.detail}", markup=False)
            worst = max(worst, ExitCode.UNSTABLE)
            continue
        work = estimate(model)
        refusal = check(work, model.run.max_events)
        if refusal is not None:
            err.print(f"{path}: {refusal}", markup=False)
            worst = max(worst, ExitCode.MODEL)
            continue
        click.echo(f"{path}: ok ({model.meta.name})")
        for field, value in constant_times(model):
            err.print(
                f"note: {path}: {field} = {value:g} is a constant (a bare number is "
                f'deterministic); write {field} = {{dist = "exponential", mean = {value:g}}} '
                "for a random one",
                markup=False,
            )
        note = warning(work)
        if note is not None:
            err.print(f"warning: {path}: {note}", markup=False)
    sys.exit(worst)


@click.command()
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

    console = Stdout(highlight=False, width=max(200, Console().width))
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


@click.command()
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def solve(model_file, overrides, as_json) -> None:
    """The analytic answer (MVA / Jackson network) where the model is product-form."""
    from sim.analytic.model_solver import NotProductForm, solve_model
    from sim.model.plan import compile_plan

    model = load_or_fail(model_file, overrides)
    plan = compile_plan(model)
    refuse_unstable(model_file, model, plan)
    try:
        answer = solve_model(model, plan)
    except NotProductForm as exc:
        message = f"{model_file}: no exact analytic solution: {exc}"
        if as_json:
            echo_json({"solvable": False, "reason": str(exc)})
        else:
            click.echo(message)
        sys.exit(ExitCode.OK)
    if as_json:
        echo_json({"solvable": True, **answer.as_dict()})
    else:
        answer.render(console())


@click.command()
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
    "--autoscaled",
    "group",
    metavar="GROUP",
    help="an autoscaled group's replicas and ready nodes beside the load (instead of --column)",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), required=True, help="HTML file to write"
)
def plot(timeseries_file, columns, replication, group, output) -> None:
    """Plot a --timeseries CSV (Plotly HTML, self-contained)."""
    from sim.present.plots import read_timeseries, replicas_figure, timeseries_figure

    writable(output, "--output")
    if group and columns:
        fail("--autoscaled draws its own columns; give it or --column, not both", ExitCode.USAGE)
    # the run's name, not a path (the CSV carries no model name: its stem is the run's)
    run_name = f"{Path(timeseries_file).stem} (replication {replication})"
    try:
        series = read_timeseries(timeseries_file, replication)
        if group:
            figure = replicas_figure(series, group, title=f"{group}: nodes and load: {run_name}")
        else:
            figure = timeseries_figure(
                series,
                list(columns) or None,
                title=f"Workers, threads and connections over time: {run_name}",
            )
    except (ValueError, KeyError) as exc:
        fail(f"{timeseries_file}: {exc}", ExitCode.MODEL)
    try:
        figure.write_html(output, include_plotlyjs=True)
    except OSError as exc:
        fail(f"--output {output}: cannot write ({exc.strerror}); write elsewhere", ExitCode.USAGE)
    click.echo(f"wrote {output}")


COMMANDS = [run, validate, schema, solve, plot]
