"""What `tiersim solve` does with each feature: the one place it is declared.

A feature (`sim.model.stack`) is a mechanism a model uses.  Every feature is declared here
once, as exactly one of

* product-form: the product-form network (`sim.analytic.model_solver`) models it, and the
  declaration says how (a station, a delay, a slot pool whose limit is named when it can fill);
* an approximation: what the network leaves out, said as a caveat; a model that uses it is
  never solved "exact";
* refused: `solve` raises `NotProductForm` (a changing load has no steady state).

A component class brings its own feature (`connector.<kind>`, `policy.<name>`,
`clients.<kind>`, `mpm.<name>`) and declares it on the class (`product_form` or
`approximation` class attributes).  Before this module the features were one hand list and
the solver's approximations another, and they drifted: a serialised `connection_setup` was
solved "exact".  `tests/model/test_features.py` enumerates every feature and fails on one that
is declared neither way; a feature nobody declared (a class added by a recipe) is treated as
an approximation, never as exact.
"""

from __future__ import annotations

from dataclasses import dataclass


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


_POOL = "a slot pool of the network; when it can fill up under the population it is named"

FEATURES: dict[str, Declaration] = {
    # clients
    "clients.finite": approximate(
        "a finite workload: the answer is its steady state (start-up and drain excluded)"
    ),
    "clients.ab.repeat": approximate(
        "repeated ab runs (batch.K.*): the answer is one run's steady state"
    ),
    "clients.ramp": Declaration(refused="a changing population has no steady state to solve"),
    "clients.schedule": Declaration(refused="a changing arrival rate has no steady state to solve"),
    "classes": exact("request classes: multi-class MVA or an open multi-class network"),
    "clients.mix": exact(
        "a random request mix is a chain with class switching (BCMP): its mean demands are exact"
    ),
    "clients.script": exact(
        "a script's steps are a chain with deterministic class switching (BCMP)"
    ),
    "clients.keep_alive": exact(
        "reusing a connection changes only which requests pay its set-up; where a persistent "
        "connection holds a worker, the approximation `clients.keep_alive` is named"
    ),
    "clients.host": exact("the load generator's CPU: one more processor-sharing station"),
    "clients.timeouts": approximate(
        "timeouts and retries are ignored (no abandonment, no extra load in the network)"
    ),
    "clients.connect": exact("the connection set-up: a delay station"),
    # the front
    "proxy": exact("the front's CPU and worker pool (" + _POOL + ")"),
    "proxy.lingering_close": approximate(
        "a lingering close holds a worker after the response while the client is slow to close"
    ),
    "proxy.connection_demand": exact(
        "without keep-alive, part of every request's demand; with keep-alive the "
        "approximation `proxy.connection_demand` is named"
    ),
    "proxy.process_management": approximate(
        "children are spawned over time (process management): the start is a transient"
    ),
    "proxy.children": exact(
        "children as individuals; what they hold per child is named by its own approximation"
    ),
    "proxy.server_close": exact(
        "when the front closed its last connection: no steady-state effect"
    ),
    "proxy.server_close.clients_view": exact("a finite run's end as the clients see it"),
    "proxy.client_connections": exact(
        "the front's connections as entities; what they hold is its own feature"
    ),
    "proxy.backend_pool.mod_proxy": exact(
        "the front's connections to a node; what they pin is the connector's feature and "
        "their limit `proxy.backend_pool.max` its own approximation"
    ),
    "proxy.backend_pool.mod_jk": approximate(
        "mod_jk's endpoint acquisition polls (sleeping between tries) instead of queueing"
    ),
    "proxy.backend_pool.connect_failures": approximate(
        "connects that fail after connectiontimeout put the worker in error state; "
        "the network has no failures"
    ),
    "proxy.backend_pool.max": approximate(
        "requests wait for a pooled connection while holding their worker (a nested hold)"
    ),
    "proxy.backend_pool.refusals": approximate(
        "refusals while requests wait for a connection are not modelled"
    ),
    "mod_jk.ajp13": approximate(
        "mod_jk's retries of abandoned or refused requests are extra load the network does not see"
    ),
    "mod_jk.lb": approximate(
        "mod_jk's lb worker fails over and puts members in error state; the network splits evenly"
    ),
    # the nodes
    "connector.max_connections": exact("Tomcat maxConnections: " + _POOL),
    "connector.connection_setup": approximate(
        "each new backend connection is set up one at a time per node (a serialised section); "
        "the network leaves the wait out, so the answer is optimistic when connections open often"
    ),
    "appserver.jvm": approximate(
        "garbage-collection pauses stop the node's CPU and JIT warm-up changes the demand over time"
    ),
    "appserver.jdbc_pool": exact("the JDBC pool (maxTotal): " + _POOL),
    "backends.events": approximate("crashes and slow-downs make the load time-varying"),
    "backends.autoscale": Declaration(
        refused="an autoscaled group changes its size over time, which no steady state has: "
        "solve each fixed count (--set backends.N.autoscale=none --set backends.N.count=K)"
    ),
    "balancer": exact("the split over nodes by each node's share"),
    "balancer.sticky_session": exact(
        "open arrivals carry no session; with returning users the approximation "
        "`balancer.sticky_session` is named"
    ),
    "balancer.report_interval_s": approximate(
        "the balancer acts on stale load reports (herding), which no routing matrix describes"
    ),
    # the shared tier
    "database": exact("the database's CPU (processor sharing) and disks (FCFS, exponential)"),
    "database.lock": approximate(
        "a serialised section shared by every node, holding the database's own CPU and disk "
        "work inside it (simultaneous possession): the network counts its hold as one more "
        "FCFS station, which is optimistic when the lock is busy"
    ),
    "database.lock.random_order": exact(
        "the waiters served in random order: the same means as in arrival order (the network "
        "answers means only; the wait's longer tail is the simulation's)"
    ),
    "database.lock.waiters_cost": approximate(
        "a holder's section grows with the waiters left at its grant: the network counts the "
        "lock's hold at its fitted length, without the waiters' cost, which is optimistic "
        "exactly where the lock is busy"
    ),
    "replication.sync": approximate(
        "synchronous replication holds the request thread until every replica acknowledges"
    ),
    "replication.async": approximate(
        "asynchronous replication adds serialization, network and receiver CPU work"
    ),
}

# features named with a variable part: `appserver.jvm_sessions.<clients.kind>`
_PREFIXES: dict[str, Declaration] = {
    "appserver.jvm_sessions.": approximate(
        "sessions kept on the heap raise the garbage collector's work over the run"
    ),
}

UNDECLARED = (
    "is not declared product-form (sim/model/features.py): the network leaves it out, "
    "so the answer is not exact"
)


def declaration(feature: str) -> Declaration | None:
    """The declaration of `feature`; None when nobody declared it (a recipe's new class that
    says nothing is then an approximation, never exact)."""
    if feature in FEATURES:
        return FEATURES[feature]
    for prefix, declared in _PREFIXES.items():
        if feature.startswith(prefix):
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
