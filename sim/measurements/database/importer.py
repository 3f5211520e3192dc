"""`tiersim import pg-stat|pg-log|mysql-slow|mysql-digest FILES -o evidence.csv --table T`:
the database files of the load test's runs into the database evidence table."""

from __future__ import annotations

from pathlib import Path

from sim.measurements.database.evidence import evidence_rows, levels_of
from sim.measurements.database.statements import StatementRun
from sim.measurements.errors import MeasurementError
from sim.measurements.format_names import DATABASE_FORMATS as FORMATS

SNAPSHOTS = ("pg-stat", "mysql-digest")  # before/after pairs
LOGS = ("pg-log", "mysql-slow")  # one file per run


class DatabaseUsageError(ValueError):
    """Options that do not fit a database format (a command-line error)."""


def read_statements(
    format: str, files: list[str], run: str | None, min_duration_ms: float | None
) -> list[StatementRun]:
    if format in SNAPSHOTS and run is not None:
        raise DatabaseUsageError(
            f"--run: {format} snapshots name their run (RUN.before.csv, RUN.after.csv); leave "
            "--run out"
        )
    if min_duration_ms is not None and format not in LOGS:
        raise DatabaseUsageError(
            f"--log-min-duration is a statement log's threshold; {format} snapshots count "
            "every call: leave it out"
        )
    if min_duration_ms is not None and min_duration_ms < 0:
        raise DatabaseUsageError(
            f"--log-min-duration {min_duration_ms:g}: expected the server's "
            "threshold in ms (log_min_duration_statement, long_query_time x 1000), >= 0"
        )
    if format == "pg-stat":
        from sim.measurements.database import pg_stat_statements

        return pg_stat_statements.import_runs(files)
    if format == "pg-log":
        from sim.measurements.database import postgres_log

        return postgres_log.import_runs(files, run, min_duration_ms)
    if format == "mysql-digest":
        from sim.measurements.database import mysql

        return mysql.import_digest_runs(files)
    from sim.measurements.database import mysql

    return mysql.import_slow_runs(files, run, min_duration_ms)


def import_database(
    format: str,
    files: list[str],
    table_path: str | Path | None,
    run: str | None = None,
    min_duration_ms: float | None = None,
) -> list[dict[str, object]]:
    """The evidence table's rows; `table_path`: the load test's measurement table (its runs'
    users and successful requests), or None."""
    if format not in FORMATS:
        raise DatabaseUsageError(
            f"unknown database format {format!r}; expected {', '.join(FORMATS)}"
        )
    statements = read_statements(format, files, run, min_duration_ms)
    levels = None
    if table_path is not None:
        from sim.measurements import table

        levels = levels_of(table.read(table_path))
        named = {s.run for s in statements}
        if levels and not named & set(levels):
            raise MeasurementError(
                table_path,
                None,
                f"none of its runs ({', '.join(sorted(levels)[:6])}) is a run of the database "
                f"files ({', '.join(sorted(named)[:6])}); expected the database files named "
                "after the runs (users20.before.csv for run users20)",
            )
    return evidence_rows(statements, levels)
