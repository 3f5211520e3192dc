"""The compiled plan's request classes and session scripts: the tables the kernel's section
"request classes" reads, laid out as `sim.engines.reference.classes` builds its components.

Per station, each class draws its bursts from the station's own stream when it asks for the
tier's default work (the same demand and calls), else from a stream of its own
(`<station>.demand.<class>`), scaled to its calls; a station without a downstream makes no
call whatever the class says (`sim.tiers.classed._start`).  The clients pick a class from the
mix's uniform stream (`clients.mix`), by user (`mix_by = "user"`), or by the step of the
script's path (`clients.script`), whose steps may have think times of their own.  A
script walked in order is a fixed path, which the kernel follows alone; a Markov chain between
the steps draws each path in the driver, by the reference's own `ScriptChoice` on its stream
(`chain_choice`).  The class probes (`class.NAME`) are the reference's `ClassProbe`, the
recorder's last columns.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

import numpy as np

from sim.engines.compiled import kernel as k
from sim.model.classes import Work
from sim.model.parts.request_classes import RequestClasses
from sim.observe.classes import OUTCOMES, ClassProbe
from sim.random.distributions import Distribution, as_distribution
from sim.random.streams import Streams
from sim.tiers.clients.scripts import ScriptChoice

# what a station's profile is made of: (the purpose of its default stream, Work -> (demand
# spec, calls)); `Work(None)` gives the tier's default
StationWork = tuple[str, Callable[[Work], tuple[Any, int]]]
# make a stream: (purpose, distribution, calls) -> its index
MakeStream = Callable[[str, Distribution, int], int]

# the outcome counts the kernel keeps per class (its K_* columns), in the reference's order
KERNEL_OUTCOMES = (
    "arrived",
    "completed",
    "response_sum",
    "timed_out",
    "errors",
    "failed",
    "retried",
    "late",
)
if tuple(OUTCOMES) != KERNEL_OUTCOMES or len(KERNEL_OUTCOMES) != k.N_OUTCOMES:
    raise RuntimeError(
        f"the compiled engine counts a class's outcomes as the kernel's K_* columns, but "
        f"sim.observe.classes.OUTCOMES is {OUTCOMES}: record the new fields in the kernel"
    )


class ClassView:
    """A class's probe over the compiled counters: `ClassProbe`'s fields and metrics."""

    fields: tuple[str, ...] = OUTCOMES
    metrics = ClassProbe.metrics

    def __init__(self, name: str) -> None:
        self.name = f"class.{name}"


def chain_choice(classes: RequestClasses, streams: Streams) -> ScriptChoice | None:
    """The reference's path drawing for a Markov-chain script (`sim.engines.reference.classes.
    class_choice`), over the step numbers (its `choose` gives the step, not its class);
    None for any other model."""
    if not classes.chain:
        return None
    script = classes.script
    steps = list(range(len(script.steps)))
    return ScriptChoice(
        None,
        None,
        steps,
        script.successors(),
        [None] * len(steps),
        streams.generator("clients.script"),
    )


def station_tables(
    request_classes: RequestClasses,
    works_by_station: list[StationWork | None],
    downstream: list[bool],
    bursts: list[int],
    stream: MakeStream,
) -> np.ndarray:
    """KST: per station (in the plan's order), each class's burst stream, then its calls."""
    classes = request_classes.works
    n = len(classes)
    table = np.zeros((max(len(works_by_station), 1), 2 * max(n, 1)), dtype=np.int64)
    if not request_classes.names:
        return table
    for s, station in enumerate(works_by_station):
        assert station is not None  # every station declares its work
        purpose, work = station
        default = work(Work(None))
        for c, each in enumerate(classes):
            spec, calls = work(each)
            assert each.spec is not None  # the model declares classes
            if (spec, calls) == default:
                table[s, c] = bursts[s]
            else:
                table[s, c] = stream(f"{purpose}.{each.spec.name}", as_distribution(spec), calls)
            table[s, n + c] = calls if downstream[s] else 0
    return table


def client_tables(
    classes: RequestClasses,
    kind: str,
    config: np.ndarray,
    stream: MakeStream,
    uniforms: Callable[[str], int],
) -> tuple[np.ndarray, np.ndarray]:
    """KF (per class: zeroed outcomes, the mix's bounds, whether it writes the session) and
    KSTEP (the script's path: each step's class and think stream) of the request classes, for
    clients of `kind` (`clients.kind`); sets the clients' config."""
    names = list(classes.names)
    n = len(names)
    table = np.zeros((max(n, 1), k.N_KF), dtype=np.float64)
    steps = np.zeros((1, k.N_STEP), dtype=np.int64)
    config[k.C_CLASSES] = n
    config[k.C_ST_MIX] = -1
    config[k.C_PATH_LEN] = 0
    if not n:
        return table, steps
    for c, writes in enumerate(classes.writes_session):
        table[c, k.K_WRITES] = -1 if writes is None else int(writes)
    if classes.mix is not None:
        per_user = classes.users_per_class
        if per_user is not None:  # MixPerUser
            config[k.C_CLASS_CHOICE] = k.CHOICE_USERS
            table[:, k.K_MIX] = list(accumulate(per_user))
        else:  # MixPerRequest: its cumulative probabilities, the last exactly 1
            config[k.C_CLASS_CHOICE] = k.CHOICE_MIX
            cumulative = list(accumulate(classes.mix))
            cumulative[-1] = 1.0
            table[:, k.K_MIX] = cumulative
            config[k.C_ST_MIX] = uniforms("clients.mix")
        return table, steps
    script = classes.script
    assert script is not None  # validated: classes need a mix or a script
    chain = classes.chain
    config[k.C_CLASS_CHOICE] = k.CHOICE_CHAIN if chain else k.CHOICE_SCRIPT
    # KSTEP's rows: the steps of a chain (by number), or the positions of the fixed path
    path = list(range(len(script.steps))) if chain else list(classes.path)
    config[k.C_PATH_LEN] = len(path)
    steps = np.zeros((len(path), k.N_STEP), dtype=np.int64)
    own: dict[int, int] = {}  # a step's own think stream, made once
    for position, index in enumerate(path):
        step = script.steps[index]
        steps[position, k.STEP_CLASS] = names.index(step.class_name)
        if step.think is None or kind == "ab":
            steps[position, k.STEP_THINK] = config[k.C_ST_THINK]
        else:
            if index not in own:
                own[index] = stream(
                    f"clients.script.think.{step.name}", as_distribution(step.think), 0
                )
            steps[position, k.STEP_THINK] = own[index]
    if kind == "sessions" and not chain:  # the path is the session
        config[k.C_FIXED_LENGTH] = len(path)
    return table, steps
