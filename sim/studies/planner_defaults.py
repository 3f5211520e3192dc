"""What `tiersim plan` takes when it is not told: the light level's samples, whose shape decides
the tail, and Tomcat's thread count, which is not a number to guess.

The samples: the per-sample file the lightest fitted run was imported from, as the import
recorded it beside the table (`sim.measurements.sources`: the file and the span it observed),
else `RUN.jtl` or `RUN.jtl.gz` beside the table.  Without either, the p95 is not fitted and the
tail is the template's assumption, and the planner says so.

The threads (Tomcat `maxThreads`): without `--threads` and without a model of the user's own
(`tiersim from-config` output, `--model`), they are `[[choose]]` candidates: powers of two
from 4 below the heaviest fitted run's users (at or above it no fitted run can tell candidates
apart: the users never fill the pool) and Tomcat's default 200.  The fit weighs them, and a
candidate the fitted runs cannot rule out widens every interval by its weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sim.measurements.format_names import SHAPE_FORMATS

TOMCAT_DEFAULT_THREADS = 200  # Tomcat 8.5-11 maxThreads default (server.xml <Connector>)
LEAST_THREADS = 4


@dataclass(frozen=True)
class LightSamples:
    """The per-sample file of a run, the span of it to read, and how it was found."""

    run: str
    file: str
    format: str
    from_s: float
    until_s: float | None
    found: str  # "recorded by the import" or "beside the table"


def light_samples(
    table_path: str | Path, run: str, warmup_s: float
) -> tuple[LightSamples | None, str]:
    """The per-sample file `run` was imported from, or None and the reason none was found."""
    from sim.measurements.sources import read_sources

    table = Path(table_path)
    recorded = read_sources(table)
    if recorded is not None:
        files = [s for s in recorded if s.run == run]
        if len(files) == 1 and files[0].format in SHAPE_FORMATS and Path(files[0].file).is_file():
            source = files[0]
            return (
                LightSamples(
                    run,
                    source.file,
                    source.format,
                    # the experiment's warm-up, where it cuts later than the import did
                    max(source.from_s, warmup_s),
                    source.until_s,
                    "recorded by the import",
                ),
                "",
            )
        if len(files) > 1:
            return None, f"{run} was joined from {len(files)} files (--run)"
        if files and files[0].format not in SHAPE_FORMATS:
            return None, f"{run} is a {files[0].format} file, whose samples need more options"
        if files:
            return None, f"{files[0].file}, which {run} was imported from, is gone"
    for name in (f"{run}.jtl", f"{run}.jtl.gz"):
        beside = table.parent / name
        if beside.is_file():
            return LightSamples(run, str(beside), "jtl", warmup_s, None, "beside the table"), ""
    return None, (
        f"no record of {run}'s file beside {table.name} (an import before tiersim recorded its "
        f"files) and no {run}.jtl beside it"
    )


def thread_candidates(heaviest_users: float) -> tuple[int, ...]:
    """Tomcat maxThreads candidates when none is given: powers of two from `LEAST_THREADS`
    below the heaviest fitted run's users, then Tomcat's default."""
    ladder = []
    count = LEAST_THREADS
    while count < min(heaviest_users, TOMCAT_DEFAULT_THREADS):
        ladder.append(count)
        count *= 2
    return (*ladder, TOMCAT_DEFAULT_THREADS)
