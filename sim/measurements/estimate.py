"""Service demands from measured utilisation and throughput.

One class: the service demand law D = U / X (Denning and Buzen). Over several windows it is
the regression U(w) = D·X(w) through the origin. Several classes: utilisation-based regression
U_host(w) = Σ_c D_c·X_c(w) (+ U_0, a background utilisation, with `background=True`) by
non-negative least squares over the windows (scipy.optimize.nnls).

Standard errors are the classical least-squares ones, from the residual variance
s² = RSS/(n − p) and (XᵀX)⁻¹ of the full design, evaluated at the NNLS estimate; intervals are
estimate ± t(n − p)·SE, with the lower end cut at 0. A demand that NNLS pinned at 0 is marked
`at_bound`: its interval is a rough guide only. Demands are in seconds of the whole host per
request (utilisation is a fraction of all the host's cores): multiply by the core count for
CPU-seconds.

Classes whose throughputs move together across the windows cannot be told apart: the
regression then splits their combined demand arbitrarily. This is detected from the singular
values of the column-normalised design: a condition index above 30 (Belsley, Kuh and Welsch's
threshold for strong collinearity) raises a warning naming the classes that weigh on the
near-null direction.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from sim.measurements.classes import TOTAL
from sim.measurements.errors import MeasurementError
from sim.measurements.table import CPU_SUFFIX

CONDITION_LIMIT = 30.0
LOADING_SHARE = 0.3  # |component| of a near-null direction that implicates a class
BACKGROUND = "(background)"


@dataclass
class Demand:
    name: str  # a class, or "(background)" for U_0
    demand_s: float
    std_error_s: float
    low_s: float
    high_s: float
    at_bound: bool


@dataclass
class HostDemands:
    host: str
    method: str
    windows: int
    demands: list[Demand]
    residual_std: float  # of utilisation, a fraction
    condition_number: float
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        document = asdict(self)
        for key, value in list(document.items()):
            if isinstance(value, float) and not math.isfinite(value):
                document[key] = None
        for demand in document["demands"]:
            for key, value in demand.items():
                if isinstance(value, float) and not math.isfinite(value):
                    demand[key] = None
        return document


def collinear_groups(design: np.ndarray, names: list[str]) -> tuple[float, list[list[str]]]:
    """The condition number of the column-normalised design and, for each near-null
    direction, the classes that weigh on it."""
    norms = np.linalg.norm(design, axis=0)
    scaled = design / np.where(norms > 0, norms, 1.0)
    _, singular, right = np.linalg.svd(scaled, full_matrices=False)
    if singular[0] == 0:
        return math.inf, [names]
    condition = singular[0] / singular[-1] if singular[-1] > 0 else math.inf
    groups = []
    for value, vector in zip(singular, right):
        if value == 0 or singular[0] / value > CONDITION_LIMIT:
            members = [names[j] for j in np.flatnonzero(np.abs(vector) >= LOADING_SHARE)]
            if members:
                groups.append(members)
    missing = len(names) - len(singular)  # fewer windows than unknowns
    if missing > 0:
        groups.append(list(names))
    return condition, groups


def fit(
    throughputs: np.ndarray,
    utilisation: np.ndarray,
    names: list[str],
    *,
    host: str = "host",
    background: bool = False,
    level: float = 0.95,
) -> HostDemands:
    """Demands from a windows × classes throughput matrix and the host's utilisation per window."""
    from scipy import optimize, stats

    throughputs = np.asarray(throughputs, dtype=float).reshape(len(utilisation), -1)
    utilisation = np.asarray(utilisation, dtype=float)
    warnings: list[str] = []
    active = [j for j in range(throughputs.shape[1]) if np.any(throughputs[:, j] > 0)]
    for j in range(throughputs.shape[1]):
        if j not in active:
            warnings.append(
                f"class {names[j]} has no throughput in any window with {host}'s utilisation: "
                "its demand cannot be estimated"
            )
    columns = [throughputs[:, j] for j in active]
    labels = [names[j] for j in active]
    if background:
        columns.append(np.ones(len(utilisation)))
        labels.append(BACKGROUND)
    if not columns:
        raise ValueError(f"{host}: no class has any throughput")
    design = np.column_stack(columns)
    n, p = design.shape
    estimate, _ = optimize.nnls(design, utilisation)
    residual = utilisation - design @ estimate
    dof = n - p
    condition, groups = collinear_groups(design, labels)
    for group in groups:
        if BACKGROUND in group and len(group) > 1:
            others = [g for g in group if g != BACKGROUND]
            warnings.append(
                f"{' and '.join(others)} barely change(s) across the windows (condition number "
                f"{condition:.3g} > {CONDITION_LIMIT:g}), so their demand cannot be told apart "
                "from the background utilisation; add windows at other loads, or leave out "
                "--background"
            )
        elif len(group) > 1:
            warnings.append(
                f"{' and '.join(group)} are collinear across the windows (condition number "
                f"{condition:.3g} > {CONDITION_LIMIT:g}): their throughputs move together, so "
                "their demands cannot be told apart; add windows where their mix differs"
            )
        elif group:
            warnings.append(
                f"{group[0]}'s throughput is nearly constant relative to the others (condition "
                f"number {condition:.3g}): its demand is poorly determined"
            )
    if dof > 0:
        variance = float(residual @ residual) / dof
        try:
            covariance = variance * np.linalg.inv(design.T @ design)
            errors = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
        except np.linalg.LinAlgError:
            errors = np.full(p, math.inf)
        quantile = float(stats.t.ppf(0.5 + level / 2.0, dof))
    else:
        variance = math.nan
        errors = np.full(p, math.nan)
        quantile = math.nan
        warnings.append(
            f"{n} window(s) for {p} unknown(s): no residual degrees of freedom, so no standard "
            "errors (import with a shorter --window, or more runs)"
        )
    demands = [
        Demand(
            name=label,
            demand_s=float(value),
            std_error_s=float(error),
            low_s=max(0.0, float(value - quantile * error)),
            high_s=float(value + quantile * error),
            at_bound=bool(value == 0.0),
        )
        for label, value, error in zip(labels, estimate, errors)
    ]
    if len(active) == 1 and not background:
        method = "service demand law D = U/X" + (
            " (one window)" if n == 1 else ", regression over windows"
        )
    else:
        method = "utilisation regression, non-negative least squares"
    return HostDemands(
        host=host,
        method=method,
        windows=n,
        demands=demands,
        residual_std=math.sqrt(variance) if math.isfinite(variance) else math.nan,
        condition_number=float(condition),
        warnings=warnings,
    )


