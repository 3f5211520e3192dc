"""The tidy measurement table: one row per (run, window, class).

Columns (documented with every statistic's definition in docs/measurement-table.md):
`run`, `window_start_s`, `window_end_s`, `class`, `users`, `arrival_rate_per_s`, `throughput`,
`response.mean`, `response.p50`, `response.p90`, `response.p95`, `response.p99`,
`count.completed`, `count.errors`, `count.timed_out`, the measurement errors
`throughput.std_error`, `response.mean.std_error` ... `response.p99.std_error`,
`count.error.<kind>`, `<host>.cpu.utilization` and the database's own figures
`database.<metric>` (such as `database.lock.wait`, which `tiersim plan --database` writes from
the database's statistics).
The names are tiersim's metric names, so a measured table and a simulated one line up.
An empty cell means the source file does not say; a value is never filled in by guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sim.measurements.errors import MeasurementError

PERCENTILES = (50, 90, 95, 99)
RESPONSE = ["response.mean", *(f"response.p{p}" for p in PERCENTILES)]
STD_ERROR = ".std_error"
RESPONSE_ERRORS = [f"{column}{STD_ERROR}" for column in RESPONSE]
KEY = ["run", "window_start_s", "window_end_s", "class"]
FIXED = [
    *KEY,
    "users",
    "arrival_rate_per_s",
    "throughput",
    *RESPONSE,
    "count.completed",
    "count.errors",
    "count.timed_out",
    f"throughput{STD_ERROR}",
    *RESPONSE_ERRORS,
]
ERROR_PREFIX = "count.error."
CPU_SUFFIX = ".cpu.utilization"
DATABASE_PREFIX = "database."  # the shared database's figures, named as its simulated metrics
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}

Row = dict[str, Any]


def column_order(rows: Iterable[Row]) -> list[str]:
    """The fixed columns, then error kinds, then hosts' utilisation, then the database's figures
    (with their `.std_error`), each sorted by name."""
    extra: set[str] = set()
    for row in rows:
        extra.update(k for k in row if k not in FIXED)
    hosts = sorted(k for k in extra if k.endswith(CPU_SUFFIX))  # a host "database" too
    database = sorted(k for k in extra if k.startswith(DATABASE_PREFIX) and k not in hosts)
    errors = sorted(k for k in extra if k.startswith(ERROR_PREFIX))
    unknown = sorted(extra - set(database) - set(hosts) - set(errors))
    if unknown:
        raise ValueError(f"not a measurement-table column: {', '.join(unknown)}")
    return [*FIXED, *errors, *hosts, *database]


def frame(rows: list[Row]):
    """The rows as a pandas DataFrame in the documented column order (empty cells NaN)."""
    import pandas as pd

    columns = column_order(rows)
    table = pd.DataFrame.from_records(rows, columns=columns)
    for column in columns:
        if column not in ("run", "class"):
            table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
    return table


def table_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise MeasurementError(
            path, None, f"unknown table suffix {suffix or '(none)'!r}; expected .csv or .parquet"
        )
    return SUFFIXES[suffix]


def write(rows: list[Row], path: str | Path) -> None:
    """Write the table as CSV or Parquet, chosen by the file's suffix."""
    kind = table_format(path)
    table = frame(rows)
    if kind == "csv":
        table.to_csv(path, index=False, na_rep="", float_format="%.10g")
    else:
        table.to_parquet(path, index=False)


def read(path: str | Path):
    """Read a table written by `write` (or by hand), checking its columns and values."""
    import pandas as pd

    kind = table_format(path)
    if kind == "csv":
        from sim.measurements.text import read_lines

        lines = read_lines(path, "a measurement table (CSV with a header line)")
        header = lines[0].split(",")
        missing = [c for c in KEY if c not in header]
        if missing:
            raise MeasurementError(
                path,
                1,
                f"header lacks {', '.join(missing)}; expected a measurement table's header "
                f"({', '.join(KEY)}, ...)",
            )
        try:
            table = pd.read_csv(
                path,
                dtype={"run": str, "class": str},
                keep_default_na=False,
                na_values=[""],
                encoding="utf-8-sig",
            )
        except (pd.errors.ParserError, ValueError) as exc:
            raise MeasurementError(path, None, f"not a CSV table ({exc})") from None
        first_data_line = 2
    else:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise MeasurementError(path, None, f"not a Parquet table ({exc})") from None
        missing = [c for c in KEY if c not in table.columns]
        if missing:
            raise MeasurementError(path, None, f"lacks the columns {', '.join(missing)}")
        first_data_line = None
    for column in table.columns:
        if column in ("run", "class"):
            continue
        try:
            column_order([{column: None}])
        except ValueError:
            raise MeasurementError(
                path,
                1 if kind == "csv" else None,
                f"unknown column {column!r}; expected the documented columns "
                f"(docs/measurement-table.md)",
            ) from None
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() & table[column].notna()
        if bad.any():
            index = int(bad.to_numpy().argmax())
            line = first_data_line + index if first_data_line is not None else None
            raise MeasurementError(
                path, line, f"{column} = {table[column].iloc[index]!r}; expected a number"
            )
        table[column] = values.astype(float)
    return table


def successes_only(row: Row) -> Row:
    """An aggregated row (ab's report, Locust's statistics) whose `count.completed`,
    `throughput` and `response.*` count every request, failed ones included, made the table's:
    successes only. The tools' means and percentiles mix failures in and cannot be taken apart,
    so with any failure they are left empty (the file does not say the successes' figures)."""
    total = row.get("count.completed", math.nan)
    failed = row.get("count.errors", math.nan)
    if not (isinstance(failed, (int, float)) and math.isfinite(failed) and failed > 0):
        return row
    successes = max(0.0, total - failed)
    out = dict(row)
    out["count.completed"] = successes
    out["throughput"] = row["throughput"] * successes / total if total > 0 else math.nan
    for column in RESPONSE:
        out[column] = math.nan
    return out


def numbers(rows, column: str):
    """A column of `rows` as floats; all NaN where a table written by hand lacks the column (an
    absent column, like an empty cell, means the file does not say)."""
    import numpy as np

    if column not in rows:
        return np.full(len(rows), math.nan)
    return rows[column].to_numpy(dtype=float)


def failed_requests(rows) -> float:
    """The requests a run's rows (its kept windows, class `total`) say failed: `count.errors` +
    `count.timed_out`, which are in none of its response times; NaN where neither column holds
    a number (the file does not say which requests failed)."""
    import numpy as np

    parts = [numbers(rows, column) for column in ("count.errors", "count.timed_out")]
    known = [values for values in parts if np.isfinite(values).any()]
    return float(sum(np.nansum(values) for values in known)) if known else math.nan


def failed_share(completed: float, failed: float) -> float:
    """failed / (completed + failed): the share of the run's requests that ended in a failure;
    NaN when unknown or when none ended."""
    ended = completed + failed
    return failed / ended if ended > 0 else math.nan


def nan_to_none(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
