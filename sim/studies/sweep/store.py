"""The results store: a directory with one small Parquet file per finished point.

    RESULTS/sweep.json            what made the store (fingerprint, factors, metrics)
    RESULTS/points/<id>.parquet   one row per point, written to a temporary file, flushed to
                                  disk and renamed into place: a point is there whole or not at all

Nothing is lost when a sweep is interrupted (Ctrl-C, a killed worker, a crashed machine):
rerunning the same command skips every point already in `points/`, and a point file is named
by the point's id, so no point can be there twice.  A store made by another sweep definition
is refused, not mixed.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

POINTS = "points"
MANIFEST = "sweep.json"


class StoreError(ValueError):
    """A results directory that cannot be used for this sweep; the message says what to do."""


class ResultStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.points = self.root / POINTS

    def open(self, manifest: dict[str, Any]) -> None:
        """Create the store, or check that it was made by the same definition (resume)."""
        existing = read_manifest(self.root) if (self.root / MANIFEST).exists() else None
        if existing is not None and existing.get("fingerprint") != manifest["fingerprint"]:
            raise StoreError(
                f"{self.root} holds results of a different sweep definition "
                f"({existing.get('source', '?')}, fingerprint {existing.get('fingerprint')}; this sweep's is "
                f"{manifest['fingerprint']}): the base model, the fixed overrides, the design, the seed, the "
                "replications or the metrics differ. Give another results directory (--results), or delete this "
                "one to start again"
            )
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(
                f"{self.root} is a file, not a results directory; give another (--results)"
            )
        if existing is None and self.root.exists() and any(self.root.iterdir()):
            raise StoreError(
                f"{self.root} exists and is not a tiersim results directory; give another (--results)"
            )
        try:
            self.points.mkdir(parents=True, exist_ok=True)
            for stale in self.points.glob(".*.tmp"):
                stale.unlink()  # a write cut short by a crash: its point was never finished
            if existing is None:
                _write_atomic(
                    self.root / MANIFEST, json.dumps(manifest, indent=2, default=str).encode()
                )
        except OSError as exc:  # a path through a file (/dev/null/x), a read-only folder
            raise StoreError(
                f"{self.root}: cannot make the results directory ({exc.strerror or exc}); give "
                "another (--results)"
            ) from None

    def finished(self) -> dict[str, str]:
        """Point id -> status ('ok' or 'failed') of every point in the store."""
        import pyarrow.parquet as pq

        out = {}
        for path in self.points.glob("*.parquet"):
            try:
                out[path.stem] = pq.read_table(path, columns=["status"]).column(0)[0].as_py()
            except (OSError, ValueError, KeyError, IndexError) as exc:
                raise StoreError(
                    f"{path}: not a readable point file ({exc}); delete it and rerun to run that "
                    "point again"
                ) from None
        return out

    def forget(self, point_ids: list[str]) -> None:
        for point in point_ids:
            (self.points / f"{point}.parquet").unlink(missing_ok=True)

    def write(self, record: dict[str, Any]) -> None:
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist([record]), buffer)
        _write_atomic(self.points / f"{record['point_id']}.parquet", buffer.getvalue())


@functools.cache
def _file_mode() -> int:
    """The mode an ordinary new file gets (0644 under the usual umask 022): mkstemp's temporary
    files are 0600, which would leave a shared results folder unreadable to colleagues.  Read
    once: os.umask can only be read by setting it."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _write_atomic(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        os.fchmod(handle, _file_mode())
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())  # on disk before the rename makes it visible
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_manifest(root: str | Path) -> dict[str, Any]:
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
        return manifest
    except FileNotFoundError:
        raise StoreError(
            f"{root}: not a tiersim results directory (no {MANIFEST}); run `tiersim sweep` first"
        ) from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise StoreError(f"{path}: unreadable ({exc}); not a tiersim results directory") from None


def load_results(root: str | Path):
    """Every point of a store as one DataFrame, in design order."""
    import pandas as pd
    import pyarrow.parquet as pq

    read_manifest(root)
    files = sorted((Path(root) / POINTS).glob("*.parquet"))
    if not files:
        return pd.DataFrame(columns=["point_id", "point_index", "status"])
    tables = []
    for path in files:
        try:
            tables.append(pq.read_table(path).to_pandas())
        except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
            raise StoreError(
                f"{path}: not a readable point file ({exc}); delete it and rerun the sweep to "
                "run that point again"
            ) from None
    frame = pd.concat(tables, ignore_index=True)
    if "point_index" not in frame or "status" not in frame:
        raise StoreError(f"{root}: point files without point_index or status; not a sweep's store")
    return frame.sort_values("point_index", kind="stable").reset_index(drop=True)


def read_sweep(root: Path) -> tuple[dict, Any]:
    """(manifest, results frame) of a results directory, for `sim.present.report`: a store
    that cannot be read is a `ReportError` with the store's own message."""
    from sim.present.report import ReportError

    try:
        return read_manifest(root), load_results(root)
    except StoreError as exc:
        raise ReportError(str(exc)) from None
