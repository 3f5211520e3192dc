"""Statistics of one replication in constant memory, with warm-up removal after the fact.

Every statistic in the model is a *cumulative* counter (completions, summed response
time, time-integrals of busy slots and queue lengths, ...).  The recorder snapshots all of
them at batch boundaries (every `batch` completed responses), together with a cumulative
log-binned histogram of response times.  Any window [row i, row j] is then a difference of
two snapshots, so warm-up can be removed *after* the run, where MSER (White 1997) places it.
When the table reaches 2K rows, every other row is dropped: that merges adjacent batches
(the batch size doubles) and keeps memory constant however long the run.

Batch boundaries are counted in completions, never in the length of the buffer of values
waiting to be binned: whoever flushes the buffer (a --timeseries sample, a checkpoint) must
not move a boundary, or observing a run would change its answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sim.stats.histogram import LogBins

BASE_FIELDS = (
    "time",
    "completed",
    "response_sum",
    "arrived",
    "timed_out",
    "errors",
    "failed",
    "retried",
    "late",
    "syn_retransmits",
)


class Recorder:
    def __init__(
        self,
        kernel,
        probes,
        bins: LogBins,
        *,
        batch: int = 5,
        max_batches: int = 256,
        recording: bool = True,
        classes=None,
    ) -> None:
        self.kernel = kernel
        self.probes = probes  # objects with .name and .counters(now) -> tuple of floats
        self.bins = bins
        self.batch = batch
        self.max_batches = max_batches
        self.completed = 0
        self.response_sum = 0.0
        self.arrived = 0
        self.timed_out = 0
        self.errors = 0  # error responses (refused, full queue, 503)
        self.failed = 0  # requests the user gave up on (after the last retry)
        self.retried = 0
        self.late = 0  # responses that arrived after the client had abandoned the request
        self.syn_retransmits = 0  # SYNs retransmitted after a full listen queue dropped them
        self._buffer: list[float] = []
        self._histogram = np.zeros(bins.n_bins, dtype=np.int64)
        self.rows: list[np.ndarray] = []
        self.histograms: list[np.ndarray] = []
        self.recording = False
        self.stop_at = math.inf  # stop the run when `completed` reaches this (run.requests)
        self._stop_after: int | None = None
        self._batch_end = batch  # completions at which the current batch ends
        self._count_marks: list[tuple[int, Callable[[], None]]] = []  # (completions, callback)
        self._due: float = batch  # next completion count with anything to do: one test per response
        # request classes (`sim.observe.classes.ClassStats`): each class's response-time
        # histogram is snapshotted with every row, so its percentiles have windows too
        self.classes = classes
        self.class_histograms: list = []
        if classes is not None:
            classes.bins = bins
        self.columns = list(BASE_FIELDS)
        for probe in probes:
            self.columns += [f"{probe.name}:{field}" for field in probe.fields]
        if recording:
            self.start_recording()

    # ------------------------------------------------------------------ hot path
    def complete(self, response_time: float) -> None:
        self._buffer.append(response_time)
        self.completed += 1
        self.response_sum += response_time
        if self.completed >= self._due:
            self._reached()

    def _reached(self) -> None:
        completed = self.completed
        if completed >= self._batch_end:
            if self.recording:
                self._boundary()
            else:  # before a fixed warm-up ends: bin the values now and then, no rows
                self._flush()
                self._batch_end = completed + 4096
        marks = self._count_marks
        while marks and completed >= marks[0][0]:
            marks.pop(0)[1]()
        if completed >= self.stop_at:
            self.stop_at = math.inf
            self.kernel.stop()
        self._schedule()

    def _schedule(self) -> None:
        marks = self._count_marks
        self._due = min(self._batch_end, self.stop_at, marks[0][0] if marks else math.inf)

    def at_completions(self, count: int, callback: Callable[[], None]) -> None:
        """Call `callback` when `count` responses have completed (counted from the start)."""
        self._count_marks.append((count, callback))
        self._count_marks.sort(key=lambda mark: mark[0])
        self._schedule()

    def stop_after_requests(self, requests: int) -> None:
        """End the run when `requests` responses have completed inside the observation window."""
        self._stop_after = requests
        if self.recording:
            self.stop_at = self.completed + requests
            self._schedule()

    # ------------------------------------------------------------------ snapshots
    def start_recording(self) -> None:
        """Begin the observation window now (after a fixed warm-up, or at time 0)."""
        self.recording = True
        if self._stop_after is not None:
            self.stop_at = self.completed + self._stop_after
        self._flush()
        self._append_row()
        self._batch_end = self.completed + self.batch
        self._schedule()

    def _flush(self) -> None:
        if self._buffer:
            indices = self.bins.index(np.asarray(self._buffer, dtype=float))
            self._histogram += np.bincount(indices, minlength=self.bins.n_bins)
            self._buffer.clear()

    def snapshot(self) -> np.ndarray:
        now = self.kernel.env.now
        values = [
            now,
            self.completed,
            self.response_sum,
            self.arrived,
            self.timed_out,
            self.errors,
            self.failed,
            self.retried,
            self.late,
            self.syn_retransmits,
        ]
        for probe in self.probes:
            values.extend(probe.counters(now))
        return np.asarray(values, dtype=float)

    def _append_row(self) -> None:
        self.rows.append(self.snapshot())
        self.histograms.append(self._histogram.copy())
        if self.classes is not None:
            self.class_histograms.append(self.classes.snapshot())

    def _boundary(self) -> None:
        self._flush()
        self._append_row()
        if len(self.rows) > 2 * self.max_batches:
            # Merge adjacent batches: keep the base row and every second boundary.
            self.rows = self.rows[0::2]
            self.histograms = self.histograms[0::2]
            self.class_histograms = self.class_histograms[0::2]
            self.batch *= 2
        self._batch_end = self.completed + self.batch

    def finish(self) -> None:
        """Close the window at the current time (the last, partial batch included)."""
        if not self.recording:
            self.start_recording()
            return
        self._flush()
        last = self.rows[-1]
        if self.kernel.env.now > last[0] or self.completed > last[1]:
            self._append_row()

    # ------------------------------------------------------------------ analysis
    def table(self) -> np.ndarray:
        return np.vstack(self.rows)

    def batch_means(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean response time and count of each full batch (the final partial one excluded)."""
        table = self.table()
        counts = np.diff(table[:, 1])
        sums = np.diff(table[:, 2])
        full = counts[:-1] if len(counts) > 1 else counts[:0]
        means = sums[: len(full)] / np.where(full > 0, full, 1)
        return means, full
