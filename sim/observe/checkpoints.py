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
            start = recorder.completed
            for j in range(1, cells):
                recorder.at_completions(start + round(j * requests / cells), self._take)

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
        end_row, end_histogram = recorder.rows[-1], recorder.histograms[-1]
        times = [*self.times, float(end_row[0])]
        completed = np.diff([*self.completed, float(recorder.completed)])
        response = np.diff([*self.response_sum, recorder.response_sum])
        # A run that stopped early (run.requests reached before the horizon) has fewer cells;
        # its candidates are those of its own first half.
        candidates = min(len(self.rows), (len(times) - 1) // 2 + 1)
        return WindowCandidates(
            starts=np.asarray(times[:candidates]),
            rows=np.vstack([*self.rows[:candidates], end_row]),
            histograms=np.vstack([*self.histograms[:candidates], end_histogram]),
            cell_completed=completed,
            cell_response=response,
        )
