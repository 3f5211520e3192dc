"""Queueing theory for notebooks and tests: the formulas the simulator is validated against
(Erlang B/C, M/M/c/K, M/G/1, finite source, G/M/1 with Erlang arrivals, exact and Schweitzer
MVA with its bounds, multi-class MVA), the operational laws, and confidence intervals.

    import sim
    sim.theory.mmc(arrival_rate=8.0, service_rate=1.0, servers=10).response_time
"""

from sim.analytic import (
    Bounds,
    ClosedNetwork,
    MvaResult,
    Station,
    StationMetrics,
    asymptotic_bounds,
    balanced_job_bounds,
    erlang_b,
    erlang_c,
    exact_mva,
    finite_source,
    md1,
    mg1,
    mg1_ps_response,
    mm1,
    mm1_response_quantile,
    mmc,
    mmc_response_exceeds,
    mmc_response_quantile,
    mmc_wait_exceeds,
    mmck,
    schweitzer_mva,
)
from sim.analytic.gim1 import erlang_k_m1_response, erlang_k_m1_sigma
from sim.analytic.multiclass_mva import (
    MultiClassNetwork,
    MultiClassResult,
    exact_multiclass_mva,
    schweitzer_multiclass_mva,
)
from sim.analytic.operational import ImpliedThink, implied_think
from sim.stats.confidence import Interval, paired_t_interval, replications_needed, t_interval

__all__ = [
    "Bounds",
    "ClosedNetwork",
    "ImpliedThink",
    "Interval",
    "MultiClassNetwork",
    "MultiClassResult",
    "MvaResult",
    "Station",
    "StationMetrics",
    "asymptotic_bounds",
    "balanced_job_bounds",
    "erlang_b",
    "erlang_c",
    "erlang_k_m1_response",
    "erlang_k_m1_sigma",
    "exact_multiclass_mva",
    "exact_mva",
    "finite_source",
    "implied_think",
    "md1",
    "mg1",
    "mg1_ps_response",
    "mm1",
    "mm1_response_quantile",
    "mmc",
    "mmc_response_exceeds",
    "mmc_response_quantile",
    "mmc_wait_exceeds",
    "mmck",
    "paired_t_interval",
    "replications_needed",
    "schweitzer_multiclass_mva",
    "schweitzer_mva",
    "t_interval",
]
