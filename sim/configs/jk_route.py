"""A `JkMount` route: the mod_jk worker it names (an ajp13 worker, or an lb worker and its
members) as the backend pool's and the balancer's parameters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sim.configs.defaults import JK, JK_METHODS, proxy_max
from sim.configs.draft import Draft
from sim.configs.errors import ConfigError, Where
from sim.configs.front import shown
from sim.configs.httpd import Directive, HttpdConfig
from sim.configs.workers_properties import (
    Property,
    WorkersProperties,
    as_bool,
    as_number,
    read_workers_properties,
)

if TYPE_CHECKING:
    from sim.configs.members import Member

# ajp13 / lb worker properties with no model parameter
JK_NOT_MODELLED = {
    "ping_mode": "CPing/CPong probes before requests or on connect",
    "ping_timeout": "the wait for a CPong",
    "connect_timeout": "a CPing after connecting",
    "prepost_timeout": "a CPing before each request",
    "connection_pool_minsize": "connections kept open by the maintenance",
    "socket_keepalive": "TCP keep-alive probes",
    "busy_limit": "a member busy beyond this is skipped",
    "activation": "a member's initial state (disabled, stopped)",
    "distance": "member preference groups",
    "max_packet_size": "the AJP packet size",
}


def jk_route(
    config: HttpdConfig,
    draft: Draft,
    route: Directive,
    worker: str,
    per_child: int,
    mpm: str,
    properties: WorkersProperties,
) -> list[Member]:
    listed = properties.listed()
    if worker not in listed:
        raise ConfigError(
            route.where,
            f"{shown(route)} names worker {worker!r}, which worker.list does not name "
            f"(worker.list: {', '.join(listed) or 'empty'})",
            f"add {worker} to worker.list in {properties.file} or fix the JkMount",
        )
    properties.check_defined(worker, route.where, "JkMount")
    kind = properties.worker_type(worker)
    draft.put("proxy.backend_pool.module", "mod_jk", f"{route.where}: {shown(route)}")
    draft.put("proxy.backend_pool.scheme", "ajp", "mod_jk speaks AJP13")
    if kind in ("ajp13", "ajp14"):
        _pool(draft, properties, worker, per_child, mpm)
        return [_member(properties, worker, route.where)]
    if kind != "lb":
        declared = properties.worker(worker, "type")
        raise ConfigError(
            declared.where if declared else route.where,
            f"worker {worker} of type ajp13 or lb, not {kind}",
            "mount an ajp13 or lb worker",
        )
    members = properties.members(worker)
    for name, listed_at in members:
        properties.check_defined(name, listed_at, f"worker.{worker}.balance_workers")
        member_kind = properties.worker_type(name)
        if member_kind not in ("ajp13", "ajp14"):
            raise ConfigError(
                listed_at,
                f"lb members of type ajp13, but {name} is {member_kind}",
                "name ajp13 workers",
            )
    _pool(draft, properties, members[0][0], per_child, mpm)
    _lb(draft, properties, worker)
    return [_member(properties, name, where) for name, where in members]


def jk_properties(config: HttpdConfig, workers_file: Path | None) -> WorkersProperties:
    """--workers-properties, else JkWorkersFile (relative to ServerRoot), then the
    JkWorkerProperty lines."""
    extra = tuple((" ".join(d.args), d.where) for d in config.named("JkWorkerProperty"))
    if workers_file is None:
        given = config.server("JkWorkersFile")
        if given is not None:
            path = Path(given.args[0]) if given.args else None
            if path is not None and not path.is_absolute():
                path = config.server_root / path
            if path is None or not path.exists():
                if not extra:
                    raise ConfigError(
                        given.where,
                        f"JkWorkersFile names {path}, which is not here",
                        "pass its copy with --workers-properties FILE",
                    )
                path = None
            workers_file = path
        elif not extra:
            raise ConfigError(
                config.main_file,
                "a JkWorkersFile or JkWorkerProperty for the JkMount's worker",
                "pass --workers-properties FILE",
            )
    return read_workers_properties(workers_file, extra)


# The status workers upstream's conf/workers.properties defines (worker.jk-status.type=status,
# read_only; worker.jk-manager.type=status) and Debian's jk.conf mounts at /jk-status and
# /jk-manager, though Debian's workers.properties leaves their definitions out.
STOCK_STATUS_WORKERS = ("jk-status", "jk-manager")


def status_page(properties: WorkersProperties, worker: str) -> str | None:
    """Why a JkMount of `worker` is mod_jk's status page rather than a route to a backend
    (None when it is not one).  A `type=status` worker serves the status page itself
    (jk_status.c): no backend, no AJP connection, none of a load test's requests."""
    if worker in properties.workers() and properties.worker_type(worker) == "status":
        unlisted = (
            ""
            if worker in properties.listed()
            else " (not in worker.list: mod_jk does not create it and answers 500)"
        )
        return (
            f"status worker {worker}: mod_jk's status page, not a backend{unlisted}; not modelled"
        )
    if worker in STOCK_STATUS_WORKERS and worker not in properties.workers():
        source = properties.file or "the JkWorkerProperty lines"
        return (
            f"status worker {worker}: mod_jk's stock status page, not a backend; {source} does "
            f"not define it (mod_jk answers 500; upstream's defines worker.{worker}.type=status); "
            "not modelled"
        )
    return None


