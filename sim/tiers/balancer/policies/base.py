"""The interface every balancer policy implements, and the random draws they share.

A policy only *chooses*.  The `Dispatcher` (`sim.tiers.balancer.dispatcher`) owns what every real
balancer shares: the set of usable members (error state, recovery), requests outstanding per
member, the load view a policy may read (live, or the periodic reports of
`balancer.report_interval_s`), session affinity and failover.  It hands each policy two lists
it keeps up to date in place:

* `active`: indices of the usable members, in configuration order (never empty at `pick`);
* `load`: requests outstanding per member as the policy may see them (live, or as last reported);
* `outstanding`: the live count (for mechanisms that are themselves reports, join-idle-queue).

Hooks are called only when a policy asks for them (`on_dispatch`, `on_complete`), so a
stateless policy costs one call per request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from sim.random.distributions import BLOCK

REGISTRY: dict[str, type[Policy]] = {}  # balancer.policy name -> class


class Policy:
    """Base: `pick(request) -> member index`, plus optional accounting hooks.

    A subclass registers itself under the `policy_names` it declares (the model file's
    `balancer.policy`; several for aliases) and lists the `parameters` of `[balancer]` it
    reads; a parameter of its own is a field of its nested `Parameters` model (pydantic, with
    its default, range and description), which `[balancer]` then accepts for this policy only.
    Defining the class is all it takes to add a policy.  Its `feature` (`policy.<first
    name>`) is what an engine must declare to run it (`sim.engines.choose`)."""

    policy_names: ClassVar[tuple[str, ...]] = ()
    parameters: ClassVar[tuple[str, ...]] = ()
    Parameters: ClassVar[type[BaseModel] | None] = None  # the policy's own [balancer] fields
    feature: ClassVar[str] = "policy"
    # what `tiersim solve` does with it (`sim.model.features`): the network splits requests
    # at random by share, whatever the policy
    product_form: ClassVar[str | None] = None
    approximation: ClassVar[str | None] = (
        "treated as a random split by share (a rotation or a load-aware choice balances "
        "differently; the answer is pessimistic for a rotation)"
    )
    # How the long-run split over members is known, for the stability check
    # (sim.model.stability): "even" (state-blind and equal shares), "weighted" (shares in
    # proportion to `weight`), "adaptive" (follows the load, stable up to the pooled
    # capacity), "single" (everything to one member).
    split = "even"
    on_dispatch = False  # call dispatched() for every request sent
    on_complete = False  # call completed() for every answer received
    uses_load = False  # reads `load` (so stale reports apply to it)
    # reads `weights` at every pick, so that a member's weight can ramp while it runs: the
    # balancer's slow start of a joining member (`sim.tiers.balancer.slow_start`)
    reads_weights_live: ClassVar[bool] = False

    __slots__ = ("active", "load", "names", "now", "outstanding", "rng", "weights")

    def __init__(self, weights: Sequence[float], names: Sequence[str], rng, **params: Any) -> None:
        self.weights = list(weights)  # mod_jk lbfactor, mod_proxy loadfactor, HAProxy weight
        self.names = list(names)  # member names (CARP and ring hashing hash them)
        self.rng = rng
        self.active: list[int] = list(range(len(self.weights)))
        self.load: list[int] = [0] * len(self.weights)
        self.outstanding = self.load
        # () -> simulated time [s], for policies that age their state; set by attach()
        self.now: Callable[[], float] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls.__dict__.get("policy_names", ())
        if names:
            cls.feature = f"policy.{names[0]}"
        own = cls.__dict__.get("Parameters")
        if own is not None:
            cls.parameters = (
                *cls.parameters,
                *(n for n in own.model_fields if n not in cls.parameters),
            )
        for name in names:
            if name in REGISTRY:
                raise ValueError(f"balancer policy {name!r} is defined twice")
            REGISTRY[name] = cls

    def attach(self, active: list[int], load: list[int], outstanding: list[int], now) -> None:
        """Share the dispatcher's usable-member list and load views (mutated in place) and its
        clock (`now()` in simulated seconds)."""
        self.active = active
        self.load = load
        self.outstanding = outstanding
        self.now = now

    def pick(self, request) -> int:
        raise NotImplementedError

    def dispatched(self, index: int, request, new_session: bool) -> None:
        """A request was sent to `index`, chosen by `pick` or by its session (new_session: it
        carries no session id yet)."""

    def completed(self, index: int, request, ok: bool, response_s: float) -> None:
        """The member answered after `response_s` seconds."""

    def sticky(self, index: int) -> None:
        """A request was routed to `index` by its session, bypassing `pick`."""

    def recovered(self, index: int) -> None:
        """`index` left its error state and is usable again."""

    def membership_changed(self) -> None:
        """`active` changed (a member went into error or recovered)."""


class UniformDraws:
    """Uniform [0, 1) numbers drawn from the policy's own stream in blocks (one numpy call
    per block of picks instead of one per pick; the compiled engine draws the same blocks)."""

    __slots__ = ("block", "buffer", "rng")

    def __init__(self, rng, block: int = BLOCK) -> None:
        self.rng = rng
        self.buffer: list[float] = []
        self.block = block

    def __call__(self) -> float:
        buffer = self.buffer
        if not buffer:
            buffer.extend(self.rng.random(self.block).tolist())
        return buffer.pop()

    def index(self, n: int) -> int:
        """A uniform index in 0..n-1."""
        return int(self() * n)
