"""`tiersim sweep`, `report` and `capacity`: many runs of a model."""

from __future__ import annotations

import math
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
    load_calibration_or_fail,
    need_sweep_extra,
    progress_reporter,
    refuse_placeholders,
    where_kept,
    writable,
)
from sim.exit_codes import ExitCode


@click.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option(
    "--results",
    "-o",
    type=click.Path(file_okay=False),
    help="results directory (default: results/<sweep file name>); rerun to resume",
)
@executor_options(what="the points")
@click.option(
    "--retry-failed", is_flag=True, help="run again the points that failed in an earlier run"
)
def sweep(sweep_file, results, run_on, retry_failed) -> None:
    """Run every point of SWEEP_FILE (base model x factors), keeping each finished point."""
    need_sweep_extra()
    from sim.studies.sweep.execute import LostPoints, failure_summary, run_sweep
    from sim.studies.sweep.progress import SweepProgress
    from sim.studies.sweep.spec import SweepError, load_sweep
    from sim.studies.sweep.store import ResultStore, StoreError

    run_on.check()
    try:
        plan = load_sweep(sweep_file)
    except SweepError as exc:
        fail(str(exc), ExitCode.MODEL)
    refuse_placeholders(
        plan.base_path, tuple(plan.spec.sweep.set), tuple(plan.factor_paths), "sweep.set"
    )
    store = ResultStore(results or Path("results") / Path(sweep_file).stem)
    try:
        with (
            run_on.executor() as executor,
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
        fail(str(exc), ExitCode.USAGE)
    except LostPoints as exc:
        fail(
            f"{exc}; rerun the same command to run them (finished points are kept in {store.root})",
            ExitCode.INTERNAL,
        )
    except KeyboardInterrupt:
        err.print(
            f"interrupted: finished points are kept in {store.root}; rerun the same command to resume"
        )
        sys.exit(ExitCode.INTERRUPTED)
    click.echo(
        f"{plan.spec.sweep.name}: {outcome.total} points, {outcome.ran} run {where}, "
        f"{outcome.skipped} already in {store.root}"
    )
    if outcome.dropped_duplicates:
        click.echo(f"  ({outcome.dropped_duplicates} duplicate point(s) of the design dropped)")
    from sim.present.failures import budget_percent
    from sim.studies.sweep.budget import points_over_budget

    over, finished = points_over_budget(store.root, plan.spec.sweep.error_budget)
    if over:
        click.echo(
            f"  {over} of {finished} points had more than {budget_percent(plan.spec.sweep.error_budget)} "
            "of their requests fail (error_budget): their latencies are of the answered requests "
            "only; `tiersim report` marks them"
        )
    if plan.spec.sweep.slo is not None:
        from sim.studies.sweep.cheapest import answer_of

        click.echo("\n".join(answer_of(plan, store.root)))
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


@click.command()
@click.argument("source", type=click.Path(exists=True))
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), required=True, help="HTML file to write"
)
def report(source, output) -> None:
    """Plotly HTML report of a sweep's RESULTS directory or a `reproduce --json` file."""
    need_sweep_extra()
    from sim.present.report import ReportError, build_report, write_html
    from sim.studies.sweep.store import read_sweep

    writable(output, "--output")
    try:
        title, figures, summary = build_report(source, read_sweep)
    except ReportError as exc:
        fail(str(exc), ExitCode.MODEL)
    try:
        write_html(output, title, figures, summary)
    except OSError as exc:
        fail(f"--output {output}: cannot write ({exc.strerror}); write elsewhere", ExitCode.USAGE)
    click.echo(f"wrote {output} ({len(figures)} figure{'s' if len(figures) != 1 else ''})")


