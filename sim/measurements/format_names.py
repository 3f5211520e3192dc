"""The names of the files `tiersim import` reads, one list for every command and reader that
names a format (`import FORMAT`, `estimate --shape-format`, `plan --shape-format`, the import's
record of its files).  No reader is imported here: the command line lists the names without
loading numpy."""

from __future__ import annotations

PER_SAMPLE = ("jtl", "ab-gnuplot", "access-log", "k6", "gatling", "otel")
AGGREGATED = ("ab", "locust", "k6-summary", "gatling-stats")
WHOLE_RUN = ("ab", "k6-summary", "gatling-stats")  # one aggregate, no windows
FORMATS = (*PER_SAMPLE, *AGGREGATED)
# the database's evidence, a table of its own (`sim.measurements.database`)
DATABASE_FORMATS = ("pg-stat", "pg-log", "mysql-slow", "mysql-digest")
# The per-sample files read again on their own, with nothing but their encoding: a light
# level's shape (`estimate --shape`, `plan --shape`, the file an import recorded).  An access
# log is read with its server's LogFormat, an option of the import that no record keeps.
SHAPE_FORMATS = ("jtl", "ab-gnuplot", "k6", "gatling", "otel")


def shape_format_problem(format: str) -> str | None:
    """Why a file of `format` (the import's name for it) gives no shape, or None when it does:
    the one sentence `--shape-format` and every reader of a light level's samples refuse with."""
    if format in SHAPE_FORMATS:
        return None
    if format in AGGREGATED:
        why = f"a {format} file is an aggregate, without each request's time"
        where = {
            "ab": "ab -g writes them: ab-gnuplot",
            "k6-summary": "k6 --out json writes them: k6",
            "gatling-stats": "its simulation.log holds them: gatling",
        }
        why += f" ({where[format]})" if format in where else ""
    elif format == "access-log":
        why = "an access log is read with its server's LogFormat, which only the import takes"
    elif format in DATABASE_FORMATS:
        why = f"{format} is the database's evidence, not the load test's requests"
    else:
        why = "not a format tiersim imports"
    return (
        f"{format!r}: {why}; the shape needs a time per request: expected one of "
        f"{', '.join(SHAPE_FORMATS)}"
    )
