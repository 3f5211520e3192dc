"""A host's CPU, and whether it is ever shared: the one place that decides which of the two
exact forms an engine builds (`sim.kernel.cpu`: `DedicatedCPU` or `ProcessorSharingCPU`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostCpu:
    """The CPU of one host (`proxy.cpu`, `tomcat1.cpu`, `database.cpu`, `clients.cpu`):
    `cores` cores (`backends.N.cores`, `proxy.cores`, ...) at relative `speed`.

    `dedicated`: at most as many visits compute at once as the CPU has cores, because a slot
    pool no larger than the cores bounds them (Tomcat `maxThreads`, PostgreSQL
    `max_connections`, httpd `MaxRequestWorkers`): no two bursts ever share a core, and the
    cheaper dedicated form is exact.  Otherwise the CPU is processor-shared."""

    name: str  # the component: `<host>.cpu`
    cores: int
    speed: float
    dedicated: bool


def host_cpu(host: str, cores: int, speed: float, slots: int | None) -> HostCpu:
    """The CPU of `host` when at most `slots` visits compute at once (None: unbounded)."""
    return HostCpu(f"{host}.cpu", cores, speed, slots is not None and slots <= cores)