def status_mounts(
    config: HttpdConfig,
    draft: Draft,
    properties: WorkersProperties,
    mounts: list[Directive],
    target: Callable[[Directive], str | None],
) -> list[Directive]:
    """The JkMounts of mod_jk's status pages, each named as not modelled: Apache serves them
    itself and no load test's request reaches a backend through them.  Refused in one line
    when they are all the routes there are (Debian's stock jk.conf alone)."""
    status = []
    for mount in mounts:
        why = status_page(properties, str(target(mount)))
        if why is not None:
            draft.missing(mount.where, shown(mount), why)
            status.append(mount)
    if status and len(status) == len(mounts) and not _proxied(config, target):
        backends = [w for w in properties.listed() if mountable(properties, w)]
        raise ConfigError(
            config.main_file,
            "a ProxyPass, ProxyPassMatch or JkMount that sends requests to the backends; the "
            "JkMounts are mod_jk's status pages only ("
            + ", ".join(f"{shown(d)} at {d.where}" for d in status)
            + ")",
            "mount the application's URLs on an ajp13 or lb worker of worker.list, e.g. "
            f"JkMount /* {backends[0] if backends else 'WORKER'}",
        )
    return status


def _proxied(config: HttpdConfig, target: Callable[[Directive], str | None]) -> bool:
    """A ProxyPass or ProxyPassMatch that sends requests on (not a `!` exclusion)."""
    return any(
        target(d) not in (None, "!")
        for d in config.directives
        if d.name.lower() in ("proxypass", "proxypassmatch")
    )


def mountable(properties: WorkersProperties, worker: str) -> bool:
    """A worker mod_jk can send requests to a backend with: listed, and ajp13 or lb (a
    JkMount of a status worker, or of one worker.list omits, is no route to a backend)."""
    return (
        worker in properties.listed()
        and worker in properties.workers()
        and properties.worker_type(worker) in ("ajp13", "ajp14", "lb")
    )


def _member(properties: WorkersProperties, name: str, where: Where) -> Member:
    from sim.configs.members import Member

    host = properties.worker(name, "host")
    port = properties.worker(name, "port")
    factor = properties.worker(name, "lbfactor")
    weight, weight_source = float(JK["lbfactor"].value), JK["lbfactor"].reference
    if factor is not None:
        weight, weight_source = (
            as_number(factor, "lbfactor"),
            f"{factor.where}: worker.{name}.lbfactor={factor.value}",
        )
    return Member(
        name,
        host.value if host else str(JK["host"].value),
        int(as_number(port, "port")) if port else int(JK["port"].value),
        "ajp",
        weight,
        weight_source,
        (port or host or properties.worker(name, "type") or Property("", where)).where,
    )


