"""Snapshots of a replication on a fixed grid of its progress, for warm-up removal across
replications.

The grid divides the run into `cells` equal parts of simulated time (a run of fixed length)
or of completed responses (a run of `run.requests`), the same in every replication of a run.
At every grid point the recorder's completions and summed response time are kept (the
batch means MSER reads); at the points of the first half, which are the candidate window
starts, also the full counter row and the cumulative response-time histogram. A window from
any candidate to the end is then a difference of two snapshots, and the warm-up can be chosen
after all replications have run, on their average (`sim.stats.steady_state`).

Taking a snapshot only reads the model's state: the run's answer does not depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.observe.recorder import Recorder
from sim.stats.steady_state import WindowCandidates

CELLS = 128


class Checkpoints:
    def __init__(
        self,
        kernel,
        recorder: Recorder,
        *,
        horizon_s: float | None = None,
        requests: int | None = None,
        cells: int = CELLS,
    ) -> None:
        if (horizon_s is None) == (requests is None):
            raise ValueError("a grid of time (horizon_s) or of completions (requests)")
        self.kernel = kernel
        self.recorder = recorder
        self.cells = cells
        self.candidates = cells // 2 + 1
        self.times: list[float] = []
        self.completed: list[float] = []
        self.response_sum: list[float] = []
        self.rows: list[np.ndarray] = []
        self.histograms: list[np.ndarray] = []
        self._take()
        if horizon_s is not None:
            step = horizon_s / cells

            def on_time(j: int) -> None:
                self._take()
                if j + 1 < cells:  # the last point is the end of the run: finish() takes it
                    kernel.after(step, on_time, j + 1)

            kernel.after(step, on_time, 1)
        else:
            assert requests is not None
            for mark in completion_marks(recorder.completed, requests, cells):
                recorder.at_completions(mark, self._take)

    def _take(self) -> None:
        recorder = self.recorder
        self.times.append(self.kernel.env.now)
        self.completed.append(float(recorder.completed))
        self.response_sum.append(recorder.response_sum)
        if len(self.rows) < self.candidates:
            recorder._flush()
            self.rows.append(recorder.snapshot())
            self.histograms.append(recorder._histogram.copy())

    def finish(self) -> WindowCandidates:
        """The candidates, after `recorder.finish()` has closed the run at its end."""
        recorder = self.recorder
        return candidates_of(
            self.times,
            self.completed,
            self.response_sum,
            self.rows,
            self.histograms,
            end_row=recorder.rows[-1],
            end_histogram=recorder.histograms[-1],
            end_completed=float(recorder.completed),
            end_response_sum=recorder.response_sum,
        )


def completion_marks(start: int, requests: int, cells: int = CELLS) -> list[int]:
    """The completion counts of a grid of `run.requests` (the points after the first)."""
    return [start + round(j * requests / cells) for j in range(1, cells)]


def candidates_of(
    times: Sequence[float],
    completed: Sequence[float],
    response_sum: Sequence[float],
    rows: Sequence[np.ndarray],
    histograms: Sequence[np.ndarray],
    *,
    end_row: np.ndarray,
    end_histogram: np.ndarray,
    end_completed: float,
    end_response_sum: float,
) -> WindowCandidates:
    """A replication's candidate windows from its grid points (time, completions and summed
    response at each; the full row and histogram at the first ones) and its end (any engine's
    recorder: `sim.engines.compiled` keeps the same grid in arrays)."""
    times = [*times, float(end_row[0])]
    cell_completed = np.diff([*completed, end_completed])
    cell_response = np.diff([*response_sum, end_response_sum])
    # A run that stopped early (run.requests reached before the horizon) has fewer cells;
    # its candidates are those of its own first half.
    candidates = min(len(rows), (len(times) - 1) // 2 + 1)
    return WindowCandidates(
        starts=np.asarray(times[:candidates]),
        rows=np.vstack([*rows[:candidates], end_row]),
        histograms=np.vstack([*histograms[:candidates], end_histogram]),
        cell_completed=cell_completed,
        cell_response=cell_response,
    )
