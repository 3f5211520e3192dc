"""Read load-test files of one format into measurement-table rows (`tiersim import`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sim.measurements.classes import ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.format_names import AGGREGATED, FORMATS, PER_SAMPLE, WHOLE_RUN
from sim.measurements.sources import SourceFile
from sim.measurements.table import Row
from sim.measurements.windows import Cut, SampleLog, merge, sample_rows


class ImportUsageError(ValueError):
    """Options that do not fit together or do not fit the format (a command-line error)."""


@dataclass
class ImportOptions:
    window_s: float | None = None
    classes: ClassMap = field(default_factory=ClassMap)
    run: str | None = None
    utilisation: list[str] = field(default_factory=list)
    log_format: str | None = None
    encoding: str = "utf-8"
    cut: Cut = field(default_factory=Cut)
    # otel: --tier rules mapping spans to tiers (sim/measurements/formats/otel_tiers.py)
    tier_rules: list[str] = field(default_factory=list)
    # progress(what, done, total) while a big file is read ("reading run.jtl", lines) and
    # while its windows' statistics are computed ("statistics of run", windows)
    progress: Callable[[str, int, int], None] | None = None
    # filled by the import: each run's per-sample files and the span observed of each
    # (`sim.measurements.sources`)
    sources: list[SourceFile] = field(default_factory=list)
    # the reader of a per-sample file, `read_samples` or one that keeps what it read for a
    # rerun after Ctrl-C (`sim.studies.kept_samples`)
    read: Callable[[str, str, ImportOptions], SampleLog] | None = None


EPOCH_MS_ABOVE = 1e11  # an epoch in seconds passes 1e11 in the year 5138; in ms it did in 1973
EPOCH_US_ABOVE = 1e14  # the same two dates in milliseconds and microseconds


def parse_start(text: str) -> float:
    """The test's start (`--start`) as seconds since the epoch: seconds, milliseconds (JMeter's
    `timeStamp` unit) or microseconds since the epoch, told apart by magnitude, or an ISO 8601 time with its zone
    (2026-11-23T19:26:24Z, 2026-11-23 20:26:24+01:00)."""
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value) or value <= 0:
            raise ImportUsageError(f"--start {text}: expected a time since the epoch > 0")
        if value > EPOCH_US_ABOVE:
            return value / 1e6
        return value / 1000.0 if value > EPOCH_MS_ABOVE else value
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ImportUsageError(
            f"--start {text!r}: expected an ISO 8601 time with its zone "
            "(2026-11-23T19:26:24Z) or seconds (or JMeter's milliseconds) since the epoch"
        ) from None
    if when.tzinfo is None:
        raise ImportUsageError(
            f"--start {text!r} has no zone; expected it with one, e.g. {text.strip()}Z for UTC "
            "or +01:00 (JMeter prints local time)"
        )
    return when.timestamp()


def check_cut(format: str, files: list[str], options: ImportOptions) -> None:
    """The observation options fit together and fit the format (before any file is read)."""
    cut = options.cut
    given = cut.start_s is not None or cut.warmup_s != 0 or cut.until_s is not None
    if not given:
        return
    if format in AGGREGATED:
        raise ImportUsageError(
            f"--start, --warmup and --until cut samples by time; a {format} file is an aggregate "
            "without them (import the per-sample file: ab -g, Locust's _stats_history.csv is "
            "windowed with --window and cut by `warmup_s` in the experiment)"
        )
    if not cut.warmup_s >= 0:
        raise ImportUsageError(f"--warmup {cut.warmup_s:g}: expected seconds >= 0")
    if cut.until_s is not None and not cut.until_s > cut.warmup_s:
        before = "the warm-up's end" if cut.warmup_s > 0 else "the test's start"
        raise ImportUsageError(
            f"--until {cut.until_s:g} s is not after {before} (--warmup {cut.warmup_s:g} s); "
            "expected --until later than --warmup, both seconds after the test's start"
        )
    if cut.start_s is not None and len(files) > 1 and options.run is None:
        raise ImportUsageError(
            "--start is one test's start, but each of the files is a run of its own: import "
            "them one at a time, or join them into one run with --run NAME"
        )


def run_stem(path: str) -> str:
    """A file's run id: its name less its format's suffix and a compression's (`users20.jtl.gz`
    is run `users20`, as `users20.jtl` is, so that `--fit users20` names either)."""
    name = Path(path)
    if name.suffix.lower() == ".gz":
        name = name.with_suffix("")
    return name.stem


def _run_names(files: list[str]) -> list[str]:
    """Each file's run id: its stem, or its name where stems collide."""
    stems = [run_stem(f) for f in files]
    names = [s if stems.count(s) == 1 else Path(f).name for s, f in zip(stems, files)]
    return [n if names.count(n) == 1 else f for n, f in zip(names, files)]


