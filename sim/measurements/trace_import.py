"""`tiersim import otel`: the requests of traces into the measurement table, and each run's
per-tier time per request (`formats/otel_tiers.py`) beside it.

A trace's spans may be spread over several files (a file per service, or the Collector's
rotated files): with `--run NAME` all files are read into one set of spans before the
requests are found, so a request's spans join across files; without it each file is a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sim.measurements.classes import ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.formats import otel, otel_tiers
from sim.measurements.table import Row
from sim.measurements.windows import Cut, sample_rows


class ImportOptions(Protocol):
    """What a trace import reads of the importer's options (`importer.ImportOptions`, which
    imports this module: named here by shape, not imported back)."""

    run: str | None
    classes: ClassMap
    cut: Cut
    window_s: float | None
    encoding: str
    tier_rules: list[str]
    progress: Callable[[str, int, int], None] | None


def _progress(options: ImportOptions, what: str) -> Callable[[int, int], None] | None:
    report = options.progress
    return None if report is None else (lambda done, total: report(what, done, total))


def trace_runs(
    files: list[str], names: list[str], options: ImportOptions
) -> tuple[list[tuple[str, list[Row], float | None]], list[otel_tiers.TierBreakdown]]:
    rules = [otel_tiers.TierRule.parse(option) for option in options.tier_rules]
    groups = [(options.run, files)] if options.run else [(n, [f]) for n, f in zip(names, files)]
    runs: list[tuple[str, list[Row], float | None]] = []
    breakdowns = []
    for name, paths in groups:
        spans = [
            span
            for path in paths
            for span in otel.read_spans(
                path, options.encoding, _progress(options, f"reading {path}")
            )
        ]
        requests, others = otel.requests_of(spans)
        where = ", ".join(paths)
        if not requests:
            raise MeasurementError(
                where,
                None,
                f"{len(spans)} spans but no root SERVER span; expected the traces of a "
                "service's requests (a SERVER span with no parent read is a request)",
            )
        log = otel.sample_log(where, requests)
        if options.classes.by == "url" and not log.urls_known:
            raise MeasurementError(
                where,
                None,
                "--class-by url, but a request span has no url.path, http.target, url.full or "
                "http.url; expected --class-by label",
            )
        rows, zero = sample_rows(
            log,
            name,
            options.window_s,
            options.classes,
            options.cut,
            _progress(options, f"statistics of {name}"),
        )
        ends = [(r.start_s - zero) + r.duration_s for r in requests]
        high = max(ends) if options.cut.until_s is None else min(options.cut.until_s, max(ends))
        breakdowns.append(
            otel_tiers.breakdown(
                name,
                requests,
                options.classes,
                rules,
                zero,
                options.cut.warmup_s,
                high,
                len(others),
            )
        )
        runs.append((name, rows, zero))
    return runs, breakdowns


def write_tiers(breakdowns: list[otel_tiers.TierBreakdown], path: str) -> None:
    """The per-tier table as CSV (columns `otel_tiers.COLUMNS`)."""
    import pandas as pd

    rows = [row for b in breakdowns for row in b.rows]
    pd.DataFrame.from_records(rows, columns=otel_tiers.COLUMNS).to_csv(
        path, index=False, na_rep="", float_format="%.10g"
    )


def tiers_path(table_path: str) -> str:
    """Where the per-tier table of a measurement table is written: beside it, `NAME.tiers.csv`."""
    from sim.measurements.tier_evidence import tiers_path as beside

    return str(beside(table_path))


def summary_lines(breakdowns: list[otel_tiers.TierBreakdown], table_path: str) -> list[str]:
    """What the import says of the per-tier table: where it is, and what the rules left out."""
    lines = [
        f"wrote {tiers_path(table_path)}: per-tier time per request of {len(breakdowns)} run(s)"
    ]
    for breakdown in breakdowns:
        if breakdown.unmapped:
            listed = ", ".join(
                f"{name} x{count}" for name, count in sorted(breakdown.unmapped.items())
            )
            lines.append(
                f"unmapped spans (calls to untraced services, tier 'unmapped'; name them with "
                f"--tier TIER=name:REGEX): {listed}"
            )
        if breakdown.other_roots:
            lines.append(
                f"{breakdown.other_roots} root span(s) are not SERVER spans (background work, "
                "not requests) and are left out"
            )
    return lines
