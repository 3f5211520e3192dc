"""`tiersim plan`: an experiment folder for `tiersim calibrate` from an imported load test."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from sim.cli.common import err, fail
from sim.cli.measured_files import (
    fit_shape_of_file,
    need_pandas,
    readable_file,
    shape_format_option,
)
from sim.exit_codes import ExitCode

T = TypeVar("T")


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
    "shape of its response times (family, cv, fixed offset), and the p95 is fitted [default: "
    "the lightest fitted run's file, as the import recorded it, or RUN.jtl beside the table]",
)
@shape_format_option
@click.option(
    "--tiers",
    "tiers_file",
    type=click.Path(dir_okay=False),
    metavar="TIERS_CSV",
    help="a trace's per-tier table (tiersim import otel TRACE --run RUN -o NAME.csv writes "
    "NAME.tiers.csv): the lightest fitted run's time per tier places the demands (front: "
    "proxy.demand; the app server's own time bounds its CPU; database calls: the wait) [default: "
    "TABLE's NAME.tiers.csv beside it, if any]",
)
@click.option(
    "--think",
    default=None,
    metavar="SPEC",
    help="the test plan's timer as a model-file distribution, e.g. "
    "'{dist=\"uniform\", low=0.4, high=0.6}' for JMeter's Uniform Random Timer 400-600 ms: "
    "set instead of fitted (its shape matters past the knee)",
)
@click.option(
    "--jmx",
    "jmx_file",
    type=click.Path(dir_okay=False),
    metavar="PLAN",
    help="the JMeter test plan (.jmx) the runs were made with: the think time is its timers' "
    "(Constant, Uniform, Gaussian, Poisson Random Timer), as JMeter draws them",
)
@click.option(
    "--jmx-group",
    metavar="NAME",
    help="--jmx: the thread group that is the users (where the plan has several)",
)
@click.option(
    "--threads",
    default=None,
    help="Tomcat maxThreads (server.xml): one value is set, several (8,16,200) are [[choose]] "
    "candidates [default: --model's; with the template, powers of two from 4 below the "
    "heaviest fitted run's users and 200, as candidates]",
)
@click.option(
    "--tomcat",
    "tomcat_file",
    type=click.Path(dir_okay=False),
    metavar="SERVER_XML",
    help="the node's Tomcat server.xml: its request Connector's maxThreads (the Executor's when "
    "shared), acceptCount and maxConnections, as `from-config` reads them, instead of --threads",
)
@click.option(
    "--tomcat-version",
    default="10.1",
    show_default=True,
    help="--tomcat: the Tomcat release whose defaults fill what server.xml leaves out",
)
@click.option(
    "--database",
    "database_file",
    type=click.Path(dir_okay=False),
    metavar="EVIDENCE",
    help="the database evidence table (tiersim import pg-stat|pg-log|mysql-slow|mysql-digest ... "
    "-o database.csv): the nodes share one database whose transaction takes one lock, its time, "
    "share and lock waits from the database's statistics [template: "
    "models/planner-apache-tomcat-database.toml]",
)
@click.option(
    "--jdbc-pool",
    "jdbc_pool",
    default=None,
    metavar="N",
    help="--database: the node's JDBC pool, context.xml <Resource> maxTotal, or none (no limit) "
    "[default: --context's, else the template's 8, tomcat-dbcp's default]",
)
@click.option(
    "--context",
    "context_file",
    type=click.Path(dir_okay=False),
    metavar="CONTEXT_XML",
    help="--database: Tomcat's context.xml (or server.xml) whose DataSource <Resource> gives the "
    "node's JDBC pool (maxTotal; maxActive for DBCP 1 and the Tomcat JDBC pool)",
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
    tiers_file,
    threads,
    tomcat_file,
    tomcat_version,
    think,
    jmx_file,
    jmx_group,
    database_file,
    jdbc_pool,
    context_file,
) -> None:
    """An experiment folder for `tiersim calibrate` from a measurement TABLE (tiersim import):
    the template model, the runs to fit, and search ranges from the operational laws."""
    need_pandas()
    from sim.measurements.errors import MeasurementError
    from sim.studies.database_plan import TEMPLATE as DATABASE_TEMPLATE
    from sim.studies.experiment import ExperimentError
    from sim.studies.planner import TEMPLATE, scaffold
    from sim.studies.planner_inputs import jdbc_pool_input, node_input, think_input

    readable_file(table_file)
    if database_file is not None:
        readable_file(database_file)
    if tiers_file is not None:
        readable_file(tiers_file)
    pool = _read(jdbc_pool_input, jdbc_pool, context_file, database_file is not None)
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
    node = _read(node_input, tomcat_file, tomcat_version, threads is not None)
    if node is not None:
        thread_counts = (node.threads,)
    from_plan = _read(think_input, jmx_file, jmx_group, think is not None, warmup_s)
    think_said = None
    if from_plan is not None:
        for note in from_plan.notes:
            click.echo(note)
        think, think_said = from_plan.spec, from_plan.said
    shape = None
    if shape_file is not None:
        readable_file(shape_file)
        shape = fit_shape_of_file(shape_file, shape_format, warmup_s, None, None)
    try:
        found = scaffold(
            table_file,
            list(fit),
            folder,
            model=model or (TEMPLATE if database_file is None else DATABASE_TEMPLATE),
            cores=counts,
            warmup_s=warmup_s,
            duration_s=duration_s,
            predict=tuple(predict),
            shape=shape,
            threads=thread_counts,
            think=think,
            think_said=think_said,
            database=database_file,
            jdbc_pool=pool.size,
            find_shape=shape is None,
            threads_candidates=True,
            node_settings=() if node is None else node.settings,
            threads_source=None if node is None else node.said,
            tiers=tiers_file,
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
    if found["split"] is not None:
        wait = found["wait"]
        source = "" if shape is not None else f", {found['shape']}"
        click.echo(f"the wait a request thread holds: {wait}{source}; {found['split']}")
    elif found["shape"] is not None:
        click.echo(found["shape"])  # no sample file: the p95 is not fitted, said plainly
    if found["tiers"] is not None:
        click.echo(found["tiers"])  # the per-tier times used, or why the table beside is not
    if found["database"] is not None:
        click.echo(f"the shared database: {found['database']}")
        if pool.said is not None:
            click.echo(f"JDBC pool: {pool.said}")
    if found["threads"] is not None:
        click.echo(found["threads"])
    elif not thread_counts:
        click.echo(
            f"maxThreads: {model}'s; give --threads N from your server.xml, or --threads "
            "8,16,200 to choose among candidates"
        )
    for said in found["samples"]:  # a fitted run whose errors are assumed, not measured
        err.print(f"warning: {said}", markup=False)
    click.echo(f"next: tiersim calibrate {folder}")


def _read(read: Callable[..., T], *arguments) -> T:
    """One of the planner's inputs from the stack's files (`sim.studies.planner_inputs`), its
    refusal printed as the command's: options that cannot go together are a usage error, a file
    that cannot be read the file's own (exit 3)."""
    from sim.configs.errors import ConfigError
    from sim.files import FileProblem
    from sim.measurements.errors import MeasurementError
    from sim.studies.planner_inputs import PlanOptionError

    try:
        return read(*arguments)
    except PlanOptionError as exc:
        fail(str(exc), ExitCode.USAGE)
    except (ConfigError, FileProblem, MeasurementError) as exc:
        fail(str(exc), ExitCode.MODEL)


COMMANDS = [plan_command]