def _reporter(options: ImportOptions, what: str) -> Callable[[int, int], None] | None:
    report = options.progress
    if report is None:
        return None
    return lambda done, total: report(what, done, total)


def read_samples(format: str, path: str, options: ImportOptions) -> SampleLog:
    """The samples of one per-sample file (jtl, ab-gnuplot, access-log, k6, gatling, otel)."""
    progress = _reporter(options, f"reading {Path(path).name}")
    if format in ("k6", "gatling", "otel"):
        from sim.measurements.formats import gatling, k6, otel

        reader = {"k6": k6.read, "gatling": gatling.read, "otel": otel.read}[format]
        log = reader(path, options.encoding, progress)
    elif format == "jtl":
        from sim.measurements.formats import jtl

        log = jtl.read(path, options.encoding, progress)
    elif format == "ab-gnuplot":
        from sim.measurements.formats import ab

        log = ab.read_gnuplot(path, options.encoding, progress)
    else:
        from sim.measurements.formats import accesslog

        assert options.log_format is not None
        log = accesslog.read(path, options.log_format, options.encoding, progress)
    if options.classes.by == "url" and not log.urls_known:
        hint = " (save it with jmeter.save.saveservice.url=true)" if format == "jtl" else ""
        raise MeasurementError(
            path,
            1,
            f"--class-by url, but the file records no URL{hint}; expected a URL per sample or --class-by label",
        )
    return log


def import_files(format: str, files: list[str], options: ImportOptions) -> list[Row]:
    """All rows of the files: one run per file, or one run of all files with `options.run`."""
    return import_runs(format, files, options)[0]


def import_runs(format: str, files: list[str], options: ImportOptions) -> tuple[list[Row], list]:
    """The rows of the files, and for traces (otel) each run's per-tier breakdown
    (`otel_tiers.TierBreakdown`); an empty list for the other formats."""
    if format not in FORMATS:
        raise ImportUsageError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    if not files:
        raise ImportUsageError("no files given")
    if options.window_s is not None and not options.window_s > 0:
        raise ImportUsageError(f"--window {options.window_s:g}: expected seconds > 0")
    if format == "access-log" and not options.log_format:
        raise ImportUsageError(
            "access-log needs --log-format, the LogFormat string of the server, "
            "e.g. --log-format '%h %l %u %t \"%r\" %>s %b %D'"
        )
    if format in AGGREGATED and options.run is not None and len(files) > 1:
        raise ImportUsageError(
            f"--run joins files into one run by their timestamps; {format} files are each a "
            "whole run: leave --run out"
        )
    if format in WHOLE_RUN and options.window_s is not None:
        raise ImportUsageError(f"--window: a {format} file is one aggregate over the whole run")
    if options.tier_rules and format != "otel":
        raise ImportUsageError(f"--tier maps trace spans to tiers; a {format} file has no spans")
    check_cut(format, files, options)
    from sim.measurements.formats import sar

    intervals = [(u, sar.read(u, options.encoding)) for u in options.utilisation]
    runs: list[tuple[str, list[Row], float | None]] = []
    tiers: list = []
    if format == "otel":
        from sim.measurements.trace_import import trace_runs

        runs, tiers = trace_runs(files, _run_names(files), options)
    elif format in PER_SAMPLE:
        read = options.read or read_samples
        logs = [read(format, f, options) for f in files]
        groups = (
            [(options.run, logs)]
            if options.run
            else [(name, [log]) for name, log in zip(_run_names(files), logs)]
        )
        for name, members in groups:
            cut = options.cut
            if format == "gatling" and cut.start_s is None:
                cut = _gatling_zero(members, cut)
            joined = merge(members)
            _record_sources(format, name, members, cut, options)
            rows, zero = sample_rows(
                joined,
                name,
                options.window_s,
                options.classes,
                cut,
                _reporter(options, f"statistics of {name}"),
            )
            _users_before_drain(rows, joined, zero)
            runs.append((name, rows, zero))
    else:
        names = [options.run] if options.run else _run_names(files)
        for name, path in zip(names, files):
            if format == "ab":
                from sim.measurements.formats import ab

                rows = ab.aggregate_rows(path, name, options.classes, options.encoding)
                zero = None
            elif format == "k6-summary":
                from sim.measurements.formats import k6_summary

                rows, zero = k6_summary.aggregate_rows(path, name, options.encoding), None
            elif format == "gatling-stats":
                from sim.measurements.formats import gatling_stats

                rows = gatling_stats.aggregate_rows(path, name, options.classes, options.encoding)
                zero = None
            else:
                from sim.measurements.formats import locust

                rows, zero = locust.aggregate_rows(
                    path, name, options.classes, options.window_s, options.encoding
                )
                if zero is None and options.window_s is not None:
                    raise ImportUsageError(
                        f"--window: {path} is a Locust _stats.csv, one aggregate over the whole "
                        "run; the _stats_history.csv file can be windowed"
                    )
            runs.append((name, rows, zero))
    if intervals:
        from sim.measurements.utilisation import attach

        for (_name, rows, zero), path in zip(
            runs, files if not options.run else [files[0]] * len(runs)
        ):
            if zero is None:
                raise MeasurementError(
                    path,
                    None,
                    f"a {format} {'report' if format in WHOLE_RUN else 'summary'} carries no "
                    "timestamps, so --utilisation cannot be aligned to it; expected a per-sample "
                    "file (or Locust's _stats_history.csv)",
                )
            for upath, uintervals in intervals:
                attach(rows, zero, uintervals, upath)
    return [row for _, rows, _ in runs for row in rows], tiers


