"""An experiment read once per `tiersim calibrate`, however many of its steps ask for it.

The command, the [[choose]] loop, each candidate's fit and the withheld levels' intervals each
called `load_experiment` on the same folder: for an imported table (`tiersim plan`'s
experiment) that reads the table with pandas and derives every level's measurement errors, 0.1-
0.2 s each on two cores, 0.6 s of a 15 s `calibrate`.  Inside `loaded_once()`, `load_experiment`
reads it the first time and hands the same (folder, spec, records) to every later call for
the same name and [[choose]] candidate (`measured_table.CANDIDATE`: a candidate's settings
are part of the spec it derives).  The callers only read what it returns; a spec that a step
changes (a cross-validation fold's targets) is a `model_copy`, not an edit.  Outside the
context every call reads the files, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from sim.studies import records
from sim.studies.measured_table import CANDIDATE
from sim.studies.spec import ExperimentSpec

Loaded = tuple[Path, ExperimentSpec, list[dict[str, str]]]

# The experiments read in this calibration, by (name, candidate).  A thread started with
# `contextvars.copy_context()` (the [[choose]] candidates side by side) shares the dictionary.
_READ: ContextVar[dict[tuple[str, tuple[str, ...]], Loaded] | None] = ContextVar(
    "experiments read", default=None
)


@contextlib.contextmanager
def loaded_once() -> Iterator[None]:
    """Within: each experiment is read from its files once (an outer `loaded_once` keeps its
    experiments for the inner one)."""
    if _READ.get() is not None:
        yield
        return
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def load_experiment(name: str) -> Loaded:
    """`sim.studies.records.load_experiment(name)`, read once per `loaded_once()` and
    candidate."""
    read = _READ.get()
    if read is None:
        return records.load_experiment(name)
    key = (name, CANDIDATE.get())
    if key not in read:
        read[key] = records.load_experiment(name)
    return read[key]
