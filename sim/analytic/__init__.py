"""Analytic queueing results the simulator is validated against, and `tiersim solve`."""

from sim.analytic.erlang import (
    StationMetrics,
    erlang_b,
    erlang_c,
    mm1,
    mm1_response_quantile,
    mmc,
    mmc_response_exceeds,
    mmc_response_quantile,
    mmc_wait_exceeds,
    mmck,
)
from sim.analytic.finite_source import finite_source
from sim.analytic.mg1 import md1, mg1, mg1_ps_response
from sim.analytic.mva import (
    Bounds,
    ClosedNetwork,
    MvaResult,
    Station,
    asymptotic_bounds,
    balanced_job_bounds,
    exact_mva,
    schweitzer_mva,
)

__all__ = [
    "Bounds",
    "ClosedNetwork",
    "MvaResult",
    "Station",
    "StationMetrics",
    "asymptotic_bounds",
    "balanced_job_bounds",
    "erlang_b",
    "erlang_c",
    "exact_mva",
    "finite_source",
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
    "schweitzer_mva",
]
