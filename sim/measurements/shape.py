"""The shape of the demand, learnt from a light load level's samples (`tiersim estimate --shape`).

At a light level nothing queues, so a response time is the request's own path: a part every
request pays alike (the network, the proxy, constant work: the least any request took) and a
part that varies. Each candidate is R = c + S with a fixed offset c ≥ 0 and S of one family:

* exponential (mean), gamma and lognormal (mean, cv), and the two-phase hyperexponential with
  balanced means (mean, scv ≥ 1) — the families `sim.random.distributions` simulates;
* each with c = 0 (the whole response varies) and with c fitted in [0, the least sample].

Parameters are fitted by maximum likelihood on the samples *as recorded*: a tool writes whole
milliseconds (JMeter) or microseconds, so each sample is the interval of its resolution r and
its likelihood F(x + r/2 − c) − F(x − r/2 − c). That likelihood is bounded, where the density's
is not as c reaches the least sample for a shape below 1 (Hill 1963): the grouped fit is the
one that has a maximum. Values recorded finer than 1 µs are grouped at 1 µs.

The candidates are ranked by AIC = 2k − 2 ln L (k parameters: the offset counts when fitted).
Those within 2 of the best are reported as fitting nearly as well (Burnham and Anderson 2002:
"substantial support"). Each candidate's Kolmogorov–Smirnov distance to the samples is given;
when even the best exceeds the 95 % critical value 1.36/√n_eff, no family describes the
samples and the empirical distribution is the honest choice.

Standard errors come from the observed information (the numerical Hessian of −ln L at the
fit), inflated for the samples' correlation by the variance inflation of their mean
(batch-means variance over the i.i.d. s²/n, at least 1), which also gives n_eff. A parameter
at a bound of its range (an offset of 0) has no standard error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from sim.measurements import sampling

FAMILIES = ("exponential", "gamma", "lognormal", "hyperexponential")
NEARLY_AS_GOOD_AIC = 2.0
KS_95 = 1.358  # the Kolmogorov distribution's 95 % point
FINEST_S = 1e-6
MIN_SAMPLES = 40  # as the mean's error needs (sim.measurements.sampling.min_samples)


@dataclass
class Candidate:
    family: str
    shifted: bool  # the offset was fitted (else fixed at 0)
    offset_s: float
    mean_s: float  # of the varying part S
    cv: float
    log_likelihood: float
    parameters: int
    aic: float = math.nan
    delta_aic: float = math.nan
    ks_distance: float = math.nan
    std_errors: dict[str, float] = field(default_factory=dict)  # offset_s, mean_s, cv

    @property
    def name(self) -> str:
        return f"{'shifted ' if self.shifted else ''}{self.family}"

    def spec(self) -> dict:
        """The varying part as a model-file distribution spec (sim/random/distributions.py)."""
        mean = float(f"{self.mean_s:.6g}")
        if self.family == "exponential":
            return {"dist": "exponential", "mean": mean}
        if self.family == "hyperexponential":
            return {"dist": "hyperexponential", "mean": mean, "scv": float(f"{self.cv**2:.6g}")}
        return {"dist": self.family, "mean": mean, "cv": float(f"{self.cv:.6g}")}

    def offset_spec(self) -> dict:
        return {"dist": "deterministic", "value": float(f"{self.offset_s:.6g}")}

    def as_dict(self) -> dict:
        def clean(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "family": self.family,
            "shifted": self.shifted,
            "offset_s": self.offset_s,
            "mean_s": self.mean_s,
            "cv": self.cv,
            "std_errors": {k: clean(v) for k, v in self.std_errors.items()},
            "log_likelihood": self.log_likelihood,
            "parameters": self.parameters,
            "aic": self.aic,
            "delta_aic": self.delta_aic,
            "ks_distance": self.ks_distance,
            "offset": self.offset_spec(),
            "demand": self.spec(),
        }


@dataclass
class ShapeFit:
    source: str
    samples: int
    resolution_s: float
    minimum_s: float
    mean_s: float
    cv: float
    inflation: float  # variance inflation of the mean by the samples' correlation (>= 1)
    ks_limit: float
    candidates: list[Candidate]  # by AIC, best first

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    @property
    def alternatives(self) -> list[Candidate]:
        return [c for c in self.candidates[1:] if c.delta_aic <= NEARLY_AS_GOOD_AIC]

    @property
    def fits(self) -> bool:
        """Whether the best family is within the KS critical value of the samples."""
        return self.best.ks_distance <= self.ks_limit

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "samples": self.samples,
            "resolution_s": self.resolution_s,
            "minimum_s": self.minimum_s,
            "mean_s": self.mean_s,
            "cv": self.cv,
            "variance_inflation": self.inflation,
            "criterion": "AIC; nearly as good: delta AIC <= 2",
            "ks_limit": self.ks_limit,
            "fits": self.fits,
            "best": self.best.as_dict(),
            "alternatives": [c.as_dict() for c in self.alternatives],
            "candidates": [c.as_dict() for c in self.candidates],
        }


# ------------------------------------------------------------------ the families' CDFs
def _hyper_phases(mean: float, scv: float) -> tuple[float, float, float]:
    p = 0.5 * (1 + math.sqrt((scv - 1) / (scv + 1)))
    return p, mean / (2 * p), mean / (2 * (1 - p))


def _cdf_sf(family: str, x: np.ndarray, mean: float, cv: float) -> tuple[np.ndarray, np.ndarray]:
    """F(x) and 1 − F(x) of S (x may be <= 0), each computed where it is accurate."""
    x = np.maximum(x, 0.0)
    if family == "exponential":
        return -np.expm1(-x / mean), np.exp(-x / mean)
    if family == "gamma":
        shape = 1.0 / cv**2
        scaled = x / (mean * cv**2)
        return special.gammainc(shape, scaled), special.gammaincc(shape, scaled)
    if family == "lognormal":
        sigma = math.sqrt(math.log1p(cv**2))
        mu = math.log(mean) - sigma**2 / 2
        with np.errstate(divide="ignore"):
            z = (np.log(x) - mu) / sigma
        return special.ndtr(z), special.ndtr(-z)
    p, m1, m2 = _hyper_phases(mean, cv**2)
    survival = p * np.exp(-x / m1) + (1 - p) * np.exp(-x / m2)
    return 1.0 - survival, survival


def _bin_probabilities(
    family: str, low: np.ndarray, high: np.ndarray, offset: float, mean: float, cv: float
) -> np.ndarray:
    cdf_low, sf_low = _cdf_sf(family, low - offset, mean, cv)
    cdf_high, sf_high = _cdf_sf(family, high - offset, mean, cv)
    # the difference of the smaller of the two tails loses no precision
    return np.where(cdf_low < 0.5, cdf_high - cdf_low, sf_low - sf_high)


# ------------------------------------------------------------------ the fit
@dataclass
class _Grouped:
    values: np.ndarray  # distinct recorded values, rising
    counts: np.ndarray
    resolution: float

    @property
    def low(self) -> np.ndarray:
        return self.values - self.resolution / 2

    @property
    def high(self) -> np.ndarray:
        return self.values + self.resolution / 2


def _unpack(family: str, theta: np.ndarray, shifted: bool) -> tuple[float, float, float]:
    offset = float(theta[0]) if shifted else 0.0
    rest = theta[1:] if shifted else theta
    mean = math.exp(rest[0])
    if family == "exponential":
        cv = 1.0
    elif family == "hyperexponential":
        cv = math.sqrt(1.0 + math.exp(rest[1]))
    else:
        cv = math.exp(rest[1])
    return offset, mean, cv


def _pack(family: str, offset: float, mean: float, cv: float, shifted: bool) -> list[float]:
    out = [offset] if shifted else []
    out.append(math.log(mean))
    if family == "hyperexponential":
        out.append(math.log(max(cv**2 - 1.0, 1e-3)))
    elif family != "exponential":
        out.append(math.log(cv))
    return out


def _negative_log_likelihood(
    data: _Grouped, family: str, offset: float, mean: float, cv: float
) -> float:
    if not (mean > 0 and cv > 0 and offset >= 0):
        return math.inf
    probabilities = _bin_probabilities(family, data.low, data.high, offset, mean, cv)
    return -float(data.counts @ np.log(np.maximum(probabilities, 1e-300)))


def _fit_one(data: _Grouped, family: str, shifted: bool, x_mean: float, x_sd: float) -> Candidate:
    ceiling = float(data.values[0])  # the offset stays at or below the least recorded value
    offsets = [0.0, 0.5 * ceiling, 0.9 * ceiling, ceiling] if shifted else [0.0]
    best: tuple[float, np.ndarray] | None = None
    for offset in offsets:
        mean = max(x_mean - offset, data.resolution, 1e-9)
        cv = max(x_sd / mean, 0.05)
        if family == "hyperexponential":
            cv = max(cv, 1.05)
        start = np.array(_pack(family, offset, mean, cv, shifted))
        # the ranges the model file accepts: cv <= 100, scv <= 1e4 (sim/random/distributions.py)
        bounds = [(0.0, ceiling)] if shifted else []
        bounds.append((math.log(data.resolution / 100), math.log(100 * float(data.values[-1]))))
        if family == "hyperexponential":
            bounds.append((math.log(1e-3), math.log(1e4 - 1)))
        elif family != "exponential":
            bounds.append((math.log(0.01), math.log(100.0)))
        start = np.clip(start, [b[0] for b in bounds], [b[1] for b in bounds])

        def objective(theta: np.ndarray) -> float:
            return _negative_log_likelihood(data, family, *_unpack(family, theta, shifted))

        result = optimize.minimize(objective, start, method="L-BFGS-B", bounds=bounds)
        if best is None or result.fun < best[0]:
            best = (float(result.fun), result.x)
    assert best is not None
    offset, mean, cv = _unpack(family, best[1], shifted)
    parameters = len(best[1])
    return Candidate(family, shifted, offset, mean, cv, -best[0], parameters)


def _std_errors(data: _Grouped, candidate: Candidate, inflation: float) -> dict[str, float]:
    """Standard errors of offset_s, mean_s and cv from the numerical Hessian of −ln L in those
    parameters (central differences); a parameter at a bound is held fixed."""
    names = ["offset_s", "mean_s", "cv"]
    point = np.array([candidate.offset_s, candidate.mean_s, candidate.cv])
    free = [1] if candidate.family == "exponential" else [1, 2]
    ceiling = float(data.values[0])
    step0 = max(candidate.mean_s, data.resolution) * 1e-3
    if candidate.shifted and step0 < candidate.offset_s < ceiling - step0:
        free = [0, *free]
    errors = dict.fromkeys(names, math.nan)

    def f(theta: np.ndarray) -> float:
        return _negative_log_likelihood(data, candidate.family, *theta)

    steps = np.array([step0, candidate.mean_s * 1e-3, max(candidate.cv, 0.01) * 1e-3])
    if candidate.family == "hyperexponential" and candidate.cv - 1.0 < 2 * steps[2]:
        free = [i for i in free if i != 2]  # scv at its bound of 1
    hessian = np.zeros((len(free), len(free)))
    for a, i in enumerate(free):
        for b, j in enumerate(free):
            if b < a:
                continue
            ei = np.zeros(3)
            ej = np.zeros(3)
            ei[i] = steps[i]
            ej[j] = steps[j]
            value = (
                f(point + ei + ej) - f(point + ei - ej) - f(point - ei + ej) + f(point - ei - ej)
            ) / (4 * steps[i] * steps[j])
            hessian[a, b] = hessian[b, a] = value
    try:
        covariance = np.linalg.inv(hessian) * inflation
    except np.linalg.LinAlgError:
        return errors
    for a, i in enumerate(free):
        variance = covariance[a, a]
        errors[names[i]] = math.sqrt(variance) if variance > 0 else math.nan
    if candidate.family == "exponential":
        errors["cv"] = 0.0
    return errors


def _ks_distance(data: _Grouped, candidate: Candidate) -> float:
    """The largest distance between the samples' and the fit's CDF: at the edges of the
    recorded bins, where the samples' CDF steps."""
    total = float(data.counts.sum())
    above = np.cumsum(data.counts) / total
    below = above - data.counts / total
    model_high, _ = _cdf_sf(
        candidate.family, data.high - candidate.offset_s, candidate.mean_s, candidate.cv
    )
    model_low, _ = _cdf_sf(
        candidate.family, data.low - candidate.offset_s, candidate.mean_s, candidate.cv
    )
    return float(max(np.max(np.abs(above - model_high)), np.max(np.abs(below - model_low))))


