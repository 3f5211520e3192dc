"""`tiersim plan`: an experiment folder for `tiersim calibrate` from an imported load test."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from sim.cli.common import fail
from sim.cli.measured_files import fit_shape_of_file, need_pandas, readable_file
from sim.exit_codes import ExitCode


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
@click.option(
    "--shape-format",
    type=click.Choice(["jtl", "locust", "ab", "accesslog"]),
    default="jtl",
    show_default=True,
    help="the --shape file's format",
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

    readable_file(table_file)
    if database_file is not None:
        readable_file(database_file)
    if context_file is not None and database_file is None:
        fail(
            "--context gives the JDBC pool, the database tier's; give --database database.csv "
            "(tiersim import pg-stat ...) to plan the database",
            ExitCode.USAGE,
        )
    pool, pool_said = _jdbc_pool(jdbc_pool, context_file)
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
    node, node_said = _node_of_server(tomcat_file, tomcat_version, threads)
    if node is not None:
        thread_counts = (node.threads,)
    think_said = None
    if jmx_file is not None:
        think, think_said = _think_of_plan(jmx_file, jmx_group, think, warmup_s)
    elif jmx_group is not None:
        fail("--jmx-group names a thread group of --jmx PLAN; give the plan", ExitCode.USAGE)
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
            jdbc_pool=pool,
            find_shape=shape is None,
            threads_candidates=True,
            node_settings=() if node is None else node.settings,
            threads_source=node_said,
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
    if found["database"] is not None:
        click.echo(f"the shared database: {found['database']}")
        if pool_said is not None:
            click.echo(f"JDBC pool: {pool_said}")
        elif pool is None:
            click.echo(
                "JDBC pool: the template's 8 (tomcat-dbcp's maxTotal default); give --context "
                "context.xml, or --jdbc-pool N from its <Resource maxTotal=...>"
            )
    if found["threads"] is not None:
        click.echo(found["threads"])
    elif not thread_counts:
        click.echo(
            f"maxThreads: {model}'s; give --threads N from your server.xml, or --threads "
            "8,16,200 to choose among candidates"
        )
    click.echo(f"next: tiersim calibrate {folder}")


def _node_of_server(tomcat_file, version: str, threads):
    """The node's Connector settings from --tomcat server.xml, and where they come from."""
    if tomcat_file is None:
        return None, None
    from sim.configs.errors import ConfigError
    from sim.configs.servers import node_settings

    if threads is not None:
        fail("--threads and --tomcat both give maxThreads; give one", ExitCode.USAGE)
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        fail(f"--tomcat-version {version!r}: give MAJOR.MINOR, e.g. 10.1", ExitCode.USAGE)
    readable_file(tomcat_file)
    try:
        node = node_settings(Path(tomcat_file), (major, minor))
    except ConfigError as exc:
        fail(str(exc), ExitCode.MODEL)
    lines = [f"the node, from {tomcat_file}: " + "; ".join(node.said)]
    lines += [f"  not modelled: {line}" for line in node.not_modelled]
    return node, "\n".join(lines)


def _jdbc_pool(
    written: str | None, context_file: str | None
) -> tuple[int | Literal["none"] | None, str | None]:
    """The node's JDBC pool (a size, "none" for no limit, or None: the template's) from
    --jdbc-pool or --context, and where it comes from."""
    if written is not None and context_file is not None:
        fail("--jdbc-pool and --context both give the JDBC pool; give one", ExitCode.USAGE)
    if written is not None:
        if written.strip().lower() == "none":
            return "none", None
        try:
            size = int(written)
        except ValueError:
            size = 0
        if size < 1:
            fail(
                f"--jdbc-pool {written!r}: expected the pool's size (maxTotal), a whole number "
                ">= 1, or none (no limit)",
                ExitCode.USAGE,
            )
        return size, None
    if context_file is None:
        return None, None
    from sim.configs.errors import ConfigError
    from sim.configs.tomcat_context import read_jdbc_pool

    readable_file(context_file)
    try:
        found = read_jdbc_pool(Path(context_file))
    except ConfigError as exc:
        fail(str(exc), ExitCode.MODEL)
    return ("none" if found.size is None else found.size), found.said


def _think_of_plan(jmx_file, group_name, think, warmup_s) -> tuple[str | None, str | None]:
    """The think time of the JMeter plan's users (a model-file spec) and where it comes from;
    (None, None) when a timer of the plan is one the model cannot draw (then it is fitted)."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.formats import jmeter_plan

    if think is not None:
        fail("--think and --jmx both give the think time; give one", ExitCode.USAGE)
    readable_file(jmx_file)
    try:
        plan = jmeter_plan.read(jmx_file)
        groups = plan.groups
        if group_name is not None:
            groups = [g for g in groups if g.name == group_name]
            if not groups:
                names = ", ".join(repr(g.name) for g in plan.groups) or "none"
                fail(
                    f"--jmx-group {group_name!r}: {jmx_file} has no enabled thread group of that "
                    f"name (its thread groups: {names})",
                    ExitCode.USAGE,
                )
        if not groups:
            fail(
                f"{jmx_file}: no JMeter ThreadGroup; its thread groups are plugins' "
                f"({'; '.join(plan.unknown)}), whose load the planner does not read: give "
                "--think instead",
                ExitCode.MODEL,
            )
        thinks = [g.think(jmx_file) for g in groups]
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    if len({t.inline() for t in thinks}) > 1:
        names = "; ".join(f"{g.name!r}: {t.said.split(': ', 1)[1]}" for g, t in zip(groups, thinks))
        fail(
            f"{jmx_file}: {len(groups)} thread groups with different timers ({names}); the "
            "model's users are one population: give --jmx-group NAME",
            ExitCode.USAGE,
        )
    group, found = groups[0], thinks[0]
    for other in plan.unknown:
        click.echo(f"{jmx_file}: left out, a thread group the planner does not read: {other}")
    if group.unknown:
        click.echo(
            f"{jmx_file}: thread group {group.name!r} has timers the model cannot draw "
            f"({'; '.join(group.unknown)}): the think time is fitted by the response-time law"
        )
        return None, None
    threads = group.threads
    users = (
        f"{threads.number:g} threads" + (f" ({threads.note})" if threads.note else "")
        if threads.number is not None
        else f"threads {threads.written!r} ({threads.note})"
    )
    click.echo(
        f"think time from {found.said}: {found.spec['dist']} (mean {found.mean_s * 1000:.4g} ms, "
        f"sd {found.sd_s * 1000:.4g} ms); the plan's {users}"
    )
    ramp = group.ramp_up_s.number
    if ramp is not None and ramp > warmup_s:
        click.echo(
            f"the plan ramps its threads up over {ramp:g} s: give --warmup {ramp:g} or more, "
            "so that the runs are measured at their full load"
        )
    return found.inline(), found.said


COMMANDS = [plan_command]
