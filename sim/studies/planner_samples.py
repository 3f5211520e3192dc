"""Whether each run `tiersim plan` fits has the samples its fitted figures need: refused where
a figure cannot be estimated from so few, fitted with a warning where its error is assumed
rather than measured.  A level of 3 samples is never fitted without a word.

A fitted run gives two statistics: its mean (the throughput and the mean response time, both
counts of its successful requests) and, where the light level's shape is fitted, its p95.

* **The mean is refused below 4 samples.**  Where a run's own samples cannot measure its error,
  the fit weighs the mean by the error of n samples of coefficient of variation 1, 1/√n of it
  (`sim.studies.measured_table`); below 1.96² = 3.84 samples its 95 % interval reaches zero,
  and the figure cannot tell the level's mean from no time at all.
* **The p95 is refused below 20 samples**, 1/(1 − 0.95): with fewer, not one sample is expected
  above it, so what the samples call their p95 is their largest value or next to it, a figure
  that grows with the run's length instead of estimating the level's p95.
* **Either is fitted with a warning** below the samples its batch-means error needs
  (`sim.measurements.sampling.min_samples`: 40 for the mean, 400 for the p95): the run then
  enters the fit with an assumed error (cv 1), not one measured from its own samples.  A run
  of three windows or more has its mean's error from their spread (`sim.studies.
  measured_table`), measured: its mean is not warned of.

**A fitted run whose requests failed is fitted with a warning.**  Its throughput and response
times are of the answered requests (`count.completed`), and the think time the response-time
law gives reads high by about f·N/X for a failed share f (`sim.measurements.laws`): the users
also spent the failed requests and the think after them.  A model that refuses none of them
matches those figures only with the wrong think time, so the run is named with its share.
"""

from __future__ import annotations

import math

from sim.measurements.sampling import min_samples
from sim.studies.experiment import ExperimentError

Z_95 = 1.959963984540054  # the standard normal's 97.5 % point
FEWEST_FOR_MEAN = math.ceil(Z_95**2)  # 4
POOLED_WINDOWS = 3  # windows from which a run's mean has its error by batch means


def fewest_for_percentile(p: float) -> int:
    """Samples below which not one is expected above the p-th percentile (0..100)."""
    return math.ceil(1.0 / (1.0 - p / 100.0) - 1e-9)


def check_fitted_samples(
    laws, percentiles: list[float], warmup_s: float, source, windows: dict[str, int]
) -> list[str]:
    """Raise ExperimentError for the first fitted run (`RunLaws`) too small for a statistic it
    is fitted to (the mean, and each of `percentiles`); return a warning for each run whose
    statistics' errors are assumed, and for each whose requests failed.  `windows`: each run's
    windows after the warm-up."""
    after = f" after --warmup {warmup_s:g} s" if warmup_s > 0 else ""
    warnings = []
    for law in laws:
        n = law.completed
        statistics: list[tuple[str, float | None, int]] = [("the mean", None, FEWEST_FOR_MEAN)]
        statistics += [(f"p{p:g}", p, fewest_for_percentile(p)) for p in percentiles]
        for label, p, fewest in statistics:
            if n < fewest:
                why = (
                    "to tell it from zero at 95 % (its error, 1/sqrt(n) of it)"
                    if p is None
                    else "for one sample to be expected above it"
                )
                raise ExperimentError(
                    f"--fit {law.run}: {n} successful samples in {source}{after}; {label} "
                    f"needs at least {fewest} {why}; expected a longer run at this level "
                    f"({_seconds(min_samples(p), law.throughput)}), or --fit another run"
                )
        pooled = windows.get(law.run, 1) >= POOLED_WINDOWS
        weak = [
            (label, p)
            for label, p, _ in statistics
            if n < min_samples(p) and not (p is None and pooled)
        ]
        if weak:
            needed = min_samples(weak[-1][1])
            warnings.append(
                f"--fit {law.run}: {n} successful samples{after}: "
                f"{' and '.join(label for label, _ in weak)} fitted with an assumed error "
                f"(cv 1), not one measured from the run's own samples ({weak[-1][0]} needs "
                f"{needed}: {_seconds(needed, law.throughput)})"
            )
    for law in laws:
        if law.failed_share > 0:
            high_ms = 1000 * law.failed_share * law.users / law.throughput  # f·N/X
            warnings.append(
                f"--fit {law.run}: {law.failed:,.0f} of {law.completed + law.failed:,.0f} "
                f"requests failed ({100 * law.failed_share:.2g} %){after}: its throughput and "
                "response times are of the answered ones, and its think time by the "
                f"response-time law reads high by about {high_ms:.3g} ms (f·N/X); fit runs "
                "without failures, or a model that fails as many"
            )
    return warnings


def _seconds(samples: int, throughput: float) -> str:
    if not throughput > 0:
        return f"{samples} samples"
    return f"about {math.ceil(samples / throughput)} s at its {throughput:.3g} req/s"
