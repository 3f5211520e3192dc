"""The proxy's choice of backend node.  Issue-4 policies plug in behind the same `pick`."""
from __future__ import annotations

from typing import Sequence

from sim.engine.request import Reply, Request
from sim.engine.station import Station


class Dispatcher:
    """Sends each request to one node chosen by `policy`, tracking requests outstanding per node."""

    __slots__ = ("nodes", "policy", "_next", "outstanding", "dispatched", "_rng_pick")

    def __init__(self, nodes: Sequence[Station], policy: str, rng) -> None:
        self.nodes = list(nodes)
        self.policy = policy
        self._next = 0
        self.outstanding = [0] * len(self.nodes)
        self.dispatched = [0] * len(self.nodes)
        n = len(self.nodes)
        self._rng_pick = _uniform_indices(rng, n) if policy == "random" else None

    def pick(self) -> int:
        n = len(self.nodes)
        if n == 1:
            return 0
        if self.policy == "round_robin":
            index = self._next
            self._next = (index + 1) % n
            return index
        if self.policy == "random":
            return self._rng_pick()
        # least_outstanding: fewest in flight, ties broken by rotation so no node is favoured.
        start = self._next
        self._next = (start + 1) % n
        best, best_load = start, self.outstanding[start]
        for offset in range(1, n):
            i = (start + offset) % n
            if self.outstanding[i] < best_load:
                best, best_load = i, self.outstanding[i]
        return best

    def __call__(self, request: Request, reply: Reply) -> None:
        index = self.pick()
        self.outstanding[index] += 1
        self.dispatched[index] += 1
        self.nodes[index].serve(request, _Returned(self, index, reply))


class _Returned:
    __slots__ = ("dispatcher", "index", "reply")

    def __init__(self, dispatcher: Dispatcher, index: int, reply: Reply) -> None:
        self.dispatcher = dispatcher
        self.index = index
        self.reply = reply

    def __call__(self, request: Request, ok: bool) -> None:
        self.dispatcher.outstanding[self.index] -= 1
        self.reply(request, ok)


def _uniform_indices(rng, n: int, block: int = 4096):
    buffer: list[int] = []

    def draw() -> int:
        if not buffer:
            buffer.extend(rng.integers(0, n, size=block).tolist()[::-1])
        return buffer.pop()

    return draw