@click.command()
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
@click.option(
    "--error-budget",
    type=click.FloatRange(0, 1, max_open=True),
    help="share of requests that may fail (refused, errors, timeouts) at a value that meets the "
    "SLO, decided on its interval's upper bound [default: the sweep file's, else 0.01]",
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
@executor_options(
    what="the search's points and the parameter draws",
    same="as many points a round unless --points-per-round",
)
@click.option(
    "--points-per-round",
    "per_round",
    type=click.IntRange(1, 4096),
    help="values the search evaluates at once (W+1-section) [default: one per worker]; the "
    "answer depends on it, not on where the points run",
)
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
@click.option(
    "--what-next",
    is_flag=True,
    help="with --calibration: the range's expected width after each of the default "
    "measurements (another level at the fitted node count, the same level at one node more, "
    "the database's lock wait at the heaviest fitted level), simulated at the same draws",
)
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    metavar="PATH=VALUE[,PATH=VALUE]:FIGURE",
    help="with --calibration: a measurement to weigh (repeatable), e.g. "
    '"clients.users=80,backends.0.count=2:response.p95" [default figures: throughput, '
    "response.mean, response.p95]",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="finished evaluations (JSON lines, each kept as it finishes; a rerun of the same "
    "command after Ctrl-C resumes from them) [default: .tiersim-cache/capacity-NAME.jsonl in "
    "the current folder, as calibrate's]",
)
@click.option("--no-cache", is_flag=True, help="keep no finished evaluations")
def capacity(
    source,
    slos,
    path,
    direction,
    overrides,
    replications,
    seed,
    tolerance,
    error_budget,
    minimum,
    maximum,
    knee_points,
    no_analytic,
    run_on,
    per_round,
    as_json,
    calibration,
    draws,
    what_next,
    candidates,
    cache,
    no_cache,
) -> None:
    """Largest load (or smallest cluster) of SOURCE (a model or sweep file) that meets an SLO;
    given a calibration, a range over its parameters' uncertainty.

    Each finished evaluation is kept (--cache): a rerun of the same command after Ctrl-C runs
    only what is left, with the same answer."""
    need_sweep_extra()
    from sim.present.failures import percent
    from sim.studies.capacity.kept import CacheError
    from sim.studies.capacity.question import (
        SearchRangeError,
        answer,
        answer_range,
        ask,
        draw_points_ahead,
    )
    from sim.studies.capacity.search import CapacityError
    from sim.studies.capacity.slo import SloError
    from sim.studies.capacity.uncertain import CapacityRange
    from sim.studies.executor import LostWork
    from sim.studies.sweep.spec import SweepError

    run_on.check()
    for option, bound in (("--min", minimum), ("--max", maximum)):
        if bound is not None and not math.isfinite(bound):
            fail(
                f"{option} {bound}: give a finite number (or leave {option} out for the "
                "default range)",
                ExitCode.USAGE,
            )
    if minimum is not None and maximum is not None and minimum >= maximum:
        fail(f"--min {minimum:g} must be below --max {maximum:g}", ExitCode.USAGE)
    if (what_next or candidates) and not calibration:
        option = "--what-next" if what_next else "--candidate"
        fail(
            f"{option} weighs measurements by the calibration's draws: give --calibration FILE",
            ExitCode.USAGE,
        )
    calibrated = None
    user_overrides = tuple(overrides)
    if calibration:
        calibrated = load_calibration_or_fail(calibration)
        overrides = (*calibrated.overrides(), *overrides)  # the user's --set values win
        err.print(calibrated.describe(), markup=False)
    try:
        question = ask(
            source,
            slos,
            path,
            direction,
            overrides,
            replications,
            seed,
            minimum,
            maximum,
            error_budget=error_budget,
        )
    except SloError as exc:
        fail(str(exc), ExitCode.USAGE)
    except (SweepError, CapacityError) as exc:
        fail(
            f"{source}: {exc}" if not str(exc).startswith(str(source)) else str(exc), ExitCode.MODEL
        )
    except SearchRangeError as exc:
        fail(str(exc), ExitCode.USAGE)
    # a from-config model's placeholders (a demand of 0 s) would be searched as values
    refuse_placeholders(question.base.source, question.base.overrides, (question.path,))
    from sim.studies.capacity.candidates import CandidateError, parse_candidate

    try:  # before any simulation
        given = [parse_candidate(text, question.base) for text in candidates]
    except CandidateError as exc:
        fail(str(exc), ExitCode.USAGE)
    kept = _kept_evaluations(source, cache, no_cache, calibrated)
    reporter = progress_reporter("capacity search", bar=False)
    evaluations = 0

    def show(evaluation) -> None:
        nonlocal evaluations
        evaluations += 1
        verdict = "meets" if evaluation.met else "does not meet"
        failed = percent(evaluation.failed_share[0])
        reporter.say(
            f"  evaluation {evaluations}: {question.path} = {evaluation.value:g}: {verdict} "
            f"({failed} of requests failed)"
        )

    spread: CapacityRange | None = None
    lost: LostWork | None = None
    interrupted = False
    with run_on.executor() as executor:
        ahead = None
        if calibrated is not None:  # drawn while the search at the fitted values runs
            ahead = draw_points_ahead(question, calibrated, draws, executor)
        try:
            with reporter:
                result = answer(
                    question,
                    executor,
                    workers=per_round or executor.slots,
                    tolerance=tolerance,
                    use_analytic=not no_analytic,
                    knee_points=knee_points,
                    on_evaluation=show,
                    kept=kept,
                )
        except CacheError as exc:
            fail(str(exc), ExitCode.USAGE)
        except CapacityError as exc:
            fail(f"{source}: {exc}", ExitCode.MODEL)
        except LostWork as exc:
            fail(f"{exc}; {where_kept(kept.path)}", ExitCode.INTERNAL)
        except KeyboardInterrupt:
            err.print(f"interrupted: {where_kept(kept.path)}", markup=False)
            sys.exit(ExitCode.INTERRUPTED)
        if calibrated is not None:
            draw_reporter = progress_reporter("parameter draws (a search each)")
            try:
                with draw_reporter:
                    spread = answer_range(
                        question,
                        result,
                        calibrated,
                        draws,
                        executor,
                        tolerance=tolerance,
                        user_overrides=user_overrides,
                        progress=draw_reporter.update,
                        ahead=ahead,
                        kept=kept,
                    )
            except CacheError as exc:
                fail(str(exc), ExitCode.USAGE)
            except CapacityError as exc:
                fail(f"{source}: at a parameter draw: {exc}", ExitCode.MODEL)
            except LostWork as exc:
                lost = exc  # the answer at the fitted values is shown all the same
            except KeyboardInterrupt:
                interrupted = True
                err.print(
                    f"interrupted: the answer at the fitted values is below; {where_kept(kept.path)}",
                    markup=False,
                )
        weighed = None
        runs_kept = kept.sharing("candidate runs at draws")
        if spread is not None and calibrated is not None and (what_next or given):
            try:
                weighed = _what_next(
                    question,
                    result,
                    spread,
                    calibrated,
                    given,
                    what_next,
                    executor,
                    user_overrides,
                    runs_kept,
                )
            except CacheError as exc:
                fail(str(exc), ExitCode.USAGE)
            except KeyboardInterrupt:  # the answer and its range are shown, then exit 130
                err.print(
                    f"interrupted: the measurements were not weighed; {where_kept(kept.path)}",
                    markup=False,
                )
                interrupted = True
    if runs_kept.said() is not None:
        err.print(runs_kept.said(), markup=False)
    resumed = kept.said()
    if resumed is not None:
        err.print(resumed, markup=False)
    if as_json:
        document = result.as_dict()
        if spread is not None:
            document["calibrated_range"] = spread.as_dict()
        if weighed is not None:
            document["what_next"] = weighed.as_dict()
        echo_json(document, default=str)
    else:
        from sim.studies.capacity.view import render

        render(result, console())
        if spread is not None:
            console().print(spread.sentence(), markup=False)
        if weighed is not None:
            from sim.studies.capacity.next_measurement import render as render_next

            render_next(weighed, console())
    if lost is not None:
        fail(
            f"{lost}: the range over the calibration's draws was not finished (the answer at "
            "the fitted values is above); rerun the same command",
            ExitCode.INTERNAL,
        )
    if interrupted:
        sys.exit(ExitCode.INTERRUPTED)
    if result.best is None:
        sys.exit(ExitCode.UNSTABLE)


