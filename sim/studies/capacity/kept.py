"""A capacity search's finished evaluations, kept so that a rerun after Ctrl-C does not run them
again (`tiersim capacity --cache FILE`, default `.tiersim-cache/capacity-NAME.jsonl`).

Each evaluation -- one value of the searched parameter, at the fitted values or at one parameter
draw -- is appended to a JSON-lines file as soon as its record comes back: the figures the
search reads (each SLO metric's mean and interval, the failed share, the counts, the window,
the replications, the warnings, the busy shares).  It is keyed by a fingerprint of everything
its record depends on, so a stale hit cannot happen:

- the model as it runs (the file's data with every override applied -- `--set`, the
  calibration's fitted and drawn values, the searched value -- validated and dumped), and the
  content of every CSV it samples from (`empirical` with `csv`);
- the seed, the replications, the metrics read, the SLOs (as moved by a draw's model error);
- the calibration's content and the draw (its seed and overrides);
- the tiersim version, a hash of every source file of the `sim` package (an edit of the code
  makes every kept evaluation stale) and whether numba is importable (`run.engine = "auto"`).

A rerun reads the file, replays every evaluation it asks for whose fingerprint is there and
runs the others: the search is deterministic (common random numbers, its next points decided by
the records alone), so it asks for the same points, and the answer is the one a run without
the file gives, bit for bit (a float goes through JSON as its shortest round-trip repr).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.present.failures import FAILED_SHARE
from sim.studies.kept import CacheError as CacheError  # sim.api.capacity reads it here
from sim.studies.kept import KeptLines, model_parts
from sim.studies.kept import fingerprint as hashed
from sim.studies.source_digest import code_digest

if TYPE_CHECKING:
    from sim.studies.sweep.point import PointTask

# the file's form; a change of what a line holds changes it, and old lines no longer match
FORM = "tiersim capacity evaluation 1"
# the record's fields the search reads (`search._evaluation`), beside the searched value and
# the SLO metrics' and busy shares' columns
FIELDS = (
    "status",
    "error_kind",
    "error",
    FAILED_SHARE,
    f"{FAILED_SHARE}.ci_low",
    f"{FAILED_SHARE}.ci_high",
    "count.failed",
    "count.completed",
    "replications",
    "window_s",
    "warmup_s",
    "warnings",
)
# a record that counts as a finished evaluation: its figures (ok), or a value the search reads
# as "not meeting" (unstable, unfinished); any other failure stops the search and is not kept
KEPT_KINDS = (None, "unstable", "unfinished")


def default_cache(source: str | Path) -> Path:
    """Beside calibrate's (`.tiersim-cache/calibrate-NAME.jsonl`), in the current folder."""
    return Path(".tiersim-cache") / f"capacity-{Path(source).stem}.jsonl"


class KeptEvaluations(KeptLines):
    """The evaluations a file holds, looked up by fingerprint, and the ones this run adds.

    `path` None keeps nothing (`--no-cache`) and only counts.  `calibration`: the calibration's
    content digest (`calibration_digest`), or "" without one."""

    def __init__(self, path: Path | None, calibration: str = "") -> None:
        # a line is some 2 kB: 256 MiB holds a hundred thousand evaluations
        super().__init__(path, "capacity cache", "evaluations", max_bytes=2**28)
        self.calibration = calibration

    def recall(  # type: ignore[override]
        self, fingerprint: str | None, task: PointTask
    ) -> dict[str, Any] | None:
        """The kept record of an evaluation, counted as reused; None when it must run (none
        kept, or a line that is not a whole record of `task`: a hand-edited file)."""
        return super().recall(fingerprint, lambda record: whole(record, task))

    def keep(  # type: ignore[override]
        self, fingerprint: str | None, record: dict[str, Any], task: PointTask
    ) -> None:
        """Append a finished evaluation's figures at once; a failure other than a value the
        search reads as "not meeting" is counted, not kept."""
        finished = record.get("error_kind") in KEPT_KINDS
        super().keep(fingerprint, kept_figures(record, task) if finished else None, _number)

    def fingerprint(self, task: PointTask, slos: Iterable[Any]) -> str | None:
        """Everything the evaluation's record depends on, hashed; None when its model does not
        validate (it then runs, and says why as it would without a cache)."""
        if self.path is None:
            return None
        from sim.model.load import ModelError, parse_model

        try:
            model = parse_model(
                task.raw_model, task.source, task.run_overrides, Path(task.base_dir)
            )
        except ModelError:
            return None
        return hashed(
            FORM,
            code_digest(),
            *model_parts(model),
            json.dumps(
                {
                    "values": task.values,
                    "seed": task.seed,
                    "replications": task.replications,
                    "metrics": list(task.metrics),
                    "slos": [repr(slo) for slo in slos],
                    "overrides": list(task.run_overrides),
                    "calibration": self.calibration,
                },
                sort_keys=True,
                default=repr,
            ),
        )


def kept_figures(record: dict[str, Any], task: PointTask) -> dict[str, Any]:
    """What of a record the search reads: the searched value, `FIELDS`, and each metric's and
    busy share's columns (`task.metrics`)."""
    return {name: record[name] for name in _columns(task) if name in record}


def _columns(task: PointTask) -> list[str]:
    columns = [*task.values, *FIELDS]
    for metric in task.metrics:
        columns += [metric, f"{metric}.ci_low", f"{metric}.ci_high"]
    return columns


def whole(record: dict[str, Any], task: PointTask) -> bool:
    """Every field the search reads, of the type it reads (a record holds each metric asked,
    NaN where a run has none): the searched value itself, a status it keeps, the figures as
    numbers, the warnings as a JSON list of text."""
    text = ("status", "error_kind", "error", "warnings")
    numbers = [name for name in _columns(task) if name not in text]
    try:
        warnings = json.loads(record["warnings"])
    except (KeyError, TypeError, ValueError, RecursionError):
        return False
    return (
        all(record.get(path) == value for path, value in task.values.items())
        and record.get("status") in ("ok", "failed")
        and record.get("error_kind") in KEPT_KINDS
        and (record["error_kind"] is None) == (record["status"] == "ok")
        and all(_number_field(record.get(name)) for name in numbers)
        and isinstance(warnings, list)
        and all(isinstance(text, str) for text in warnings)
    )


def _number_field(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def calibration_digest(calibrated: Any) -> str:
    """The calibration's content: every field of it, exactly (arrays by their bytes, floats
    by their repr), hashed."""
    if calibrated is None:
        return ""
    digest = hashlib.sha256()
    _feed(digest, calibrated)
    return digest.hexdigest()[:32]


def _feed(digest: Any, value: Any) -> None:
    """Feed `value` to `digest` whole: numpy's repr of an array rounds and elides it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(type(value).__name__.encode())
        for item in dataclasses.fields(value):
            digest.update(f"({item.name}".encode())
            _feed(digest, getattr(value, item.name))
            digest.update(b")")
    elif hasattr(value, "tobytes") and hasattr(value, "shape"):
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(value.tobytes())
    elif isinstance(value, (tuple, list)):
        digest.update(b"[")
        for item in value:
            _feed(digest, item)
            digest.update(b",")
        digest.update(b"]")
    elif isinstance(value, dict):
        _feed(digest, sorted(value.items(), key=repr))
    else:
        digest.update(repr(value).encode())


def _number(value: Any) -> Any:
    """numpy scalars as Python numbers (a float's repr round-trips exactly)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a figure")
