"""Wiring request classes into a replication: per-class stations, the clients' class choice.

A model without `[[classes]]` gets the plain components and nothing here runs.  With classes,
a class that asks a station for the tier's default work (the same demand and calls) draws from
the station's own sampler and stream, as a one-class model does; a class with its own demand
or calls gets a stream of its own (`<station>.demand.<class>`), so declaring classes shifts no
existing stream, and a script whose steps all use the tiers' defaults draws exactly the random
numbers of the one-class model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.model.classes import Work
from sim.model.parts.request_classes import RequestClasses
from sim.observe.classes import ClassStats
from sim.random.streams import Streams, sampler
from sim.tiers.classed import ClassedFrontStation, ClassedStation, Profile
from sim.tiers.clients.scripts import ClassChoice, MixPerRequest, MixPerUser, ScriptChoice
from sim.tiers.station import FrontStation, Station

_CLASSED = {Station: ClassedStation, FrontStation: ClassedFrontStation}


def station(
    kind: type[Station],
    args: tuple,
    kwargs: dict,
    classes: RequestClasses,
    streams: Streams,
    purpose: str,
    work: Callable[[Work], tuple[Any, int]],
    wrap: Callable[[Callable[[], float]], Callable[[], float]] | None = None,
) -> Station:
    """`kind(*args, **kwargs)`, or its classed form with a profile per class.  `args[4]` is the
    station's default burst sampler; `work(Work)` gives a class's (demand spec, calls) and
    `work(Work(None))` the tier's default."""
    if not classes.names:
        return kind(*args, **kwargs)
    default_spec, default_calls = work(Work(None))
    default_burst = args[4]
    profiles = []
    for each in classes.works:
        spec, calls = work(each)
        if spec == default_spec and calls == default_calls:
            burst = default_burst
        else:
            assert each.spec is not None  # the model declares classes: each Work has one
            burst = sampler(spec, streams, f"{purpose}.{each.spec.name}", calls)
            if wrap is not None:
                burst = wrap(burst)
        profiles.append(Profile(burst, calls))
    return _CLASSED[kind](*args, profiles=profiles, **kwargs)


def class_stats(classes: RequestClasses) -> ClassStats | None:
    return ClassStats(classes.names) if classes.names else None


def class_choice(
    classes: RequestClasses,
    clients_kind: str,
    streams: Streams,
    think: Callable[[], float] | None,
    stats: ClassStats,
) -> ClassChoice:
    """How the clients (`clients_kind`: `clients.kind`) pick each request's class
    (`clients.mix` or `clients.script`)."""
    names = list(classes.names)
    if classes.mix is not None:
        per_user = classes.users_per_class
        if per_user is not None:
            return MixPerUser(stats, think, per_user)
        probabilities = list(classes.mix)
        return MixPerRequest(stats, think, probabilities, streams.generator("clients.mix"))
    script = classes.script
    step_thinks = [
        None
        if step.think is None or clients_kind == "ab"
        else sampler(step.think, streams, f"clients.script.think.{step.name}")
        for step in script.steps
    ]
    return ScriptChoice(
        stats,
        think,
        [names.index(step.class_name) for step in script.steps],
        script.successors(),
        step_thinks,
        streams.generator("clients.script") if script.transitions else None,
    )


def writes_session(classes: RequestClasses) -> tuple | None:
    """Per class: whether its requests write the replicated state (None: the trigger decides);
    None when no class says."""
    if all(each is None for each in classes.writes_session):
        return None
    return classes.writes_session