def _kept_evaluations(source, cache, no_cache, calibrated):
    """The finished evaluations of an earlier run of the same command, and where this run's are
    kept (`sim.studies.capacity.kept`); none with --no-cache."""
    from sim.studies.capacity.kept import (
        CacheError,
        KeptEvaluations,
        calibration_digest,
        default_cache,
    )

    path = kept_file(cache, no_cache, default_cache(source))
    try:
        return KeptEvaluations(path, calibration_digest(calibrated))
    except CacheError as exc:
        fail(str(exc), ExitCode.USAGE)


def _what_next(
    question, result, spread, calibrated, given, defaults, executor, user_overrides, kept
):
    """`--what-next` / `--candidate`: each measurement simulated at the range's draws; None
    when a worker was lost (the answer and its range are shown all the same; an interrupt is
    the caller's)."""
    from sim.studies.capacity.next_measurement import weigh
    from sim.studies.capacity.search import CapacityError
    from sim.studies.executor import LostWork

    reporter = progress_reporter("candidate measurements (a run at each draw)")
    try:
        with reporter:
            return weigh(
                question,
                result,
                spread,
                calibrated,
                given,
                defaults,
                executor,
                user_overrides,
                reporter.update,
                kept,
            )
    except CapacityError as exc:
        err.print(f"what next: {exc}", markup=False)
    except LostWork as exc:
        err.print(f"{exc}: the measurements were not weighed; rerun the same command")
    return None


COMMANDS = [sweep, report, capacity]
