"""What `tiersim solve` does with each feature, declared where the feature is decided.

A feature (`sim.model.stack`) is a mechanism a model uses.  Every feature is declared once, as
exactly one of

* product-form: the product-form network (`sim.analytic.model_solver`) models it, and the
  declaration says how (a station, a delay, a slot pool whose limit is named when it can fill);
* an approximation: what the network leaves out, said as a caveat; a model that uses it is
  never solved "exact";
* refused: `solve` raises `NotProductForm` (a changing load has no steady state).

The stack part that owns a mechanism (`sim.model.parts`) decides when a model uses it and
declares it, side by side: a `StackPart` subclass lists its `DECLARATIONS` and returns from
`features()` the ones this model uses, each with the setting that brings it in.  Defining the
class registers its declarations here (`FEATURES`), and a name declared by two parts is refused
at import.  A component class brings its own feature (`connector.<kind>`, `policy.<name>`,
`clients.<kind>`, `mpm.<name>`) and declares it on the class (`product_form` or
`approximation` class attributes).

Before, the features were one hand list in the stack and their declarations a second list
here, and the solver's approximations a third; they drifted (a serialised `connection_setup`
was solved "exact").  `tests/model/test_features.py` enumerates every feature and fails on one
that is declared neither way; a feature nobody declared (a class added by a recipe) is treated
as an approximation, never as exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Declaration:
    """How the solver treats one feature: exactly one of the three fields is set."""

    product_form: str | None = None  # how the network models it
    approximation: str | None = None  # what the network leaves out (a caveat)
    refused: str | None = None  # why `solve` refuses the model

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.product_form, self.approximation, self.refused)) != 1:
            raise ValueError("a feature is product-form, an approximation or refused: one of them")


def exact(how: str) -> Declaration:
    return Declaration(product_form=how)


def approximate(caveat: str) -> Declaration:
    return Declaration(approximation=caveat)


def refused(why: str) -> Declaration:
    return Declaration(refused=why)


# a slot pool's product-form declaration, shared by the pools that are one
POOL = "a slot pool of the network; when it can fill up under the population it is named"

# every part-declared feature, and the part class that declares it; a name ending in "." is
# a family with a variable part (`appserver.jvm_sessions.<clients.kind>`)
FEATURES: dict[str, Declaration] = {}
OWNERS: dict[str, type] = {}


class StackPart:
    """A part of the stack that brings features: `DECLARATIONS` says how `solve` treats each
    one it can bring, `features()` which of them this model uses and the setting behind each.

    A part that holds other parts (the front its client connections, the database its lock)
    returns theirs too, in the stack's order; the stack merges the parts' features in a fixed
    order (`sim.model.stack.stack_plan`)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, declared in cls.__dict__.get("DECLARATIONS", {}).items():
            owner = OWNERS.get(name)
            # (a module reloaded redefines its class under the same name)
            if owner is not None and owner.__qualname__ != cls.__qualname__:
                raise TypeError(
                    f"{name} is declared by both {owner.__qualname__} and {cls.__qualname__}"
                )
            FEATURES[name] = declared
            OWNERS[name] = cls

    def features(self) -> dict[str, str]:
        """The features this part brings to the model, each with the setting behind it."""
        raise NotImplementedError

    def holds(self) -> list[Hold]:
        """The resources a request holds in this part, each at its depth inside what holds
        it (`Hold`); the probe layout places them in the stack's nesting
        (`sim.model.parts.probes`)."""
        return []


@dataclass(frozen=True)
class Hold:
    """A resource a request holds (a slot pool or a CPU, whose probe reports its busy share,
    `<name>.utilization`), declared by the part that builds it.

    Holds nest: a request holds its worker while its thread runs, its thread while it waits
    for a JDBC connection, its connection while it waits for the hot row's lock.  `depth` is
    how many holds inside its part's holder it sits (1: directly, 2: inside another of the
    part's own); in the probe layout's `holds` it is the depth from the outermost resource.
    `capacity` ranks by it: a saturated inner resource saturates every one around it."""

    name: str  # its probe's name (`tomcat1.threads`)
    depth: int
    title: str = ""  # what the planner reads ("the front's workers"); "": its name
    shared: bool = False  # shared by every node (the front, the database): more nodes queue on it
    # a figure a load test can measure of it beside the run's own, which pins how long it is
    # held (the lock's wait, from the database's statistics), and what the planner calls that
    # figure: `capacity --what-next` proposes measuring it; "": none
    measured: str = ""
    measured_title: str = ""


UNDECLARED = (
    "is not declared product-form (its stack part's DECLARATIONS, sim/model/parts/): the "
    "network leaves it out, so the answer is not exact"
)


def declaration(feature: str) -> Declaration | None:
    """The declaration of `feature`; None when nobody declared it (a recipe's new class that
    says nothing is then an approximation, never exact)."""
    if feature in FEATURES:
        return FEATURES[feature]
    for family, declared in FEATURES.items():
        if family.endswith(".") and feature.startswith(family):
            return declared
    owner = _class_of(feature)
    if owner is None:
        return None
    product_form = getattr(owner, "product_form", None)
    approximation = getattr(owner, "approximation", None)
    if (product_form is None) == (approximation is None):
        return None
    return Declaration(product_form=product_form, approximation=approximation)


def _class_of(feature: str) -> type | None:
    """The component class that brings a class-declared feature."""
    from sim.tiers.appserver.connectors import CONNECTORS
    from sim.tiers.balancer.policies.base import REGISTRY
    from sim.tiers.clients.populations import CLIENTS
    from sim.tiers.proxy.mpm import MPMS

    kind, _, name = feature.partition(".")
    classes: dict[str, dict] = {
        "connector": CONNECTORS,
        "clients": CLIENTS,
        "mpm": MPMS,
        "policy": {cls.feature.partition(".")[2]: cls for cls in REGISTRY.values()},
    }
    return classes.get(kind, {}).get(name)


def solver_caveat(feature: str) -> str | None:
    """The caveat `solve` prints for a feature the model uses; None when it is product-form
    (or refused, which `solve` raises on its own)."""
    declared = declaration(feature)
    if declared is None:
        return UNDECLARED
    return declared.approximation
