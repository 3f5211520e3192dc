"""How users pick the class of each request: a mix, a class per user, or a session script.

A population with classes holds one of these as `classes`: it is asked for the class of each
new request (`choose(user)`; a retry keeps its request's class), for the think time after a
user's response (`think(user)`: a script's step has its own), and by partly-open sessions for
a session's length (`begin(session)`).  It also carries the per-class statistics the
population counts outcomes into (`stats`, `sim.observe.classes.ClassStats`).

Scripts are TPC-W's customer behaviour model graphs (CBMG; Menascé & Almeida, *Scaling for
E-Business*, 2000): a session starts at the first step and moves to the next step by the
transition probabilities until it reaches the end.  The whole path of a session is drawn when
the session begins, so that a partly-open session knows its length; a closed user or an `ab`
loop starts a new session when its path is used up (JMeter's thread group looping over its
test plan, as seed 004's 20 sessions of seven requests).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate

import numpy as np

from sim.observe.classes import ClassStats
from sim.random.distributions import BLOCK

Sampler = Callable[[], float]


class ClassChoice:
    """The base: statistics, and the population's own think time."""

    def __init__(self, stats: ClassStats, think: Sampler | None) -> None:
        self.stats = stats
        self._think = think

    def choose(self, user) -> int:
        raise NotImplementedError

    def think(self, user) -> float:
        think = self._think
        assert think is not None  # asked only by populations that think (closed, sessions)
        return think()

    def begin(self, session) -> int | None:
        """A partly-open session starts: its number of requests (None: the population's own)."""
        return None

    def forget(self, session) -> None:
        """A partly-open session is over."""


class MixPerRequest(ClassChoice):
    """Every request draws its class from the mix (`clients.mix`, `mix_by = "request"`)."""

    def __init__(self, stats, think, probabilities: list[float], rng: np.random.Generator) -> None:
        super().__init__(stats, think)
        self._cumulative = list(accumulate(probabilities))
        self._cumulative[-1] = 1.0
        self._uniform = _uniforms(rng)

    def choose(self, user) -> int:
        return bisect_right(self._cumulative, self._uniform())


class MixPerUser(ClassChoice):
    """Each user keeps one class (`mix_by = "user"`): the first n_1 users are class 1, the next
    n_2 class 2, ... -- fixed populations per class, a multi-chain closed network."""

    def __init__(self, stats, think, users_per_class: tuple[int, ...]) -> None:
        super().__init__(stats, think)
        self._ends = list(accumulate(users_per_class))

    def choose(self, user) -> int:
        return bisect_right(self._ends, user)


class ScriptChoice(ClassChoice):
    """A session script: the steps' classes, in order or by the Markov chain."""

    def __init__(
        self,
        stats,
        think,
        classes: list[int],
        successors: list[list[tuple[int | None, float]]],
        step_thinks: list[Sampler | None],
        rng: np.random.Generator | None,
    ) -> None:
        super().__init__(stats, think)
        self._classes = classes  # per step: its class index
        self._step_thinks = [own or think for own in step_thinks]
        linear = all(len(row) == 1 for row in successors)
        self._next = [row[0][0] for row in successors] if linear else None
        self._rows = [
            ([j for j, _ in row], list(accumulate(p for _, p in row))) for row in successors
        ]
        self._uniform = None if rng is None or linear else _uniforms(rng)
        self._paths: dict = {}  # user -> remaining steps of its session (reversed)
        self._last: dict = {}  # user -> the step of its latest request

    def _path(self) -> list[int]:
        steps: list[int] = []
        step: int | None = 0
        while step is not None:
            steps.append(step)
            if self._next is not None:
                step = self._next[step]
            else:
                targets, cumulative = self._rows[step]
                uniform = self._uniform
                assert uniform is not None  # a script that branches has its stream
                pick = bisect_right(cumulative, uniform() * cumulative[-1])
                step = targets[min(pick, len(targets) - 1)]
        steps.reverse()
        return steps

    def begin(self, session) -> int:
        path = self._paths[session] = self._path()
        return len(path)

    def choose(self, user) -> int:
        path = self._paths.get(user)
        if not path:
            path = self._paths[user] = self._path()  # a new session of a returning user
        step = self._last[user] = path.pop()
        return self._classes[step]

    def think(self, user) -> float:
        return self._step_thinks[self._last[user]]()

    def forget(self, session) -> None:
        self._paths.pop(session, None)
        self._last.pop(session, None)


def _uniforms(rng: np.random.Generator, block: int = BLOCK) -> Sampler:
    buffer: list[float] = []
    pop = buffer.pop

    def draw() -> float:
        if not buffer:
            buffer.extend(rng.random(block).tolist()[::-1])
        return pop()

    return draw
