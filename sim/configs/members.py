"""A backend node as the front's configuration names it, whichever module routes to it."""

from __future__ import annotations

from dataclasses import dataclass

from sim.configs.errors import Where


@dataclass
class Member:
    """A backend node the front sends to: a BalancerMember, a ProxyPass worker, a mod_jk
    ajp13 worker."""

    name: str  # the mod_jk worker's name, else the host
    host: str
    port: int | None
    scheme: str  # http or ajp
    weight: float
    weight_source: str
    where: Where
