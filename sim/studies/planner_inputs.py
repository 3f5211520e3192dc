"""What the planner reads from the stack's own files before it plans (`tiersim plan` and
`sim.plan_experiment` alike): the node's request Connector from Tomcat's `server.xml`, its JDBC
pool from `context.xml`, and the users' think time from the JMeter test plan -- each a value
and the sentence saying where it comes from.

A file that cannot be read is the file's own error (`FileProblem`, `ConfigError`,
`MeasurementError`); inputs given together that cannot be (two sources of one value, an option
without the one it qualifies, a thread group the plan does not have) are a `PlanOptionError`,
which the command refuses as a usage error and the package's face as an `ArgumentError`.  The
messages are the command's, one line each."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sim.files import FileProblem
from sim.studies.experiment import ExperimentError

# the template's pool when neither --jdbc-pool nor --context gives one
TEMPLATE_POOL = (
    "the template's 8 (tomcat-dbcp's maxTotal default); give --context context.xml, or "
    "--jdbc-pool N from its <Resource maxTotal=...>"
)


class PlanOptionError(ExperimentError):
    """Inputs of the plan that cannot go together, or a value an option cannot take: the
    command's usage error (exit 2).  `parameter` names it as `sim.plan_experiment` does."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


def readable(path: str | Path) -> None:
    """Refuse, before reading, a missing file, a pipe or a device (reading /dev/zero or a FIFO
    never ends)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileProblem(f"{path}: no such file") from None
    except OSError as exc:
        raise FileProblem(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise FileProblem(
            f"{path}: not a regular file (a pipe, device or socket, which could be read forever); "
            "save it to a file and give that file"
        )


@dataclass(frozen=True)
class JdbcPoolInput:
    """The node's JDBC pool: a size, "none" (no limit), or None (the template's), and where it
    comes from (None where the size was given as a number)."""

    size: int | Literal["none"] | None
    said: str | None


def _pool_size(written: str) -> int | Literal["none"]:
    """`--jdbc-pool`'s text: the pool's size (context.xml `Resource` `maxTotal`) or "none"."""
    if written.strip().lower() == "none":
        return "none"
    try:
        size = int(written)
    except ValueError:
        size = 0
    if size < 1:
        raise PlanOptionError(
            "jdbc_pool",
            f"--jdbc-pool {written!r}: expected the pool's size (maxTotal), a whole number >= 1, "
            "or none (no limit)",
        )
    return size


def jdbc_pool_input(
    size: int | str | None, context: str | Path | None, database: bool
) -> JdbcPoolInput:
    """The node's JDBC pool from its size (`--jdbc-pool`: a number, or its text, "none" for no
    limit) or Tomcat's context.xml (`--context`, the DataSource `Resource`'s `maxTotal`;
    `maxActive` for DBCP 1 and the Tomcat JDBC pool).  `database`: whether the database tier
    is planned (the pool is its)."""
    if context is not None and not database:
        raise PlanOptionError(
            "context",
            "--context gives the JDBC pool, the database tier's; give --database database.csv "
            "(tiersim import pg-stat ...) to plan the database",
        )
    if size is not None and context is not None:
        raise PlanOptionError(
            "jdbc_pool", "--jdbc-pool and --context both give the JDBC pool; give one"
        )
    if isinstance(size, str):
        return JdbcPoolInput(_pool_size(size), None)
    if size is not None:
        if size < 1:
            raise PlanOptionError(
                "jdbc_pool", f"--jdbc-pool {size}: expected the pool's size (maxTotal) >= 1"
            )
        return JdbcPoolInput(size, None)
    if context is None:
        return JdbcPoolInput(None, TEMPLATE_POOL if database else None)
    from sim.configs.tomcat_context import read_jdbc_pool

    readable(context)
    found = read_jdbc_pool(Path(context))
    return JdbcPoolInput("none" if found.size is None else found.size, found.said)


@dataclass(frozen=True)
class NodeInput:
    """The node's request Connector from its server.xml: `threads` (maxThreads), the other
    settings (`backends.0.accept_queue=100`), and the lines saying where each comes from."""

    threads: int
    settings: tuple[str, ...]
    said: str


def node_input(tomcat: str | Path | None, version: str, threads: bool) -> NodeInput | None:
    """The node of `--tomcat server.xml` read as Tomcat `version` ("MAJOR.MINOR") fills in its
    defaults; `threads`: whether maxThreads was given as well (refused: one source)."""
    if tomcat is None:
        return None
    from sim.configs.servers import node_settings

    if threads:
        raise PlanOptionError("tomcat", "--threads and --tomcat both give maxThreads; give one")
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        raise PlanOptionError(
            "tomcat_version", f"--tomcat-version {version!r}: give MAJOR.MINOR, e.g. 10.1"
        ) from None
    readable(tomcat)
    node = node_settings(Path(tomcat), (major, minor))
    lines = [f"the node, from {tomcat}: " + "; ".join(node.said)]
    lines += [f"  not modelled: {line}" for line in node.not_modelled]
    return NodeInput(node.threads, node.settings, "\n".join(lines))


@dataclass(frozen=True)
class ThinkInput:
    """The users' think time from the JMeter test plan: `spec`, a model-file distribution (None:
    a timer the model cannot draw, so it is fitted), `said` where it comes from, and `notes`,
    what the plan says besides (groups left out, its ramp-up), a sentence each."""

    spec: str | None
    said: str | None
    notes: tuple[str, ...]


def think_input(
    jmx: str | Path | None, group_name: str | None, think: bool, warmup_s: float
) -> ThinkInput | None:
    """The think time of the plan's users (`--jmx`, its thread group `--jmx-group`), drawn as
    JMeter's Constant, Uniform, Gaussian and Poisson Random Timers draw it; `think`: whether a
    think time was given as well (refused: one source); `warmup_s`: the cut the plan's ramp-up
    is compared with."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.formats import jmeter_plan

    if jmx is None:
        if group_name is not None:
            raise PlanOptionError(
                "jmx_group", "--jmx-group names a thread group of --jmx PLAN; give the plan"
            )
        return None
    if think:
        raise PlanOptionError("jmx", "--think and --jmx both give the think time; give one")
    readable(jmx)
    plan = jmeter_plan.read(jmx)
    groups = plan.groups
    if group_name is not None:
        groups = [g for g in groups if g.name == group_name]
        if not groups:
            names = ", ".join(repr(g.name) for g in plan.groups) or "none"
            raise PlanOptionError(
                "jmx_group",
                f"--jmx-group {group_name!r}: {jmx} has no enabled thread group of that name (its "
                f"thread groups: {names})",
            )
    if not groups:
        raise MeasurementError(
            jmx,
            None,
            f"no JMeter ThreadGroup; its thread groups are plugins' ({'; '.join(plan.unknown)}), "
            "whose load the planner does not read: give --think instead",
        )
    thinks = [g.think(jmx) for g in groups]
    if len({t.inline() for t in thinks}) > 1:
        names = "; ".join(f"{g.name!r}: {t.said.split(': ', 1)[1]}" for g, t in zip(groups, thinks))
        raise PlanOptionError(
            "jmx_group",
            f"{jmx}: {len(groups)} thread groups with different timers ({names}); the model's "
            "users are one population: give --jmx-group NAME",
        )
    group, found = groups[0], thinks[0]
    notes = [
        f"{jmx}: left out, a thread group the planner does not read: {o}" for o in plan.unknown
    ]
    if group.unknown:
        notes.append(
            f"{jmx}: thread group {group.name!r} has timers the model cannot draw "
            f"({'; '.join(group.unknown)}): the think time is fitted by the response-time law"
        )
        return ThinkInput(None, None, tuple(notes))
    threads = group.threads
    users = (
        f"{threads.number:g} threads" + (f" ({threads.note})" if threads.note else "")
        if threads.number is not None
        else f"threads {threads.written!r} ({threads.note})"
    )
    notes.append(
        f"think time from {found.said}: {found.spec['dist']} (mean {found.mean_s * 1000:.4g} ms, "
        f"sd {found.sd_s * 1000:.4g} ms); the plan's {users}"
    )
    ramp = group.ramp_up_s.number
    if ramp is not None and ramp > warmup_s:
        notes.append(
            f"the plan ramps its threads up over {ramp:g} s: give --warmup {ramp:g} or more, "
            "so that the runs are measured at their full load"
        )
    return ThinkInput(found.inline(), found.said, tuple(notes))
