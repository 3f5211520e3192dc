"""`tiersim reproduce` and `tiersim calibrate`: an experiment's table simulated, its parameters
fitted."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sim.cli.common import (
    console,
    echo_json,
    err,
    executor_options,
    fail,
    kept_file,
    progress_reporter,
    where_kept,
    writable,
)
from sim.exit_codes import ExitCode
from sim.present.json_text import json_text, unknown_note


@click.command()
@click.argument("experiment")
@click.option("--replications", "-r", type=click.IntRange(1, 10_000), help="replications per row")
@executor_options(what="the rows' runs")
@click.option(
    "--cross-validate",
    is_flag=True,
    help="leave each published figure out, fit on the others, predict it with its 90 % "
    "prediction interval (the experiment's calibration, from its cache, is the starting point)",
)
@click.option(
    "--exact",
    is_flag=True,
    help="with --cross-validate: refit every fold (a whole calibration per figure, minutes "
    "each, started from the fold's one-step estimate) instead of one linearised step",
)
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows")
def reproduce(experiment, replications, run_on, cross_validate, exact, as_json) -> None:
    """Run an experiment's published table (experiments/EXPERIMENT) and compare."""
    from sim.studies.executor import LostWork
    from sim.studies.experiment import ExperimentError
    from sim.studies.reproduce import render
    from sim.studies.reproduce import reproduce as run_experiment

    run_on.check()
    if exact and not cross_validate:
        fail("--exact refits the folds of --cross-validate: add --cross-validate", ExitCode.USAGE)
    try:
        if cross_validate:
            from sim.studies.calibration.fit import default_cache
            from sim.studies.crossval import cross_validate as leave_one_out
            from sim.studies.crossval import exact_cross_validate
            from sim.studies.crossval import render as render_cv
            from sim.studies.records import read_experiment

            read = read_experiment(experiment)  # once, for the calibration and the folds
            with run_on.executor() as executor, progress_reporter("rows") as progress:
                run = dict(
                    replications=replications,
                    cache=default_cache(read.folder, read.spec),
                    progress=evaluations_to(progress),  # the fit: minutes without a row
                    row_progress=progress.update,
                    executor=executor,
                )
                result = (
                    exact_cross_validate(read, fold_progress=progress.milestone, **run)
                    if exact
                    else leave_one_out(read, **run)
                )
            if as_json:
                scored = [row.as_dict() for row in result.rows]
                echo_json(scored)
            else:
                render_cv(result, console())
            return
        with run_on.executor() as executor, progress_reporter("rows") as progress:
            rows = run_experiment(
                experiment, replications=replications, progress=progress.update, map_=executor.map
            )
    except ExperimentError as exc:
        fail(str(exc), ExitCode.MODEL)
    except LostWork as exc:
        fail(f"{exc}; rerun the same command", ExitCode.INTERNAL)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
    if as_json:
        echo_json([row.as_dict() for row in rows])
    else:
        render(rows, console())


@click.command()
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
@executor_options(what="an evaluation's rows and the [[choose]] candidates")
@click.option(
    "--draws",
    type=click.IntRange(0, 4096),
    default=None,
    help="prediction intervals from this many parameter draws (Sobol, from the fit's "
    "covariance), each simulated with its own seeds, as `run --calibration` makes them; 0: "
    "linear (Gauss-Newton) intervals [default: 16 on an imported table, 0 on a published seed]",
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
    run_on,
    draws,
    draw_replications,
    no_uncertainty,
    as_json,
    save,
) -> None:
    """Fit EXPERIMENT's [[calibrate]] parameters to its [[fitted]] figures, then predict the rest.

    EXPERIMENT is a bundled name (experiments/NAME) or a folder with an experiment.toml that maps
    your own measurements (a CSV) onto a model file."""
    from sim.studies.calibration.fit import calibrate as fit
    from sim.studies.calibration.fit import default_cache
    from sim.studies.calibration.view import render
    from sim.studies.executor import LostWork
    from sim.studies.experiment import ExperimentError
    from sim.studies.records import read_experiment

    reporter = progress_reporter("rows")

    run_on.check()
    if replications == 1:
        # One replication has no interval: the [[choose]] candidates are weighed, and the rows'
        # and the predictions' intervals built, from the simulated figures' own noise.
        fail(
            "calibrate -r 1: one replication gives a simulated figure no interval, and the fit "
            "weighs [[choose]] candidates and builds the rows' intervals from it; give -r 2 or "
            "more",
            ExitCode.USAGE,
        )
    if save:
        writable(save, "--save")
    path = None
    try:
        # the experiment's files read once, here: every step of the calibration is given it
        read = read_experiment(experiment)
        path = kept_file(cache, no_cache, default_cache(read.folder, read.spec))
        from sim.studies.choose import calibrate_choosing

        with run_on.executor() as executor, reporter:
            result, choices = calibrate_choosing(
                read,
                fit,
                progress_for=lambda candidate: evaluations_to(reporter, candidate),
                replications=replications,
                cache=path,
                max_evaluations=max_evaluations,
                row_progress=reporter.update,
                executor=executor,
                analyse=not no_uncertainty,
                draws=draws,
                draw_replications=draw_replications,
            )
    except ExperimentError as exc:
        fail(str(exc), ExitCode.MODEL)
    except (LostWork, KeyboardInterrupt) as exc:
        kept = where_kept(path)
        if isinstance(exc, LostWork):
            fail(f"{exc}; {kept}", ExitCode.INTERNAL)
        err.print(f"interrupted: {kept}", markup=False)
        sys.exit(ExitCode.INTERRUPTED)
    # [[choose]]'s candidates go with the fit: the chosen one's settings are part of it
    document, unknown = json_text(result.as_dict() | ({"choices": choices} if choices else {}))
    note = unknown_note(unknown, "no interval or score (a run of one replication)")
    if note is not None and (as_json or save):
        err.print(f"note: {note}", markup=False)
    if as_json:
        click.echo(document)
    else:
        if choices:  # [[choose]]: one calibration per candidate, the best one shown below
            from sim.studies.choose import render as render_choices

            render_choices(choices, console())
        chosen = next((tuple(c["set"]) for c in choices if c["chosen"]), ())
        render(result, console(), chosen)
    if save:
        try:
            Path(save).write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            fail(f"--save {save}: cannot write ({exc.strerror}); write elsewhere", ExitCode.USAGE)
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


def evaluations_to(reporter, candidate: tuple[str, ...] = ()):
    """The fit's progress callback: each evaluation of the objective said on `reporter`, with
    the [[choose]] candidate being fitted (they may be fitted side by side)."""
    named = " ".join(candidate)

    def show(count: int, cost: float, values) -> None:
        shown = ", ".join(f"{v:.5g}" for v in values)
        reporter.say(
            f"{named + ': ' if named else ''}evaluation {count}: sum of squared "
            f"relative errors {cost:.3g} at ({shown})"
        )

    return show


COMMANDS = [reproduce, calibrate]