def fit_shape(
    samples_s: np.ndarray,
    source: str = "<samples>",
    families: tuple[str, ...] = FAMILIES,
    shifts: tuple[bool, ...] = (False, True),
) -> ShapeFit:
    """The candidate families (each unshifted and shifted) fitted to response times
    `samples_s` (seconds, in the order they completed), ranked by AIC. Needs at least
    MIN_SAMPLES values (a ValueError says so)."""
    x = np.asarray(samples_s, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < MIN_SAMPLES:
        raise ValueError(
            f"{len(x)} successful samples; the shape needs at least {MIN_SAMPLES}: "
            "a longer run at the light level"
        )
    if np.ptp(x) == 0:
        raise ValueError(
            f"all {len(x)} samples took {x[0]:g} s: a deterministic time, no shape to fit "
            "(or a file recorded too coarsely)"
        )
    resolution = sampling.resolution_s(x) or FINEST_S
    binned = np.round(x / resolution).astype(np.int64)
    values, counts = np.unique(binned, return_counts=True)
    data = _Grouped(values * resolution, counts.astype(float), resolution)
    mean_error = sampling.mean_error(x)
    iid_error = float(x.std(ddof=1)) / math.sqrt(len(x))
    inflation = max(1.0, (mean_error / iid_error) ** 2) if iid_error > 0 else 1.0
    x_mean, x_sd = float(x.mean()), float(x.std(ddof=1))
    candidates = []
    for family in families:
        for shifted in shifts:
            candidate = _fit_one(data, family, shifted, x_mean, x_sd)
            candidate.aic = 2 * candidate.parameters - 2 * candidate.log_likelihood
            candidate.ks_distance = _ks_distance(data, candidate)
            candidate.std_errors = _std_errors(data, candidate, inflation)
            candidates.append(candidate)
    candidates.sort(key=lambda c: c.aic)
    for candidate in candidates:
        candidate.delta_aic = candidate.aic - candidates[0].aic
    effective = len(x) / inflation
    return ShapeFit(
        source=source,
        samples=len(x),
        resolution_s=resolution,
        minimum_s=float(x.min()),
        mean_s=x_mean,
        cv=x_sd / x_mean,
        inflation=inflation,
        ks_limit=KS_95 / math.sqrt(effective),
        candidates=candidates,
    )


def samples_of_file(
    path: str,
    format: str = "jtl",
    warmup_s: float = 0.0,
    until_s: float | None = None,
    encoding: str = "utf-8",
) -> np.ndarray:
    """The successful samples' response times (seconds, in completion order) of a per-sample
    file, those completing in [warmup_s, until_s] after its first sample's start."""
    from sim.measurements.errors import MeasurementError
    from sim.measurements.format_names import shape_format_problem
    from sim.measurements.importer import ImportOptions, read_samples
    from sim.measurements.windows import no_success

    problem = shape_format_problem(format)
    if problem is not None:
        raise MeasurementError(path, None, f"format {problem}")
    log = read_samples(format, path, ImportOptions(encoding=encoding))
    frame = log.frame
    ended = (frame["start_s"] + frame["elapsed_s"] - frame["start_s"].min()).to_numpy(float)
    inside = (ended >= warmup_s) & (ended <= (math.inf if until_s is None else until_s))
    good = inside & ~frame["failed"].to_numpy(bool)
    if inside.any() and not good.any() and log.outcomes_known:
        raise no_success(path, frame["error_kind"].to_numpy(dtype=object)[inside])
    order = np.argsort(ended[good], kind="stable")
    samples = frame["elapsed_s"].to_numpy(float)[good][order]
    if len(samples) < MIN_SAMPLES:
        cut = f" completing between {warmup_s:g} s and {until_s if until_s else 'the end'}"
        raise MeasurementError(
            path,
            None,
            f"success: {len(samples)} successful samples{cut if inside.sum() < len(ended) else ''}; "
            f"the shape needs at least {MIN_SAMPLES}; expected a longer run at the light level "
            "(or a smaller --warmup)",
        )
    return samples