def _zero_s(log: SampleLog, cut: Cut) -> float:
    """The run's time zero (seconds since the epoch): --start, else its first sample's start."""
    return float(log.frame["start_s"].min()) if cut.start_s is None else cut.start_s


def _users_before_drain(rows: list[Row], log: SampleLog, zero_s: float) -> None:
    """A window's users without the run's drain (`sim.measurements.drain`): the samples that
    complete while the load generator's threads stop record 19, 18, ... 1 threads after 20, and
    averaged in they make a run of 20 threads one of 19.9 users.  Only the `users` of the
    windows the drain reaches change; the samples stay in every statistic."""
    import numpy as np

    from sim.measurements.drain import find_drain

    if len(log.frame) == 0:
        return
    drain = find_drain(log, zero_s)
    if drain is None:
        return
    ended = (log.frame["start_s"] + log.frame["elapsed_s"]).to_numpy(dtype=float) - zero_s
    users = log.frame["users"].to_numpy(dtype=float)
    last_end = max(float(row["window_end_s"]) for row in rows)
    for low, high in {(row["window_start_s"], row["window_end_s"]) for row in rows}:
        if high <= drain.start_s:
            continue
        # a sample at a window's end belongs to the next window, as the statistics count it
        inside = (ended >= low) & ((ended < high) | (high == last_end)) & (ended <= drain.start_s)
        if not inside.any():
            continue
        value = float(np.mean(users[inside]))
        for row in rows:
            if row["window_start_s"] == low and row["window_end_s"] == high:
                row["users"] = value


def _record_sources(
    format: str, run: str, members: list[SampleLog], cut: Cut, options: ImportOptions
) -> None:
    """Each file of the run and the span the import observed of it, in seconds after the
    file's own first sample started (as `sim.measurements.shape.samples_of_file` cuts)."""
    joined_zero = _zero_s(merge(members), cut) if len(members) > 1 else None
    for log in members:
        if len(log.frame) == 0:
            continue
        first = float(log.frame["start_s"].min())
        zero = joined_zero if joined_zero is not None else _zero_s(log, cut)
        options.sources.append(
            SourceFile(
                run=run,
                format=format,
                file=str(Path(log.path).resolve()),
                encoding=options.encoding,
                from_s=cut.warmup_s + zero - first,
                until_s=None if cut.until_s is None else cut.until_s + zero - first,
            )
        )


def _gatling_zero(logs: list[SampleLog], cut: Cut) -> Cut:
    """Time zero where Gatling's report starts the run: its first injected event (`injectStart`
    of gatling-charts' `LogFileReader`, the earliest REQUEST start, USER START or GROUP start;
    the earliest of the joined runs', as Gatling reads a folder of logs), as `--start` would give
    it. The report's rate (`GeneralStatsBuffer`'s count over the injection's seconds) and its
    time axis count from there, so `throughput` and `--warmup` do too. Not the RUN record: the
    simulation's start precedes the first user by Gatling's start-up and any `nothingFor`."""
    from dataclasses import replace

    from sim.measurements.formats.gatling import GatlingLog

    firsts = [log.run.first_injected_s for log in logs if isinstance(log, GatlingLog)]
    assert len(firsts) == len(logs)  # read_samples reads every Gatling file with gatling.read
    return replace(cut, start_s=min(firsts))
