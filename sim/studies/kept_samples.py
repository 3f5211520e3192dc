"""The files an import has read, kept so that a rerun after Ctrl-C does not read them again
(`tiersim import --cache FILE`; by default a file of `.tiersim-cache/` named after the import,
removed once the import has written its table).

Reading a per-sample file (a JTL, an access log, k6's or Gatling's samples) is nearly all of an
import's time: some 2.4 s for 600,000 JTL lines, its windows' statistics a tenth of that.  Each
file's samples (`sim.measurements.windows.SampleLog`) are written, as each file is read, to an
Arrow file beside the cache (zstd: some 0.14 s and 2.4 MB for those 600,000 lines, read back
in 0.07 s), and a line of the JSON-lines cache (`sim.studies.kept`) names it.  A file is keyed
by its content (hashed, with its name as given: the name is in the table's record of its
sources), its format and what its reading depends on (`--encoding`, `--log-format`,
`--class-by`), and the code -- not by the window, the cut or the classes, which are applied to
the samples after they are read.  The samples replayed are the ones read, column for column,
so the table written is the one an import never interrupted writes.  Traces (otel) are read
another way and are not kept.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.studies.kept import KeptLines, file_digest, fingerprint
from sim.studies.source_digest import code_digest

if TYPE_CHECKING:
    from sim.measurements.importer import ImportOptions
    from sim.measurements.windows import SampleLog

# the formats read per file as samples (`sim.measurements.importer.read_samples`)
KEPT_FORMATS = ("jtl", "ab-gnuplot", "access-log", "k6", "gatling")
# the file's form; a change of what a line holds changes it, and old lines no longer match
FORM = "tiersim import samples 1"
# the sample log's columns and their types (`SampleLog`): a kept frame of any other is read
# again from its file
COLUMNS = {
    "start_s": "float64",
    "elapsed_s": "float64",
    "label": "object",
    "url": "object",
    "failed": "bool",
    "error_kind": "object",
    "users": "float64",
}


def default_cache(inputs: str) -> Path:
    """`.tiersim-cache/import-KEY.jsonl` of the current folder: one file per import (`inputs`,
    the command's format, files and output), removed once the table is written."""
    return Path(".tiersim-cache") / f"import-{fingerprint(inputs)[:12]}.jsonl"


class KeptSamples(KeptLines):
    """The files a cache holds and the ones this import adds; `read` is the import's reader
    of a per-sample file (`ImportOptions.read`).  `path` None keeps nothing."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(path, "import cache", "files", max_bytes=2**26)
        self.frames = None if path is None else path.with_suffix(".samples")
        if self.frames is not None and self.frames.exists() and not self.frames.is_dir():
            from sim.studies.kept import CacheError

            # said before the files are read, not after the first of them
            raise CacheError(
                f"--cache {path}: its samples are kept in the folder {self.frames}, which is a "
                "file; give another --cache, or --no-cache"
            )

    def read(self, format: str, path: str, options: ImportOptions) -> SampleLog:
        """The file's samples: kept, or read (`read_samples`) and kept at once."""
        from sim.measurements.importer import read_samples

        key = self._fingerprint(format, path, options)
        replayed: list[SampleLog] = []

        def whole(record: dict[str, Any]) -> bool:
            log = self._log_of(record, path)
            replayed[:] = [log] if log is not None else []
            return log is not None

        if key is not None and super().recall(key, whole) is not None:
            return replayed[0]
        log = read_samples(format, path, options)
        self.keep(key, self._record_of(key, log) if key is not None else None)
        return log

    def _fingerprint(self, format: str, path: str, options: ImportOptions) -> str | None:
        if self.path is None:
            return None
        return fingerprint(
            FORM,
            code_digest(),
            file_digest(Path(path)),
            json.dumps(
                {
                    "format": format,
                    "path": path,
                    "encoding": options.encoding,
                    "log_format": options.log_format,
                    "class_by": options.classes.by,
                },
                sort_keys=True,
            ),
        )

    def _record_of(self, key: str, log: SampleLog) -> dict[str, Any] | None:
        """Write the samples' frame beside the cache (whole, or not at all: a file is renamed
        into place once written) and the line that names it; None when it cannot be written
        (pyarrow missing: the file is read again on a rerun)."""
        import pandas as pd

        assert self.frames is not None
        index = log.frame.index
        kinds = {column: str(kind) for column, kind in log.frame.dtypes.items()}
        if kinds != COLUMNS or not index.equals(pd.RangeIndex(len(index))):
            return None  # not a frame this module reads back as it was: read again
        frame = self.frames / f"{key}.arrow"
        partial = frame.with_suffix(".partial")
        try:
            self.frames.mkdir(parents=True, exist_ok=True)
            log.frame.to_feather(partial, compression="zstd")
            os.replace(partial, frame)
        except ImportError:
            return None
        except OSError as exc:
            from sim.studies.kept import CacheError

            raise CacheError(
                f"--cache {frame}: cannot write ({exc.strerror or exc}); give another --cache, "
                "or --no-cache"
            ) from None
        return {
            "path": log.path,
            "outcomes_known": bool(log.outcomes_known),
            "urls_known": bool(log.urls_known),
            "frame": frame.name,
        }

    def _log_of(self, record: dict[str, Any], path: str) -> SampleLog | None:
        """The samples a line names; None when they are not there whole (a frame removed, a
        hand-edited line, another version of pandas that reads it otherwise)."""
        import pandas as pd

        from sim.measurements.windows import SampleLog

        assert self.frames is not None
        name = record.get("frame")
        if (
            record.get("path") != path
            or not isinstance(name, str)
            or Path(name).name != name
            or not isinstance(record.get("outcomes_known"), bool)
            or not isinstance(record.get("urls_known"), bool)
        ):
            return None
        try:
            frame = pd.read_feather(self.frames / name)
        except (OSError, ValueError, TypeError, ImportError):  # pyarrow's errors are of these
            return None
        if {column: str(kind) for column, kind in frame.dtypes.items()} != COLUMNS:
            return None
        return SampleLog(path, frame, record["outcomes_known"], record["urls_known"])

    def remove(self) -> None:
        """The cache and its frames, once the import is whole."""
        if self.path is None or self.frames is None:
            return
        self.path.unlink(missing_ok=True)
        for frame in self.frames.glob("*.arrow"):
            frame.unlink(missing_ok=True)
        for partial in self.frames.glob("*.partial"):
            partial.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # something else in it, or not there
            self.frames.rmdir()
