"""Finished work kept as it finishes, so that a rerun after Ctrl-C (or SIGTERM, or a crash)
does not do it again: a JSON-lines file in which each piece of work -- a capacity search's
evaluation, a run's replication, an imported file's samples -- is one line, appended as soon as
it finishes and keyed by a fingerprint of everything its record depends on (`fingerprint`, with
the code's digest, `sim.studies.source_digest`), so that a stale hit cannot happen.

A rerun reads the file, replays each piece it asks for whose fingerprint is there and does the
others; the work is deterministic, so its answer is the one a run without the file gives.  A
line cut short by an interruption (or a record of the wrong form) is skipped, and the piece is
done again and kept after it; a file with a line that is no record at all (a model, a log given
as --cache by mistake) is refused, never appended to.  What a line holds and how it is checked belongs to the
study (`sim.studies.capacity.kept`, `sim.studies.kept_replications`,
`sim.studies.kept_samples`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

# a kept record is a few kilobytes (a replication's figures and windows); a longer line is no
# record of this version's, skipped unread rather than held in memory
MAX_LINE_BYTES = 32 * 2**20


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
            self._can_append(path)

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
        """The file's records, read a line at a time (a line past `MAX_LINE_BYTES` is read no
        further than its start: a huge line costs no memory)."""
        if not path.exists():
            return
        # another command sharing the file may have made it only to try it and removed it
        # since (`_can_append`): a file gone is a cache with nothing kept yet
        if not self._check_file(path, max_bytes):
            return
        article = "an" if self.what[:1] in "aeiou" else "a"
        try:
            with path.open("rb") as handle:
                for number, raw, whole in _lines(handle):
                    if not raw.strip():
                        continue
                    entry = _entry(raw) if whole else None
                    if entry is None and not raw.lstrip().startswith(b"{"):
                        entry = raw  # no JSON, and no record cut short: not a cache
                    if entry is None:  # a line cut short (or too long): done again
                        continue
                    if not isinstance(entry, dict) or "fingerprint" not in entry:
                        # lines are appended to the file: never to one that holds something
                        # else (a model, a load test's JSON lines) given as --cache by mistake
                        binary = "a binary file, " if b"\0" in raw else ""
                        raise CacheError(
                            f"--cache {path}:{number}: {binary}not {article} {self.what} (each of its "
                            'lines is a {"fingerprint": ..., "record": ...} that tiersim '
                            "appended), and tiersim would append to it; give another --cache, "
                            "or --no-cache"
                        )
                    fingerprint, record = entry.get("fingerprint"), entry.get("record")
                    if isinstance(fingerprint, str) and isinstance(record, dict):
                        self.known[fingerprint] = record
        except FileNotFoundError:
            return  # gone since it was checked, as above
        except OSError as exc:
            raise CacheError(
                f"--cache {path}: cannot read the {self.what} ({exc.strerror or exc}); give "
                "another --cache, or --no-cache, or delete it to start again"
            ) from None

    def _check_file(self, path: Path, max_bytes: int) -> bool:
        """Refuse a cache that is no regular file (a device, a pipe: read forever) or is
        larger than `max_bytes`; False when it is gone."""
        try:
            info = path.stat()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise CacheError(
                f"--cache {path}: cannot read the {self.what} ({exc.strerror or exc}); give "
                "another --cache, or --no-cache"
            ) from None
        if not stat.S_ISREG(info.st_mode):
            raise CacheError(
                f"--cache {path}: not a regular file (a folder, pipe, device or socket); give a "
                "file name, or --no-cache"
            )
        if info.st_size > max_bytes:
            raise CacheError(
                f"--cache {path}: {info.st_size} bytes is too large for a {self.what} (at most "
                f"{max_bytes // 2**20} MiB); give another --cache, or --no-cache, or delete it "
                "to start again"
            )
        return True

    def _can_append(self, path: Path) -> None:
        """Refuse, before any work, a file that cannot be appended to (a folder of /proc, a
        read-only file system, a file the user may not write even where `os.access` says so)."""
        existed = path.exists()
        try:
            with path.open("ab"):
                pass
        except OSError as exc:
            raise CacheError(
                f"--cache {path}: cannot write ({exc.strerror or exc}); give another --cache, "
                "or --no-cache"
            ) from None
        # made only to try: the first kept piece makes it again (unless another command
        # sharing the file has appended to it since)
        with contextlib.suppress(OSError):
            if not existed and path.stat().st_size == 0:
                path.unlink(missing_ok=True)

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


def _entry(line: bytes) -> Any:
    """A line's JSON value; None for a line that is no JSON."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # JSONDecodeError, not UTF-8, a 5 000-digit number
        return None


def _lines(handle: BinaryIO) -> Iterator[tuple[int, bytes, bool]]:
    """Each line's number, its bytes and whether they are all of it: a line longer than
    `MAX_LINE_BYTES` gives only its start, and the rest is skipped unread into memory."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield number, raw, True
            continue
        rest = raw
        while rest and not rest.endswith(b"\n"):
            rest = handle.readline(2**20)
        yield number, raw[:64], False


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
