"""Apache httpd's multi-processing modules (`proxy.mpm`), each a class behind one interface.

An MPM decides what holds a worker between and after requests, and how workers are grouped
into child processes:

* `prefork` (`server/mpm/prefork/prefork.c`): one single-threaded child per worker; the
  worker keeps a persistent connection through `KeepAliveTimeout` and drains a closing
  client itself (lingering close); each child has its own one-connection backend pool.
* `worker` (`server/mpm/worker/worker.c`): children of `ThreadsPerChild` threads; a thread
  still keeps its connection through keep-alive and lingering close.
* `event` (`server/mpm/event/event.c`): as worker, but the listener holds idle keep-alive and
  lingering connections, so they hold no worker; a child accepts only up to
  `ThreadsPerChild + AsyncRequestWorkerFactor x idle workers` connections.

The front's components ask the MPM, never compare its name: a new MPM is one class here (and
its directives in the schema's `Proxy`)."""

from __future__ import annotations

from typing import Any, ClassVar


class Mpm:
    name: ClassVar[str]
    feature: ClassVar[str]  # `mpm.<name>`: what an engine must declare to run it
    # what `tiersim solve` does with it (`sim.model.features`)
    product_form: ClassVar[str | None] = (
        "the MPM decides what holds a worker; each such hold is its own feature"
    )
    approximation: ClassVar[str | None] = None
    # one thread per child process (prefork): children are workers
    single_threaded_children: ClassVar[bool] = False
    # the listener, not a worker, holds idle keep-alive and lingering connections (event)
    listener_holds_idle_connections: ClassVar[bool] = False
    # a child stops accepting at ThreadsPerChild + AsyncRequestWorkerFactor x idle workers
    limits_connections_by_idle_workers: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.feature = f"mpm.{cls.name}"


class Prefork(Mpm):
    name = "prefork"
    single_threaded_children = True


class Worker(Mpm):
    name = "worker"


class Event(Worker):
    name = "event"
    listener_holds_idle_connections = True
    limits_connections_by_idle_workers = True


MPMS: dict[str, type[Mpm]] = {m.name: m for m in (Prefork, Worker, Event)}


def mpm(name: str) -> type[Mpm]:
    """The MPM class of `proxy.mpm`."""
    return MPMS[name]
