"""Executors: where the simulations of a study run — serially, in a pool of local worker
processes, or on a Dask cluster — for every study alike (sweep points, reproduction rows,
calibration evaluations and `[[choose]]` candidates, capacity searches, parameter draws).  Each
task is a pure function of its data (its seed is in it, never taken from where it runs), so the
numbers are the same on any executor."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, as_completed, wait
from typing import Any, Literal

from sim.run.warm import load_engines
from sim.studies.sweep.point import run_point

# A study run as steps (`Executor.interleave`): yields a batch of tasks, is sent their results.
Steps = Generator[list, list, Any]


class LostWork(RuntimeError):
    """Workers died (a killed process, a lost Dask worker or scheduler): their tasks have no
    result.  What the study recorded before (a sweep's points, a calibration's cache) stays."""


class LostPoints(LostWork):
    """A sweep's (or a search's) points lost with their workers: those were not recorded."""


# --------------------------------------------------------------------------- executors
class Executor:
    """Runs tasks: `map(fn, items, ...)` in order (reproductions' rows, calibration's runs,
    parameter draws), `map_unordered(tasks, fn)` as they finish (sweep points, recorded as
    they come), and `interleave(studies, fn)`: studies run as steps side by side (a capacity
    range's searches, one per parameter draw).  `fn` must be picklable (a module-level
    function, plain data) for any executor but the serial one; a worker lost raises
    `LostWork`, an error of `fn` itself is raised as it is."""

    @property
    def slots(self) -> int:
        """Tasks at a time (a capacity search evaluates this many points per round)."""
        return 1

    def start(self) -> None:
        """Start the workers now (a pool's processes fork at its first task otherwise)."""

    def map_unordered(self, tasks: list, fn: Callable[[Any], Any] | None = None) -> Iterator:
        raise NotImplementedError

    def map(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterator:
        """`fn(*args)` for each tuple of `iterables`' items (as the builtin `map`), every task
        submitted at once, results in order (the same numbers in any executor)."""
        raise NotImplementedError

    def interleave(self, studies: list[Steps], fn: Callable[[Any], Any] | None = None) -> Iterator:
        """Many studies of steps side by side (each a generator that yields a batch of tasks,
        is sent their results in the batch's order, and returns its answer; a capacity search
        at each parameter draw): every study's first batch is submitted at once, and each next
        batch as soon as that study's previous one has returned, so that no study waits for
        another's slowest point and the workers stay busy.  The answers come in the studies'
        order (as `map`'s).  Each task carries its own seed and a study's next batch depends on
        its own results alone, so the answers are the same on any executor, serial included."""
        fn = fn or run_point
        answers: dict[int, Any] = {}
        batches: dict[int, list] = {}  # a study -> its batch's futures, in the batch's order
        owners: dict[Any, int] = {}  # a pending future -> its study

        def advance(index: int, results: list | None) -> None:
            study = studies[index]
            tasks: list = []
            while not tasks:  # an empty batch has its (no) results at once
                try:
                    tasks = next(study) if results is None else study.send(results)
                except StopIteration as finished:
                    answers[index] = finished.value
                    return
                results = []
            batches[index] = [self._submit(fn, task) for task in tasks]
            owners.update((future, index) for future in batches[index])

        try:
            for index in range(len(studies)):
                advance(index, None)
            for index in range(len(studies)):
                while index not in answers:
                    for future in self._first_done(list(owners)):
                        owner = owners.pop(future)
                        if not any(f in owners for f in batches[owner]):
                            results = [self._result(f) for f in batches.pop(owner)]
                            advance(owner, results)
                yield answers.pop(index)
        finally:
            self._cancel(list(owners))

    # What `interleave` needs of an executor: submit one task, wait for some to finish, read a
    # finished one's result (a lost worker as `LostWork`), cancel the rest.
    def _submit(self, fn: Callable[[Any], Any], task: Any) -> Any:
        future: Future = Future()
        try:
            future.set_result(fn(task))
        except Exception as exc:  # raised where the result is read, as a pool's future does
            future.set_exception(exc)
        return future

    def _first_done(self, pending: list) -> Iterable:
        return [f for f in pending if f.done()]

    def _result(self, future: Any) -> Any:
        return future.result()

    def _cancel(self, pending: list) -> None:
        for future in pending:
            future.cancel()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> Literal[False]:
        self.close()
        return False

    def close(self) -> None:
        pass

    def describe(self) -> str:
        raise NotImplementedError


class SerialExecutor(Executor):
    def __init__(self) -> None:
        load_engines()  # every run of the study where `auto` sends it in a warm process

    def map_unordered(self, tasks, fn=None):
        fn = fn or run_point  # looked up at call time (a test may replace it)
        for task in tasks:
            yield fn(task)

    def map(self, fn, *iterables):
        return map(fn, *iterables)

    def describe(self) -> str:
        return "serially"


def local_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset`
    narrows), else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what to keep.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# A short run whose random streams use up their first block of draws (4 096 each).
_REFILLED = {
    "clients": {"kind": "closed", "users": 2, "think": {"dist": "exponential", "mean": 0.1}},
    "backends": [{"name": "node", "demand": {"dist": "exponential", "mean": 0.01}}],
    "run": {"requests": 6000, "engine": "compiled", "warmup": "none"},
}


def first_use_before_fork() -> None:
    """What each worker would otherwise do at its first run, done once in this process before
    the workers fork from it (`load_engines` has loaded the engines): import scipy.special (a
    replication's Student-t interval, `sim.stats.confidence.t_quantile`), and have numba compile
    the compiled loop's call back into Python that refills a random stream's block of draws
    (an `objmode` block: numba compiles it in each process at its first use, it is not cached
    with the loop), by a short run of random streams.  Each costs about 0.06 s of CPU a
    worker; a run's numbers do not depend on it."""
    from sim.stats.confidence import t_quantile

    t_quantile(0.975, 1)
    from sim.engines import numba_missing

    if numba_missing() is not None:
        return
    from sim.engines.compiled import kernel

    if not kernel.is_warm():  # the first real run compiles the loop, announced; not here
        return
    from sim.engines.compiled.engine import run_trace
    from sim.model.load import parse_model
    from sim.model.plan import compile_plan

    run_trace(compile_plan(parse_model(_REFILLED, source="<first use>")), 0, 1)


class ProcessExecutor(Executor):
    """A pool of worker processes, reused for every point (start-up paid once per worker).
    The engines are loaded here first (`sim.run.warm`): the workers, forked from this process
    at the first task, start with them loaded, once for all, instead of each importing numba
    and running its first small runs on the reference engine; and with what a first run
    imports and compiles besides (`first_use_before_fork`)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or local_cores()
        load_engines()
        first_use_before_fork()
        self.pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_ignore_interrupts)

    def start(self) -> None:
        # A pool of forked processes forks all its workers at its first task, here and now.
        self.pool.submit(int, 0)

    def map(self, fn, *iterables):
        from concurrent.futures.process import BrokenProcessPool

        try:
            results = self.pool.map(fn, *iterables)  # submitted now; results come in order
        except BrokenProcessPool:  # a worker died before (another map's task killed it)
            raise LostWork(POOL_BROKEN) from None
        return _lost_pool_is_lost_work(results)

    @property
    def slots(self) -> int:
        return self.workers

    def map_unordered(self, tasks, fn=None):
        from concurrent.futures.process import BrokenProcessPool

        fn = fn or run_point
        futures = [self.pool.submit(fn, task) for task in tasks]
        lost = 0
        try:
            for future in as_completed(futures):
                try:
                    record = future.result()
                except BrokenProcessPool:
                    lost += 1  # every point still running or queued when a worker died
                    continue
                yield record  # a point that finished before the death is kept, whatever the order
        finally:
            for future in futures:
                future.cancel()
        if lost:
            raise LostPoints(f"a worker process died; {lost} point(s) were not recorded")

    def _submit(self, fn, task):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.pool.submit(fn, task)
        except BrokenProcessPool:
            raise LostWork(POOL_BROKEN) from None

    def _first_done(self, pending):
        return wait(pending, return_when=FIRST_COMPLETED).done

    def _result(self, future):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool:
            raise LostWork(POOL_BROKEN) from None

    def close(self) -> None:
        # Running points are abandoned at once (Ctrl-C must not wait for them): they were not
        # recorded, so the next run does them again.  The pool has no public terminate.
        for process in list(getattr(self.pool, "_processes", {}).values()):
            if process.is_alive():
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def describe(self) -> str:
        return f"on {self.workers} local worker process{'es' if self.workers != 1 else ''}"


def _lost_pool_is_lost_work(results: Iterator) -> Iterator:
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield from results
    except BrokenProcessPool:
        raise LostWork(POOL_BROKEN) from None


POOL_BROKEN = "a worker process died (killed, or out of memory)"


class DaskExecutor(Executor):
    """An existing Dask cluster (`address`) or a `LocalCluster` of `local_workers` processes."""

    def __init__(
        self,
        address: str | None = None,
        local_workers: int | None = None,
        processes: bool = True,
        connect_timeout_s: float = 10.0,
    ) -> None:
        from dask.distributed import Client, LocalCluster

        self.cluster = None
        if address is None:
            self.cluster = LocalCluster(
                n_workers=local_workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=":0",  # any free port: another cluster here may hold 8787
            )
            self.client = Client(self.cluster)
        else:
            # a dead or silent scheduler is said in seconds, not after minutes of retries
            self.client = Client(address, timeout=f"{connect_timeout_s}s")
        self.address = address

    @property
    def slots(self) -> int:
        """The cluster's worker threads now (a scheduler may gain or lose workers later)."""
        workers = self.client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))

    def map(self, fn, *iterables):
        futures = self.client.map(fn, *(list(items) for items in iterables), pure=False)
        return self._in_order(futures)

    def _in_order(self, futures: list) -> Iterator:
        try:
            for future in futures:
                yield self._result(future)
        finally:
            # the tasks not needed any more (an error, Ctrl-C); none when the client is closed
            self._cancel(futures)

    def _result(self, future):
        from concurrent.futures import CancelledError

        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError

        try:
            return future.result()
        except KilledWorker as exc:
            where = getattr(getattr(exc, "last_worker", None), "address", None)
            raise LostWork(
                "a Dask worker died running a task" + (f" (at {where})" if where else "")
            ) from None
        except (CancelledError, CommClosedError) as exc:
            name = type(exc).__name__
            raise LostWork(f"the Dask cluster went away ({name})") from None

    def _submit(self, fn, task):
        return self.client.submit(fn, task, pure=False)

    def _first_done(self, pending):
        from distributed import wait as dask_wait

        return dask_wait(pending, return_when="FIRST_COMPLETED").done

    def _cancel(self, pending):
        with contextlib.suppress(Exception):
            self.client.cancel(pending)

    def map_unordered(self, tasks, fn=None):
        from dask.distributed import as_completed as dask_completed

        fn = fn or run_point
        futures = [
            self.client.submit(
                fn, task, key=f"tiersim-task-{getattr(task, 'point_id', i)}", pure=False
            )
            for i, task in enumerate(tasks)
        ]
        lost = 0
        try:
            for future in dask_completed(futures):
                try:
                    record = future.result()
                except Exception:
                    lost += 1
                    continue
                yield record
        finally:
            self.client.cancel(futures)
        if lost:
            raise LostPoints(f"{lost} point(s) were lost with their Dask workers and not recorded")

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> str:
        if self.address:
            return f"on the Dask cluster at {self.address}"
        assert self.cluster is not None  # no address: a LocalCluster was made
        return f"on a Dask LocalCluster of {len(self.cluster.workers)} worker(s)"
