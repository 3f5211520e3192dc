"""What a closed load test says by the operational laws alone, per run of a measurement table.

A JMeter run is a closed system: N threads (the JTL's `allThreads`), each sending a request,
waiting for its answer, then pausing (the test plan's timers). The response-time law
R = N/X - Z (Denning and Buzen) gives the think time the timers added, Z = N/X - R, from the
measured throughput X and mean response time R, without reading the test plan. A run's
lowest-load response time is the first guess of the demand where no utilisation was
recorded: with one user nothing queues, so R(1) is the sum of the demands on the request's
path (the load generator's own time included).

X and R are of the answered requests only.  A run whose requests failed spent its users' time
on them too (the failed request and the think after it), which neither X nor R holds: for a
failed share f, N/X is 1/(1 - f) times the users' cycle over all their requests, and Z reads
high by about f·N/X.  Each run carries its failed requests (`count.errors` +
`count.timed_out`), so that the law is read beside them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from sim.measurements.classes import TOTAL
from sim.measurements.table import failed_requests, failed_share, numbers


@dataclass
class RunLaws:
    run: str
    users: float  # time-weighted mean of the windows' users
    throughput: float  # completions per second over the run
    response_mean_s: float  # weighted by completions
    think_s: float  # N/X - R
    completed: int
    failed: float = math.nan  # count.errors + count.timed_out; NaN: the file does not say

    @property
    def failed_share(self) -> float:
        """failed / (completed + failed); NaN where the file does not say."""
        return failed_share(self.completed, self.failed)

    def as_dict(self) -> dict:
        return {**asdict(self), "failed_share": self.failed_share}


def run_laws(table, warmup_s: float = 0.0) -> list[RunLaws]:
    """One entry per run with throughput and response time (class `total`), in the table's
    order; windows starting before `warmup_s` are left out.  A run whose file names no users
    (k6, Gatling, a trace) has its laws with N and Z unknown (NaN): `estimate` prints them as
    such, and `plan` refuses to fit it (`sim.studies.planner_samples`)."""
    rows = table[(table["class"] == TOTAL) & (table["window_start_s"] >= warmup_s)]
    out = []
    for run, group in rows.groupby("run", sort=False):
        length = (group["window_end_s"] - group["window_start_s"]).to_numpy(dtype=float)
        count = numbers(group, "count.completed")
        users = numbers(group, "users")
        response = numbers(group, "response.mean")
        known = length.sum() > 0 and count.sum() > 0
        if not known:
            continue
        n = float((users * length).sum() / length.sum())
        x = float(count.sum() / length.sum())
        done = count > 0
        r = float((response[done] * count[done]).sum() / count[done].sum())
        failed = failed_requests(group)
        out.append(RunLaws(str(run), n, x, r, n / x - r, int(count.sum()), failed))
    return out
