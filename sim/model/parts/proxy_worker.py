"""The front's worker for each node (`proxy.backend_pool`): how the connections it pools to a
node are kept, timed out and retried -- mod_proxy's `ProxyPass` worker parameters (`ttl`,
`acquire`, `timeout`, `connectiontimeout`, `disablereuse`) or mod_jk's ajp13 worker
(workers.properties `reply_timeout`, `socket_connect_timeout`, `retries`, `retry_interval`,
`recovery_options`).  How many connections and which status a read timeout answers are the
front's (`sim.model.parts.front`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate
from sim.tiers.proxy.mod_jk import JkWorker


@dataclass(frozen=True)
class ProxyWorker(StackPart):
    """The settings every node's pool of connections from the front shares."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "mod_jk.ajp13": approximate(
            "mod_jk's retries of abandoned or refused requests are extra load the network does "
            "not see"
        ),
    }

    # an idle connection older than this is closed, not reused (mod_proxy `ttl`); None: never
    ttl_s: float | None
    # a request waits this long for a free pooled connection, then 503 (mod_proxy `acquire`)
    acquire_timeout_s: float | None
    # a request on a connection no backend thread has taken fails after this (`ProxyPass
    # timeout=`, `proxy.backend_pool.timeout_s`); None: wait for ever
    read_timeout_s: float | None
    disable_reuse: bool  # mod_proxy `disablereuse=On`: a connection per request, closed after it
    # a connect waits this long for the node to accept (mod_proxy `connectiontimeout`, the
    # worker's timeout unless set apart); None with mod_jk, whose ajp13 worker times its own
    connect_timeout_s: float | None
    jk: JkWorker | None  # mod_jk's ajp13 worker (its reply timeout, retries); None: mod_proxy
    # mod_jk's own timeouts and retries can act (`sim.model.backend_pools.jk_acts`)
    jk_acts: bool = False

    def features(self) -> dict[str, str]:
        if not self.jk_acts:
            return {}
        timeout = None if self.jk is None else self.jk.reply_timeout_s
        return {
            "mod_jk.ajp13": (
                f"proxy.backend_pool.reply_timeout_s = {timeout:g}: mod_jk's reply timeout and "
                "retries"
                if timeout is not None
                else "backends.N.events: mod_jk's retries of refused connects"
            )
        }


def proxy_worker(proxy: Any, mod_jk: bool, jk_acts: bool) -> ProxyWorker:
    """The worker of `proxy` (the model's `sim.model.schema.Proxy`); `mod_jk`: the front
    forwards through mod_jk (`Front.mod_jk`); `jk_acts`: its ajp13 worker's timeouts and
    retries can act (`sim.model.backend_pools.jk_acts`)."""
    settings = proxy.backend_pool
    return ProxyWorker(
        ttl_s=settings.ttl_s,
        acquire_timeout_s=settings.acquire_timeout_s,
        read_timeout_s=settings.timeout_s,
        disable_reuse=settings.disable_reuse,
        connect_timeout_s=None if mod_jk else settings.connect_timeout_s,
        jk=JkWorker.of(settings) if mod_jk else None,
        jk_acts=jk_acts,
    )
