"""A run's finished replications, kept so that a rerun after Ctrl-C does not run them again
(`tiersim run --cache FILE`; by default a file of `.tiersim-cache/` named after the run, removed
once the run has finished whole).

Each replication is appended to a JSON-lines file (`sim.studies.kept`) as soon as it finishes,
with everything the run's summary reads of it: its own metrics (in their order), its warm-up,
its notes and units, and its candidate windows -- the counter rows and response-time histograms
at each candidate start, as exact bytes -- with its own probes' reading of each window (the
metrics between a candidate's row and the end), since the run chooses one warm-up for all its
replications after the last one and re-windows each.  It is keyed by a fingerprint of what a
replication is a function of: the model as it runs (every override applied, and the content of
the CSV files it samples from), the seed, the replication's index, the engine chosen and its
note, and the code (`sim.studies.source_digest`).

A rerun replays each kept replication and runs the others; the summary, the intervals and every
replication's figures are the ones of a run never interrupted, bit for bit (the run's own wall
time aside).
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.studies.kept import KeptLines, fingerprint, model_parts
from sim.studies.source_digest import code_digest

if TYPE_CHECKING:
    from sim.engines import EngineChoice
    from sim.model.schema import Model
    from sim.run.finish import ReplicationResult

# the file's form; a change of what a line holds changes it, and old lines no longer match
FORM = "tiersim run replication 1"
# the candidate windows' arrays (`sim.stats.steady_state.WindowCandidates`)
WINDOW = ("starts", "rows", "histograms", "cell_completed", "cell_response")
SCALARS = ("warmup_s", "batch_size", "finished", "wall_s", "events", "engine")


def default_cache(source: str | Path, inputs: str) -> Path:
    """`.tiersim-cache/run-NAME-KEY.jsonl` of the current folder: one file per run (`inputs`,
    a text of everything the command's output depends on), which the run removes once it has
    finished whole (a rerun of a finished run runs again, as it always did)."""
    return Path(".tiersim-cache") / f"run-{Path(source).stem}-{fingerprint(inputs)[:12]}.jsonl"


class KeptReplications(KeptLines):
    """The replications a file holds and the ones this run adds (`sim.run.replications`'s
    `KeptReplications`).  `path` None keeps nothing and only counts."""

    def __init__(self, path: Path | None) -> None:
        # a line is some 50 to 200 kB (a replication's windows): 1 GiB holds thousands
        super().__init__(path, "run cache", "replications", max_bytes=2**30)
        self._model: tuple[Model, tuple[str, ...]] | None = None

    def recall(  # type: ignore[override]
        self, model: Model, seed: int, choice: EngineChoice, replication: int
    ) -> ReplicationResult | None:
        """The kept replication, counted as reused; None when it must run."""
        if not self.known:
            return None  # nothing kept: no fingerprint to take (the code's digest, 50 ms)
        replayed: list[ReplicationResult] = []

        def whole(record: dict[str, Any]) -> bool:
            result = replication_of(record, replication)
            replayed[:] = [result] if result is not None else []
            return result is not None

        if super().recall(self._fingerprint(model, seed, choice, replication), whole) is None:
            return None
        return replayed[0]

    def keep(  # type: ignore[override]
        self, model: Model, seed: int, choice: EngineChoice, result: ReplicationResult
    ) -> None:
        """Append a finished replication at once."""
        key = self._fingerprint(model, seed, choice, result.replication)
        super().keep(key, record_of(result) if key is not None else None, _number)

    def _fingerprint(
        self, model: Model, seed: int, choice: EngineChoice, replication: int
    ) -> str | None:
        if self.path is None:
            return None
        if self._model is None or self._model[0] is not model:
            self._model = (model, model_parts(model))  # once per run: the CSVs are read once
        return fingerprint(
            FORM,
            code_digest(),
            *self._model[1],
            json.dumps(
                {
                    "seed": seed,
                    "replication": replication,
                    "engine": choice.engine,
                    "note": choice.note,
                },
                sort_keys=True,
            ),
        )


def record_of(result: ReplicationResult) -> dict[str, Any] | None:
    """A finished replication as a line holds it; None for one without candidate windows (it
    is not kept: it runs again)."""
    window = result.window
    if window is None or window.metrics_between is None:
        return None
    rows = window.rows
    readings = [window.metrics_between(rows[c], rows[-1]) for c in range(len(window.starts))]
    names = list(readings[0]) if readings else []
    if any(list(reading) != names for reading in readings):
        return None  # a reading whose names change with the window is not one table
    return {
        "replication": result.replication,
        "metrics": dict(result.metrics),
        **{name: getattr(result, name) for name in SCALARS},
        "notes": list(result.notes),
        "units": dict(result.units),
        "window": {name: _array(getattr(window, name)) for name in WINDOW},
        "readings": {
            "names": names,
            "values": _array(
                np.array([[reading[n] for n in names] for reading in readings], dtype=np.float64)
            ),
        },
    }


def replication_of(record: dict[str, Any], replication: int) -> ReplicationResult | None:
    """The replication a line holds, windows and all; None for a line that is not a whole
    replication `replication` (a hand-edited or foreign file)."""
    from sim.run.finish import ReplicationResult
    from sim.stats.steady_state import WindowCandidates

    try:
        arrays = {name: _unarray(record["window"][name]) for name in WINDOW}
        window = WindowCandidates(
            starts=arrays["starts"],
            rows=arrays["rows"],
            histograms=arrays["histograms"],
            cell_completed=arrays["cell_completed"],
            cell_response=arrays["cell_response"],
        )
        names = record["readings"]["names"]
        values = _unarray(record["readings"]["values"])
        metrics = record["metrics"]
        result = ReplicationResult(
            replication=record["replication"],
            metrics={str(name): float(value) for name, value in metrics.items()},
            notes=[str(note) for note in record["notes"]],
            units={str(name): str(unit) for name, unit in record["units"].items()},
            window=window,
            **{name: record[name] for name in SCALARS},
        )
    except (KeyError, TypeError, ValueError, AttributeError, zlib.error):
        return None
    candidates = len(window.starts)
    if (
        not _scalars_typed(record)
        or result.replication != replication
        or not isinstance(names, list)
        or values.shape != (candidates, len(names))
        or window.rows.ndim != 2
        or len(window.rows) != candidates + 1
        or len(window.histograms) != candidates + 1
    ):
        return None
    window.metrics_between = KeptReadings(window.rows, names, values)
    return result


def _scalars_typed(record: dict[str, Any]) -> bool:
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    return (
        number(record["warmup_s"])
        and number(record["wall_s"])
        and isinstance(record["batch_size"], int)
        and isinstance(record["events"], int)
        and isinstance(record["finished"], bool)
        and record["engine"] in ("reference", "compiled")
    )


class KeptReadings:
    """A kept replication's own probes' reading of each of its candidate windows: the metrics
    between a candidate's counter row and the end (`WindowCandidates.metrics_between`), as its
    probes gave them when it ran."""

    def __init__(self, rows: np.ndarray, names: list[str], values: np.ndarray) -> None:
        self.end = rows[-1].tobytes()
        self.starts = {rows[c].tobytes(): c for c in range(len(rows) - 1)}
        self.names = [str(name) for name in names]
        self.values = values

    def __call__(self, start: np.ndarray, end: np.ndarray) -> dict[str, float]:
        candidate = self.starts.get(start.tobytes())
        if candidate is None or end.tobytes() != self.end:
            raise ValueError("a kept replication is read only at its own candidate windows")
        return dict(zip(self.names, self.values[candidate].tolist()))


def _array(values: np.ndarray) -> dict[str, Any]:
    """An array exactly: its type, its shape and its bytes (compressed: a histogram is mostly
    zeros), as text."""
    values = np.ascontiguousarray(values)
    return {
        "dtype": values.dtype.str,
        "shape": list(values.shape),
        "data": base64.b64encode(zlib.compress(values.tobytes(), 6)).decode("ascii"),
    }


def _unarray(kept: dict[str, Any]) -> np.ndarray:
    """The array `_array` wrote; a ValueError for anything else (its bytes are inflated only
    up to the size its shape says: a line cannot ask for more memory than its array holds)."""
    dtype = np.dtype(kept["dtype"])
    if dtype.kind not in "fiub":  # numbers only: an object array is not data
        raise ValueError(f"not an array of numbers: {dtype}")
    shape = [int(n) for n in kept["shape"]]
    size = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if any(n < 0 for n in shape) or size > 2**30:
        raise ValueError(f"not an array's shape: {shape}")
    inflate = zlib.decompressobj()
    data = inflate.decompress(base64.b64decode(kept["data"], validate=True), size + 1)
    if len(data) != size or not inflate.eof:
        raise ValueError("the array's bytes are not its shape's")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _number(value: Any) -> Any:
    """numpy scalars as Python numbers (a float's repr round-trips exactly)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a figure")
