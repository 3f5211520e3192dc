"""`Executor.interleave`: studies run as steps side by side (a capacity range's draws), each
study's next batch submitted as soon as its own last batch returned, the answers in the
studies' order and the same on every executor."""

from __future__ import annotations

import os
from concurrent.futures import Future

import pytest

from sim.studies.executor import Executor, LostWork, ProcessExecutor, SerialExecutor


def halving(start: int):
    """A study whose next batch depends on its last results: the negated halves of a number,
    a batch of one or two points, down to 1 (a search's shape: its length depends on where it
    starts).  Returns every result it was sent, in order."""
    seen: list[int] = []
    value = start
    while value > 1:
        batch = [-value, -(value // 2)] if value % 3 == 0 else [-value]
        results = yield batch
        seen.extend(results)
        value = results[-1] // 2
    return seen


def expected(start: int) -> list[int]:
    seen, value = [], start
    while value > 1:
        seen += [value, value // 2] if value % 3 == 0 else [value]
        value = seen[-1] // 2
    return seen


STARTS = [1000, 3, 1, 96, 7, 4096]


def test_interleaved_studies_answer_in_their_order_on_any_executor():
    want = [expected(s) for s in STARTS]
    assert want[2] == [] and any(len(w) > 6 for w in want)  # an empty study, and long ones
    serial = list(SerialExecutor().interleave([halving(s) for s in STARTS], abs))
    with ProcessExecutor(2) as pool:
        pooled = list(pool.interleave([halving(s) for s in STARTS], abs))
    assert serial == pooled == want


class Held(Executor):
    """Runs a task only when the driver waits, and then the newest pending one first, except
    a "slow" task, held back while any other is pending: a point that takes long."""

    def __init__(self) -> None:
        self.pending: list[tuple[Future, object]] = []
        self.finished: list[object] = []

    def _submit(self, fn, task):
        future: Future = Future()
        self.pending.append((future, task))
        return future

    def _first_done(self, pending):
        quick = [(f, t) for f, t in self.pending if t != "slow"]
        future, task = (quick or self.pending)[-1]
        self.pending.remove((future, task))
        future.set_result(task)
        self.finished.append(task)
        return [future]


def one_slow_point():
    return (yield ["slow"])


def three_quick_steps():
    answers = []
    for step in (1, 2, 3):
        answers += yield [step]
    return answers


def test_a_study_goes_on_while_another_waits_for_its_slow_point():
    """No rounds: the second study's next point is submitted as its last one returns, while
    the first study's slow point is still running, not after it."""
    held = Held()
    answers = list(held.interleave([one_slow_point(), three_quick_steps()]))
    assert answers == [["slow"], [1, 2, 3]]
    assert held.finished == [1, 2, 3, "slow"]


def test_an_error_of_a_task_is_raised_as_it_is():
    def failing():
        yield ["not a number"]

    with pytest.raises(ValueError, match="invalid literal"):
        list(SerialExecutor().interleave([halving(8), failing()], int))


def die(_: object) -> None:
    os._exit(3)  # a worker killed (out of memory, a node lost)


def test_a_dead_worker_loses_the_interleaved_studies():
    def dying():
        yield [0]

    with ProcessExecutor(1) as pool, pytest.raises(LostWork, match="a worker process died"):
        list(pool.interleave([dying()], die))


def test_the_draws_points_are_drawn_in_a_thread_once_the_workers_are_forked():
    """`draw_points_ahead`: the calibration's points at the question's seed, drawn in a thread
    started only after the pool forked its workers (a fork during the thread's imports would
    leave a worker an import lock that nobody releases)."""
    import threading
    from types import SimpleNamespace

    from sim.studies.capacity.question import draw_points_ahead

    order: list = []

    class Pool:
        def start(self) -> None:
            order.append("workers forked")

    class Calibration:
        def points(self, draws: int, seed: int) -> list[str]:
            order.append((draws, seed, threading.current_thread().name))
            return ["a point"]

    question = SimpleNamespace(base=SimpleNamespace(seed=7))
    ahead = draw_points_ahead(question, Calibration(), 8, Pool())
    assert ahead.result(timeout=30) == ["a point"]
    assert order == ["workers forked", (8, 7, "parameter draws")]