def hosts_of(table) -> list[str]:
    return [c[: -len(CPU_SUFFIX)] for c in table.columns if c.endswith(CPU_SUFFIX)]


def estimate(
    table,
    *,
    host: str | None = None,
    background: bool = False,
    level: float = 0.95,
    source: str = "<table>",
) -> list[HostDemands]:
    """Per-host demands of a measurement table's classes (the `total` row only if the table
    has no other class)."""
    hosts = hosts_of(table)
    if not hosts:
        raise MeasurementError(
            source,
            None,
            "no <host>.cpu.utilization column; expected a table imported with --utilisation FILE",
        )
    if host is not None:
        if host not in hosts:
            raise MeasurementError(
                source, None, f"no host {host!r}; expected one of {', '.join(hosts)}"
            )
        hosts = [host]
    classes = table[table["class"] != TOTAL]
    if classes.empty:
        classes = table
    results = []
    for name in hosts:
        column = f"{name}{CPU_SUFFIX}"
        usable = classes[classes[column].notna() & classes["throughput"].notna()]
        if usable.empty:
            raise MeasurementError(
                source, None, f"{column} is empty in every window with a throughput"
            )
        keys = ["run", "window_start_s", "window_end_s"]
        matrix = usable.pivot_table(
            index=keys, columns="class", values="throughput", aggfunc="sum", fill_value=0.0
        )
        utilisation = usable.groupby(keys)[column].first().loc[matrix.index]
        results.append(
            fit(
                matrix.to_numpy(),
                utilisation.to_numpy(),
                [str(c) for c in matrix.columns],
                host=name,
                background=background,
                level=level,
            )
        )
    return results
