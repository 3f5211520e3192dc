"""The connect phase: every hook between components, listed and connected in one place.

Components are built first (`sim.engines.reference.assemble`), knowing nothing of each other beyond the
calls they make downstream.  Some behaviour crosses components the other way — work after a
request's own (session replication, the JVM's accounting), a session replica surviving a
failover, a user leaving — and is a hook: an attribute one component calls, which another
provides.  A hook assigned ad hoc after construction can be forgotten: the replica hook of the
session table once was, so a crash under total synchronous replication still lost every
session.  Here each hook is a row: when it applies, what connects it, and how to check it is
connected; `connect` refuses to return with an applicable hook left unconnected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from sim.tiers.appserver.jvm import Jvm, JvmAfterRequest
from sim.tiers.cluster.session_replication import (
    AfterRequest,
    ClassedAfterRequest,
    Replicator,
)
from sim.tiers.proxy.backend_pool import FailingConnectsPool
from sim.tiers.station import Station

if TYPE_CHECKING:
    from sim.tiers.balancer.dispatcher import Dispatcher
    from sim.tiers.balancer.sessions import SessionTable
    from sim.tiers.clients.populations import Clients
    from sim.tiers.cluster.elastic_group import ElasticGroup


class UnconnectedHook(RuntimeError):
    """A hook that applies to this model was not connected (a bug in the builder)."""


@dataclass(frozen=True)
class Hook:
    name: str  # who calls whom, in words
    applies: bool
    connect: Callable[[], None]
    connected: Callable[[], bool]


@dataclass
class Parts:
    """The built components the hooks join."""

    nodes: list[Station]  # backend nodes, in the balancer's member order
    jvms: list[Jvm | None]  # per node
    replicators: list[tuple[str, Replicator]]  # (tier, replicator), in cluster.replication order
    dispatcher: Dispatcher | None
    clients: Clients  # a client population
    writes_session: tuple | None = None  # per request class: True, False or None (the trigger)
    members: list | None = None  # what the balancer sends to, in member order (a node or its pool)
    elastic: list[ElasticGroup] | None = None  # autoscaled groups (backends.N.autoscale)


def hooks(parts: Parts) -> list[Hook]:
    """Every hook of the stack (the one list to extend when a component gains a hook)."""
    nodes, jvms, replicators = parts.nodes, parts.jvms, parts.replicators
    dispatcher, clients = parts.dispatcher, parts.clients
    sessions: SessionTable | None = getattr(dispatcher, "sessions", None)
    web = [replicator for tier, replicator in replicators if tier == "web"]
    any_jvm = any(jvm is not None for jvm in jvms)
    keeps_sessions = bool(getattr(clients, "keeps_sessions", False))
    failing = [
        (index, member)
        for index, member in enumerate(parts.members or [])
        if isinstance(member, FailingConnectsPool)
    ]

    def replicate_after_requests() -> None:
        writes = parts.writes_session
        for index, node in enumerate(nodes):
            if writes is None:
                node.post = AfterRequest([r for _, r in replicators], index)
            else:
                node.post = ClassedAfterRequest([r for _, r in replicators], index, writes)

    def account_in_jvms() -> None:
        # the JVM counts the request's allocation and sessions before replication runs: both
        # hold the thread, the JVM's part first
        for node, jvm in zip(nodes, jvms):
            if jvm is not None:
                node.post = JvmAfterRequest(jvm, node.post)

    def hold_replicas_in_heaps() -> None:
        for replicator in web:
            for sender, receivers in enumerate(replicator.receivers):
                jvm = jvms[sender]
                if jvm is not None:
                    jvm.replica_holders = [h for r in receivers if (h := jvms[r]) is not None]

    def replica_survives_failover() -> None:
        def replicated(_user, home: int, member: int) -> bool:
            """Does `member` hold a copy of the session made on `home`?  Every web-tier
            replicator sends each session of `home` to its receivers (all other nodes, or
            its buddies)."""
            return any(member in replicator.receivers[home] for replicator in web)

        assert sessions is not None  # applies only with a session table
        sessions.replicated = replicated

    def end_sessions() -> None:
        assert dispatcher is not None  # applies only with a balancer
        clients.on_session_end = dispatcher.session_ended

    def members_in_error() -> None:
        assert dispatcher is not None  # applies only with a balancer
        for index, pool in failing:
            pool.on_disabled = partial(dispatcher.member_in_error, index)

    elastic = parts.elastic or []

    def drain_members() -> None:
        assert dispatcher is not None  # an autoscaled group always has a balancer
        if len(elastic) == 1:
            dispatcher.on_member_idle = elastic[0].member_idle
            return

        def idle(member: int) -> None:
            for group in elastic:
                group.member_idle(member)

        dispatcher.on_member_idle = idle

    def cookies() -> None:
        for jvm in jvms:
            if jvm is not None:
                jvm.cookies = keeps_sessions  # ab keeps none: a session per request

    return [
        Hook(
            "node.post -> session replication after each request (cluster.replication)",
            bool(replicators),
            replicate_after_requests,
            lambda: all(isinstance(_unwrap(n.post), AfterRequest) for n in nodes),
        ),
        Hook(
            "node.post -> the JVM's accounting of each request (backends.N.jvm)",
            any_jvm,
            account_in_jvms,
            lambda: all(
                isinstance(n.post, JvmAfterRequest) for n, j in zip(nodes, jvms) if j is not None
            ),
        ),
        Hook(
            "jvm.replica_holders -> receivers' heaps hold web-tier replicas",
            any_jvm and bool(web),
            hold_replicas_in_heaps,
            lambda: all(
                jvm.replica_holders or not _replica_jvms(web, jvms, sender)
                for sender, jvm in enumerate(jvms)
                if jvm is not None
            ),
        ),
        Hook(
            "sessions.replicated -> a web-tier replica survives a failover",
            sessions is not None and bool(web),
            replica_survives_failover,
            lambda: cast("SessionTable", sessions).replicated is not None,
        ),
        Hook(
            "clients.on_session_end -> the balancer forgets the session",
            dispatcher is not None and keeps_sessions,
            end_sessions,
            lambda: clients.on_session_end is not None,
        ),
        Hook(
            "backend_pool.on_disabled -> the balancer stops choosing a member in error state",
            dispatcher is not None and bool(failing),
            members_in_error,
            lambda: all(pool.on_disabled is not None for _, pool in failing),
        ),
        Hook(
            "balancer.on_member_idle -> a draining node of an autoscaled group goes when idle",
            bool(elastic),
            drain_members,
            lambda: dispatcher is not None and dispatcher.on_member_idle is not None,
        ),
        Hook(
            "jvm.cookies <- whether the clients keep sessions",
            any_jvm,
            cookies,
            lambda: all(jvm.cookies == keeps_sessions for jvm in jvms if jvm is not None),
        ),
    ]


def _replica_jvms(web: list[Replicator], jvms: list[Jvm | None], sender: int) -> list[Jvm]:
    return [jvm for r in web for i in r.receivers[sender] if (jvm := jvms[i]) is not None]


def _unwrap(post):
    """The replication step under a JVM's accounting wrapper."""
    return getattr(post, "then", post)


def connect(parts: Parts) -> list[Hook]:
    """Connect every applicable hook, in the listed order; refuse to go on if one is not."""
    listed = hooks(parts)
    for hook in listed:
        if hook.applies:
            hook.connect()
    missing = [hook.name for hook in listed if hook.applies and not hook.connected()]
    if missing:
        raise UnconnectedHook("hooks left unconnected: " + "; ".join(missing))
    return [hook for hook in listed if hook.applies]
