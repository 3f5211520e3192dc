"""The per-tier table of a traced run (`NAME.tiers.csv`, written by `tiersim import otel`
beside the measurement table `NAME.csv`) as `tiersim estimate` reads and shows it: each
tier's time per request, the residence time that bounds its service demand from above, and
the database calls per request."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import click

from sim.measurements.errors import MeasurementError
from sim.measurements.formats.otel_tiers import COLUMNS
from sim.measurements.report import share_text
from sim.measurements.table import failed_requests, failed_share, numbers
from sim.measurements.text import read_lines

TEXT = ("run", "class", "tier")


def tiers_path(table_path: str | Path) -> Path:
    """`NAME.tiers.csv` beside the measurement table `NAME.csv` (or `NAME.parquet`)."""
    table = Path(table_path)
    return table.with_name(table.stem + ".tiers.csv")


def read_tiers(table_path: str | Path) -> list[dict] | None:
    """The per-tier rows beside the table, None when the table has none (not a trace)."""
    path = tiers_path(table_path)
    if not path.exists():
        return None
    return read_tier_file(path)


def read_tier_file(path: str | Path) -> list[dict]:
    """The rows of a per-tier table (`tiersim import otel`'s `NAME.tiers.csv`)."""
    lines = read_lines(path, "a per-tier table (tiersim import otel)")
    reader = csv.DictReader(lines)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise MeasurementError(
            path, 1, f"header lacks {', '.join(missing)}; expected the per-tier table's columns"
        )
    rows = []
    for number, record in enumerate(reader, start=2):
        row: dict = {c: record[c] for c in TEXT}
        for column in COLUMNS:
            if column in TEXT:
                continue
            text = record[column]
            try:
                row[column] = float(text) if text != "" else math.nan
            except ValueError:
                raise MeasurementError(
                    path, number, f"{column} = {text!r}; expected a number"
                ) from None
        rows.append(row)
    return rows


def failed_shares(table) -> dict[tuple[str, str], float]:
    """Each (run, class)'s failed share over all the measurement table's windows: the import's
    cut, which is the per-tier table's too (`estimate --warmup` cuts neither of its traces)."""
    import numpy as np

    out = {}
    for (run, name), rows in table.groupby(["run", "class"], sort=False):
        completed = float(np.nansum(numbers(rows, "count.completed")))
        out[(str(run), str(name))] = failed_share(completed, failed_requests(rows))
    return out


def print_tiers(rows: list[dict], path: Path, failed: dict[tuple[str, str], float]) -> None:
    """`failed`: each (run, class)'s failed share (`failed_shares`), shown beside its times."""
    click.echo(
        f"per-tier time per request (traces, {path.name}: successful requests over the import's "
        "cut) [ms]; a tier's time bounds its demand from above (it includes its queueing)"
    )
    click.echo(
        f"  {'run':<14} {'class':<16} {'tier':<10} {'requests':>8} {'failed':>7} {'calls':>6} "
        f"{'time':>16} {'per call':>9} {'share':>6}"
    )
    for row in rows:
        share = failed.get((row["run"], row["class"]), math.nan)
        time = row["time_per_request_s"] * 1000
        error = row["time_per_request_s.std_error"] * 1000
        shown = f"{time:.4g} ± {error:.2g}" if math.isfinite(error) else f"{time:.4g}"
        per_call = row["time_per_call_s"] * 1000
        click.echo(
            f"  {row['run']:<14} {row['class']:<16} {row['tier']:<10} {row['requests']:>8.0f} "
            f"{share_text(share):>7} {row['calls_per_request']:>6.3g} {shown:>16} "
            f"{(f'{per_call:.4g}' if math.isfinite(per_call) else ''):>9} "
            f"{row['share_of_response']:>6.1%}"
        )
    click.echo(
        "  failed: the class's share of requests that failed, in none of the times; "
        "share: the tier's share of the response time"
    )
