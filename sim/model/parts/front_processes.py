"""httpd's children and their management (`[proxy]`'s MPM directives) as the engines build
them: the children's threads, how many start, and the parent's spawning and reaping of idle
children (`proxy.start_servers` and the spare directives).

The directives as httpd runs them, after its own adjustments (ThreadLimit, ServerLimit,
MaxRequestWorkers rounded to whole children: AH00180, AH00310-AH00318), are
`sim.model.schema.Processes`; this part is what the engines read of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sim.model.features import Declaration, StackPart, approximate
from sim.tiers.proxy.mpm import mpm as mpm_class


@dataclass(frozen=True)
class ProcessManagement:
    """The parent's maintenance of idle children (server/mpm_common: `perform_idle_server_
    maintenance`), modelled when `proxy.start_servers` (StartServers) is given."""

    prefork: bool  # a child is one worker (the prefork MPM): spares count children, not threads
    min_spare: int  # MinSpareServers (prefork) or MinSpareThreads (worker, event)
    max_spare: int  # MaxSpareServers or MaxSpareThreads, as httpd raises it
    graceful_restart: bool  # `proxy.graceful_restart`: a graceful restart (`apachectl -k graceful`)
    uptime_s: float  # `proxy.uptime_s`: how long httpd has run when the load starts [s]


@dataclass(frozen=True)
class FrontProcesses(StackPart):
    """httpd's children (individuals when `sim.model.stack.children_matter` says so)."""

    DECLARATIONS: ClassVar[dict[str, Declaration]] = {
        "proxy.process_management": approximate(
            "children are spawned over time (process management): the start is a transient"
        ),
    }

    threads_per_child: int  # ThreadsPerChild (1 for prefork)
    # the children that can run at once: MaxRequestWorkers / ThreadsPerChild, capped by
    # ServerLimit (its scoreboard slots)
    max_children: int
    start_children: int  # StartServers, capped by the children httpd can run; all when unset
    # the event MPM's connections per idle worker (AsyncRequestWorkerFactor, its whole part);
    # None for the other MPMs
    async_factor: int | None
    management: ProcessManagement | None  # None: every child ready from the start, for ever

    def features(self) -> dict[str, str]:
        if self.management is None:
            return {}
        return {
            "proxy.process_management": (
                "proxy.start_servers (httpd's process management: spare servers or threads, "
                "spawning, graceful restart)"
            )
        }


def front_processes(proxy: Any) -> FrontProcesses | None:
    """The children of `proxy` (the model's `sim.model.schema.Proxy`), None with unbounded
    workers (no children to count)."""
    processes = proxy.processes
    if processes is None:
        return None
    management = None
    if proxy.start_servers is not None:
        management = ProcessManagement(
            prefork=mpm_class(proxy.mpm).single_threaded_children,
            min_spare=processes.min_spare,
            max_spare=processes.max_spare,
            graceful_restart=proxy.graceful_restart,
            uptime_s=proxy.uptime_s,
        )
    return FrontProcesses(
        threads_per_child=processes.threads_per_child,
        max_children=processes.max_children,
        start_children=processes.start,
        async_factor=processes.async_factor,
        management=management,
    )
