"""Which per-sample file each run of a measurement table was imported from, and the span of it
the import observed: `NAME.sources.csv`, written by `tiersim import` beside the table
`NAME.csv` (docs/measurement-table.md, "The source files").

A run's statistics are in the table; its samples stay in the file.  `tiersim plan` reads them
again where the table's statistics are not enough: the shape of a light level's response times
(`sim.measurements.shape`) decides the tail, and it is fitted from the same samples, cut as the
import cut them.

Columns: `run`, `format` (the import's), `file` (absolute path), `encoding`, `from_s` and
`until_s` (the observed span, seconds after the file's first sample started; `until_s` empty:
to the end).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from sim.measurements.errors import MeasurementError

COLUMNS = ("run", "format", "file", "encoding", "from_s", "until_s")


@dataclass(frozen=True)
class SourceFile:
    run: str
    format: str
    file: str
    encoding: str
    from_s: float
    until_s: float | None

    def row(self) -> dict[str, str]:
        return {
            "run": self.run,
            "format": self.format,
            "file": self.file,
            "encoding": self.encoding,
            "from_s": repr(self.from_s),
            "until_s": "" if self.until_s is None else repr(self.until_s),
        }


def sources_path(table_path: str | Path) -> Path:
    """`NAME.sources.csv` beside the measurement table `NAME.csv` (or `NAME.parquet`)."""
    table = Path(table_path)
    return table.with_name(table.stem + ".sources.csv")


def write_sources(sources: list[SourceFile], table_path: str | Path) -> None:
    """Write the record beside the table; with no run from a per-sample file, the record of an
    earlier import of the same table is removed (it would name files this table was not read
    from)."""
    if not sources:
        sources_path(table_path).unlink(missing_ok=True)
        return
    with open(sources_path(table_path), "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(source.row() for source in sources)


def read_sources(table_path: str | Path) -> list[SourceFile] | None:
    """The record beside the table; None when there is none (an older import, or a table
    written by hand)."""
    path = sources_path(table_path)
    if not path.is_file():
        return None
    from sim.measurements.text import read_lines

    lines = read_lines(path, "a source-file record (tiersim import)")
    reader = csv.DictReader(lines)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise MeasurementError(
            path, 1, f"header lacks {', '.join(missing)}; expected {', '.join(COLUMNS)}"
        )
    out = []
    for number, record in enumerate(reader, start=2):
        try:
            from_s = float(record["from_s"])
            until = record["until_s"].strip()
            until_s = float(until) if until else None
        except ValueError:
            raise MeasurementError(
                path, number, "from_s/until_s: expected seconds (until_s may be empty)"
            ) from None
        if not math.isfinite(from_s) or (until_s is not None and not math.isfinite(until_s)):
            raise MeasurementError(path, number, "from_s/until_s: expected finite seconds")
        out.append(
            SourceFile(
                run=record["run"],
                format=record["format"],
                file=record["file"],
                encoding=record["encoding"] or "utf-8",
                from_s=from_s,
                until_s=until_s,
            )
        )
    return out