def _pool(
    draft: Draft, properties: WorkersProperties, worker: str, per_child: int, mpm: str
) -> None:
    """The ajp13 worker's properties as `proxy.backend_pool.*` (times in ms unless noted)."""

    def prop(name: str) -> Property | None:
        return properties.worker(worker, name) or properties.worker(
            worker, _DEPRECATED.get(name, name)
        )

    def put(path: str, name: str, convert, default) -> float | None:
        found = prop(name)
        if found is not None:
            value = convert(as_number(found, name))
            draft.written(path, value, found.where, f"worker.{worker}.{name}={found.value}")
            return value
        draft.put(path, default[0], default[1])
        return default[0]

    size = prop("connection_pool_size")
    if size is not None:
        draft.written(
            "proxy.backend_pool.max",
            int(as_number(size, "connection_pool_size")),
            size.where,
            f"worker.{worker}.connection_pool_size={size.value}",
        )
    else:
        default = proxy_max(mpm, per_child)
        draft.put(
            "proxy.backend_pool.max",
            default.value,
            f"mod_jk connection_pool_size unset: {default.reference.split(': ', 1)[1]}",
        )
    put(
        "proxy.backend_pool.ttl_s",
        "connection_pool_timeout",
        lambda s: s or None,
        (None, JK["connection_pool_timeout"].reference),
    )
    socket_timeout = put(
        "proxy.backend_pool.timeout_s",
        "socket_timeout",
        lambda s: s or None,
        (None, JK["socket_timeout"].reference),
    )
    put(
        "proxy.backend_pool.reply_timeout_s",
        "reply_timeout",
        lambda ms: ms / 1000 or None,
        (None, JK["reply_timeout"].reference),
    )
    put(
        "proxy.backend_pool.socket_connect_timeout_s",
        "socket_connect_timeout",
        lambda ms: ms / 1000 or None,
        (
            socket_timeout,
            f"mod_jk socket_connect_timeout unset: socket_timeout x 1000 ms ({socket_timeout or 'none'})",
        ),
    )
    retries = put(
        "proxy.backend_pool.retries", "retries", int, (JK["retries"].value, JK["retries"].reference)
    )
    interval = put(
        "proxy.backend_pool.retry_interval_s",
        "retry_interval",
        lambda ms: ms / 1000,
        (0.1, JK["retry_interval"].reference),
    )
    put(
        "proxy.backend_pool.acquire_timeout_s",
        "connection_acquire_timeout",
        lambda ms: ms / 1000 or None,
        (
            round((retries or 0) * (interval or 0), 6) or None,
            f"mod_jk connection_acquire_timeout unset: retries x retry_interval = {retries} x {interval} s",
        ),
    )
    put(
        "proxy.backend_pool.recovery_options",
        "recovery_options",
        int,
        (0, JK["recovery_options"].reference),
    )
    for name, why in JK_NOT_MODELLED.items():
        found = prop(name)
        if found is not None:
            draft.missing(found.where, f"worker.{worker}.{name}={found.value}", why)


def _lb(draft: Draft, properties: WorkersProperties, worker: str) -> None:
    """The lb worker: balancing method, stickiness, recovery, and its own retries."""

    def prop(name: str) -> Property | None:
        return properties.worker(worker, name)

    method = prop("method")
    if method is not None:
        policy = JK_METHODS.get(method.value.strip()[:1].lower())
        if policy is None:
            raise ConfigError(
                method.where, f"method R, S, T or B, not {method.value!r}", "fix worker.X.method"
            )
        draft.written(
            "balancer.policy", policy, method.where, f"worker.{worker}.method={method.value}"
        )
    else:
        draft.put("balancer.policy", "mod_jk_request", JK["method"].reference)
    for name, path in (
        ("sticky_session", "balancer.sticky_session"),
        ("sticky_session_force", "balancer.sticky_session_force"),
    ):
        found = prop(name)
        if found is not None:
            draft.written(
                path, as_bool(found), found.where, f"worker.{worker}.{name}={found.value}"
            )
        else:
            draft.default(path, JK[name])
    recover = prop("recover_time")
    if recover is not None:
        draft.written(
            "balancer.retry_s",
            as_number(recover, "recover_time"),
            recover.where,
            f"worker.{worker}.recover_time={recover.value}",
        )
    else:
        draft.default("balancer.retry_s", JK["recover_time"])
    maintain = properties.get("worker.maintain")
    if maintain is not None:
        draft.written(
            "balancer.maintain_s",
            as_number(maintain, "worker.maintain"),
            maintain.where,
            f"worker.maintain={maintain.value}",
        )
    else:
        draft.default("balancer.maintain_s", JK["maintain"])
    for name, path, convert in (
        ("retries", "proxy.backend_pool.lb.retries", int),
        ("lb_retries", "proxy.backend_pool.lb.lb_retries", int),
        ("retry_interval", "proxy.backend_pool.lb.retry_interval_s", lambda ms: ms / 1000),
        ("max_reply_timeouts", "proxy.backend_pool.lb.max_reply_timeouts", int),
        ("error_escalation_time", "proxy.backend_pool.lb.error_escalation_time_s", float),
    ):
        found = prop(name)
        if found is not None:
            draft.written(
                path,
                convert(as_number(found, name)),
                found.where,
                f"worker.{worker}.{name}={found.value}",
            )
    for name, why in JK_NOT_MODELLED.items():
        found = prop(name)
        if found is not None:
            draft.missing(found.where, f"worker.{worker}.{name}={found.value}", why)


_DEPRECATED = {
    "connection_pool_size": "cachesize",
    "connection_pool_timeout": "cache_timeout",
}
