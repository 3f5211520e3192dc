"""Finished work kept as it finishes, so that a rerun after Ctrl-C (or SIGTERM, or a crash)
does not do it again: a JSON-lines file in which each piece of work -- a capacity search's
evaluation, a run's replication, an imported file's samples -- is one line, appended as soon as
it finishes and keyed by a fingerprint of everything its record depends on (`fingerprint`, with
the code's digest, `sim.studies.source_digest`), so that a stale hit cannot happen.

A rerun reads the file, replays each piece it asks for whose fingerprint is there and does the
others; the work is deterministic, so its answer is the one a run without the file gives.  A
line cut short by an interruption (or anything else that is not a record) is skipped, and the
piece is done again and kept after it.  What a line holds and how it is checked belongs to the
study (`sim.studies.capacity.kept`, `sim.studies.kept_replications`,
`sim.studies.kept_samples`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


class CacheError(ValueError):
    """A cache file that cannot be read or written; the message names it and the fix."""


def fingerprint(*parts: str) -> str:
    """The parts (each a text that a record depends on), hashed in order."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def file_digest(path: Path) -> str:
    """A file's content, hashed (a file that cannot be read: its name, so that it matches
    nothing a readable file made)."""
    try:
        with path.open("rb") as handle:  # in pieces: a load test's log may be gigabytes
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return f"unreadable {path}"


class KeptLines:
    """The records a file holds, looked up by fingerprint, and the ones this run adds.

    `path` None keeps nothing (`--no-cache`) and only counts.  `what` names the file in a
    refusal ("capacity cache"), `noun` the pieces in the line a rerun says ("evaluations");
    `max_bytes` bounds what is read of it."""

    def __init__(self, path: Path | None, what: str, noun: str, max_bytes: int = 2**28) -> None:
        self.path = path
        self.what = what
        self.noun = noun
        self.known: dict[str, dict[str, Any]] = {}
        self.reused = 0  # pieces replayed from the file in this run
        self.simulated = 0  # pieces done in this run
        if path is not None:
            self._read(path, max_bytes)

    def sharing(self, noun: str) -> KeptLines:
        """A keeper of other pieces in the same file (a run's parameter draws beside its
        replications), its lines read once, counted apart."""
        other = KeptLines(None, self.what, noun)
        other.path, other.known = self.path, self.known
        return other

    @property
    def total(self) -> int:
        return self.reused + self.simulated

    def _read(self, path: Path, max_bytes: int) -> None:
        from sim.files import FileProblem, read_json_lines

        try:
            entries = read_json_lines(path, self.what, max_bytes=max_bytes)
        except FileProblem as exc:
            raise CacheError(
                f"--cache {exc}; give another --cache, or --no-cache, or delete it to start again"
            ) from None
        for entry in entries:
            if isinstance(entry.get("fingerprint"), str) and isinstance(entry.get("record"), dict):
                self.known[entry["fingerprint"]] = entry["record"]

    def recall(
        self, fingerprint: str | None, whole: Callable[[dict[str, Any]], bool] = lambda _: True
    ) -> dict[str, Any] | None:
        """The kept record of a piece, counted as reused; None when it must be done (none kept,
        or a line that `whole` refuses: a hand-edited or foreign file)."""
        if fingerprint is None or self.path is None:
            return None
        record = self.known.get(fingerprint)
        if record is not None and not whole(record):
            del self.known[fingerprint]  # done again, and its record kept after the bad one
            record = None
        if record is not None:
            self.reused += 1
        return record

    def keep(
        self,
        fingerprint: str | None,
        record: dict[str, Any] | None,
        default: Callable[[Any], Any] | None = None,
    ) -> None:
        """Count a piece done, and append its record at once (a line of its own: a torn last
        line from an interrupted write is left behind, not joined).  `record` None: a piece
        that is not kept (a failure the rerun must meet again).  `default`: JSON's, for the
        record's values that are not JSON's own."""
        self.simulated += 1
        if fingerprint is None or self.path is None or record is None or fingerprint in self.known:
            return
        self.known[fingerprint] = record
        line = json.dumps({"fingerprint": fingerprint, "record": record}, default=default)
        from sim.studies.calibration.evaluate import append_line

        try:
            append_line(self.path, line)
        except OSError as exc:
            raise CacheError(
                f"--cache {self.path}: cannot write ({exc.strerror or exc}); give another "
                "--cache, or --no-cache"
            ) from None

    def said(self) -> str | None:
        """The line a rerun says on stderr when it replayed any piece."""
        if not self.reused:
            return None
        return f"resumed: {self.reused} of {self.total} {self.noun} from {self.path}"


def model_parts(model: Any) -> tuple[str, ...]:
    """A validated model as a record depends on it: its data with every override applied, and
    the content of every CSV file it samples from (`empirical` distributions' `csv`)."""
    return (
        model.model_dump_json(),
        *(file_digest(Path(name)) for name in sorted(_sampled_files(model.model_dump()))),
    )


def _sampled_files(node: Any) -> set[str]:
    """The CSV files the model samples from (`empirical` distributions' `csv`, resolved)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "csv" and isinstance(value, str):
                found.add(value)
            else:
                found |= _sampled_files(value)
    elif isinstance(node, list):
        for value in node:
            found |= _sampled_files(value)
    return found


def kept_map(
    map_: Callable[..., Iterable[Any]],
    kept: KeptLines,
    key: Callable[..., str | None],
    record_of: Callable[[Any], dict[str, Any] | None],
    replay: Callable[[dict[str, Any]], Any],
    whole: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> Callable[..., Iterator[Any]]:
    """`map_` (builtin map, or an executor's: results in task order) over the tasks that are
    not kept; the kept ones replayed in their place (`replay` of their record), in task order,
    and each new result kept as it comes back (`record_of` it; None: not kept).  `key(*task)`
    is a task's fingerprint (None: not kept)."""

    def mapped(fn: Callable[..., Any], *iterables: Iterable[Any]) -> Iterator[Any]:
        tasks = list(zip(*iterables))
        keys = [key(*task) for task in tasks]
        replayed = [kept.recall(fingerprint, whole) for fingerprint in keys]
        left = [task for task, record in zip(tasks, replayed) if record is None]
        fresh = iter(map_(fn, *zip(*left)) if left else ())
        for fingerprint, record in zip(keys, replayed):
            if record is not None:
                yield replay(record)
                continue
            result = next(fresh)
            kept.keep(fingerprint, record_of(result))
            yield result

    return mapped
