"""M/G/1: Pollaczek-Khinchine for FCFS, and processor sharing (Kleinrock 1975, vol. 1 ch. 5; vol. 2 ch. 4)."""

from __future__ import annotations

from sim.analytic.erlang import StationMetrics


def mg1(arrival_rate: float, mean_service: float, service_scv: float) -> StationMetrics:
    """FCFS: Wq = rho E[S] (1 + c_s^2) / (2 (1 - rho))."""
    rho = arrival_rate * mean_service
    if not (arrival_rate > 0 and mean_service > 0 and service_scv >= 0):
        raise ValueError("need arrival_rate > 0, mean_service > 0, service_scv >= 0")
    if rho >= 1:
        raise ValueError(f"unstable: rho = {rho} >= 1")
    wait = rho * mean_service * (1 + service_scv) / (2 * (1 - rho))
    return StationMetrics(
        throughput=arrival_rate,
        utilization=rho,
        mean_in_system=arrival_rate * (wait + mean_service),
        mean_in_queue=arrival_rate * wait,
        mean_response=wait + mean_service,
        mean_wait=wait,
        wait_probability=rho,
    )


def md1(arrival_rate: float, service: float) -> StationMetrics:
    return mg1(arrival_rate, service, 0.0)


def mg1_ps_response(arrival_rate: float, mean_service: float) -> float:
    """M/G/1-PS mean response E[S]/(1 - rho), insensitive to the service distribution."""
    rho = arrival_rate * mean_service
    if rho >= 1:
        raise ValueError(f"unstable: rho = {rho} >= 1")
    return mean_service / (1 - rho)
