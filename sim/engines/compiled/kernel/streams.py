"""Random numbers and the driver's callbacks (`sim.random.streams`): the reference's own
streams, drawn by the driver in blocks (`sim.engines.compiled.engine`) and read here one
number at a time; the session scripts' Markov chains, drawn by the driver.
"""

from __future__ import annotations

from numba import njit, objmode

from sim.engines.compiled.kernel.layout import (
    STREAM_CONSTANT,
)

# The driver's refill callbacks, by token: refill(stream) overwrites that stream's block.
REFILLS: dict = {}

# The driver's --timeseries callbacks, by token: sample(first) reads the row in TSROW.
SAMPLERS: dict = {}

# The driver's session scripts with a Markov chain, by token: the reference's `ScriptChoice`
# over the steps (its classes are the step numbers), drawing each path from its own stream.
SCRIPTS: dict = {}


def refill_stream(token: int, stream: int) -> None:
    REFILLS[token](stream)


def emit_sample(token: int, first: int) -> None:
    SAMPLERS[token](first)


def script_choose(token: int, user: int) -> int:
    return SCRIPTS[token].choose(user)


def script_begin(token: int, session: int) -> int:
    return SCRIPTS[token].begin(session)


@njit(cache=True)
def _refill(token, stream):
    with objmode():
        refill_stream(token, stream)


@njit(cache=True)
def draw(S, stream):
    if S.SKIND[stream] == STREAM_CONSTANT:
        return S.SVAL[stream]
    position = S.DPOS
    p = position[stream]
    block = S.DRAW
    if p >= block.shape[1]:
        _refill(S.TOKEN, stream)
        p = 0
    position[stream] = p + 1
    return block[stream, p]


@njit(cache=True)
def chain_choose(token, user):
    """ScriptChoice.choose in the driver: the user's next step (a new path when used up)."""
    with objmode(step="int64"):
        step = script_choose(token, user)
    return step


@njit(cache=True)
def chain_begin(token, session):
    """ScriptChoice.begin in the driver: a session's path, drawn whole; its length."""
    with objmode(length="int64"):
        length = script_begin(token, session)
    return length
