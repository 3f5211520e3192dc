"""What JMeter's timers add before a sample, as JMeter draws it, and the think-time
distribution a model file gives the users.

JMeter (`org.apache.jmeter.timers`) draws every timer in whole milliseconds, the
`ConstantTimer.delay` offset (a long) plus, for the random timers, a variation of
`RandomTimer.range`:

* Constant Timer: `delay`.
* Uniform Random Timer: `(long) |U(0, 1) x range + delay|`, uniform from delay to
  delay + range.
* Gaussian Random Timer: `(long) |N(0, 1) x range + delay|`: the range is the deviation, and a
  draw below zero is folded back (`Math.abs`).
* Poisson Random Timer: `|Poisson(round(range)) + delay|`: the range is lambda, in ms.

All the timers in a sampler's scope run before it, one after the other, so the pause before a
request is their sum; a thread's requests cycle through its samplers, so the pause before a
request is the samplers' sums in equal shares. Both are exact on JMeter's millisecond grid
(convolutions and a mixture of probability mass functions). The distribution the model gets is
the exact one where a model-file family is (`deterministic`, one `uniform` plus constants), else
`empirical` values at 200 evenly spaced quantiles of the exact distribution (no random draw).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

KINDS = ("ConstantTimer", "UniformRandomTimer", "GaussianRandomTimer", "PoissonRandomTimer")
QUANTILES = 200  # values of the empirical think time: quantiles at (i + 1/2)/200
TAIL = 1e-12  # probability left out of a truncated grid (Gaussian, Poisson)


@dataclass(frozen=True)
class Timer:
    kind: str  # one of KINDS
    name: str
    delay_ms: int  # ConstantTimer.delay
    range_ms: float  # RandomTimer.range (0 for the Constant Timer)
    line: int

    def describe(self) -> str:
        if self.kind == "ConstantTimer":
            return f"Constant {self.delay_ms} ms"
        if self.kind == "UniformRandomTimer":
            return f"Uniform {self.delay_ms} + U(0, {self.range_ms:g}) ms"
        if self.kind == "GaussianRandomTimer":
            return f"Gaussian {self.delay_ms} ± {self.range_ms:g} ms"
        return f"Poisson {self.delay_ms} + Poisson({round(self.range_ms)}) ms"

    def pmf(self) -> np.ndarray:
        """P(delay = k ms), k = 0, 1, ..."""
        d, r = self.delay_ms, self.range_ms
        if self.kind == "ConstantTimer" or r == 0:
            out = np.zeros(abs(d) + 1)
            out[abs(d)] = 1.0
            return out
        if self.kind == "UniformRandomTimer":
            # floor(U r + d) = k for U r in [k - d, k + 1 - d)
            top = d + math.ceil(r)
            k = np.arange(top + 1, dtype=float)
            width = np.clip(np.minimum(k + 1 - d, r) - np.maximum(k - d, 0.0), 0.0, None)
            return width / r
        # scipy.stats for these two alone (1-2.5 s of CPU to import): `plan` reads the timers'
        # module whether or not its test plan has them
        from scipy import stats

        if self.kind == "GaussianRandomTimer":
            top = math.ceil(abs(d) + r * stats.norm.isf(TAIL)) + 1
            k = np.arange(top + 1, dtype=float)
            # floor(|X|) = k for |X| in [k, k + 1): both signs of X, X ~ N(d, r)
            cdf = stats.norm.cdf
            positive = cdf((k + 1 - d) / r) - cdf((k - d) / r)
            negative = cdf((-k - d) / r) - cdf((-k - 1 - d) / r)
            out = positive + negative
            return out / out.sum()
        lam = round(r)
        top = int(stats.poisson.isf(TAIL, lam)) + 1
        out = np.zeros(d + top + 1)
        out[d:] = stats.poisson.pmf(np.arange(top + 1), lam)
        return out / out.sum()


def total(timers: list[Timer]) -> np.ndarray:
    """The pmf of the timers' sum (all run before the sampler)."""
    out = np.array([1.0])
    for timer in timers:
        out = np.convolve(out, timer.pmf())
    return out


def mixture(pmfs: list[np.ndarray]) -> np.ndarray:
    """The pmf of a pause drawn before each sampler in turn: the samplers' in equal shares."""
    size = max(len(p) for p in pmfs)
    return np.mean(np.stack([np.pad(p, (0, size - len(p))) for p in pmfs]), axis=0)


@dataclass
class Think:
    """The pause before a request, in the model file's terms."""

    spec: dict  # a model-file distribution: {"dist": ..., ...}, seconds
    mean_s: float
    sd_s: float
    said: str  # what JMeter runs, e.g. "Uniform 400 + U(0, 200) ms before each of 1 sampler"

    def inline(self) -> str:
        """The spec as a TOML inline table (`clients.think=...`)."""
        parts = []
        for key, value in self.spec.items():
            text = (
                json.dumps(value)
                if not isinstance(value, list)
                else ("[" + ", ".join(f"{v:.6g}" for v in value) + "]")
            )
            parts.append(f"{key} = {text}")
        return "{" + ", ".join(parts) + "}"


def think(per_sampler: list[list[Timer]], said: str) -> Think:
    """The think time of a thread whose samplers run with these timers before them."""
    kinds = {t.kind for timers in per_sampler for t in timers}
    same = all(timers == per_sampler[0] for timers in per_sampler)
    if not any(per_sampler) or (kinds <= {"ConstantTimer"} and _all_equal_sums(per_sampler)):
        value = sum(t.delay_ms for t in per_sampler[0]) / 1000.0
        return Think({"dist": "deterministic", "value": value}, value, 0.0, said)
    randoms = [t for t in per_sampler[0] if t.kind != "ConstantTimer"]
    if same and len(randoms) == 1 and randoms[0].kind == "UniformRandomTimer":
        # the continuous law JMeter truncates to whole ms (its mean is up to 0.5 ms less)
        low_ms = sum(t.delay_ms for t in per_sampler[0])
        low, high = low_ms / 1000.0, (low_ms + randoms[0].range_ms) / 1000.0
        sd = (high - low) / math.sqrt(12.0)
        return Think({"dist": "uniform", "low": low, "high": high}, (low + high) / 2, sd, said)
    pmf = mixture([total(timers) for timers in per_sampler])
    grid = np.arange(len(pmf), dtype=float)
    mean = float((grid * pmf).sum())
    sd = float(math.sqrt(max(0.0, (grid**2 * pmf).sum() - mean**2)))
    cdf = np.cumsum(pmf)
    levels = (np.arange(QUANTILES) + 0.5) / QUANTILES
    values = np.searchsorted(cdf, levels * cdf[-1]).astype(float) / 1000.0
    return Think(
        {"dist": "empirical", "samples": [float(v) for v in values]},
        mean / 1000.0,
        sd / 1000.0,
        said,
    )


def _all_equal_sums(per_sampler: list[list[Timer]]) -> bool:
    sums = {sum(t.delay_ms for t in timers) for timers in per_sampler}
    return len(sums) == 1
