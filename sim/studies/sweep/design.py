"""Expand a sweep's factors into points: grid (every combination), zip (the i-th value of
every factor together), and the space-filling designs of `scipy.stats.qmc` (Latin hypercube,
scrambled Sobol) drawn from the sweep seed, so a design is the same on every machine.

A point's identity is a hash of its factor values, not its position: its seed, its row in the
results store and its resumption all follow the values, whatever order points run in.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sim.studies.sweep.spec import Range, SweepFile

SEED_LIMIT = 2**63  # run.seed's range


@dataclass(frozen=True)
class Point:
    index: int  # position in the design (report order)
    values: dict[str, Any]  # factor path -> value

    @property
    def id(self) -> str:
        return point_id(self.values)

    @property
    def overrides(self) -> tuple[str, ...]:
        return tuple(f"{path}={toml_literal(value)}" for path, value in self.values.items())


def point_id(values: dict[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_seed(sweep_seed: int, values: dict[str, Any]) -> int:
    """A root seed per point from the sweep seed and the point's identity (never the worker's):
    a point gets the same numbers serially, in a process pool or on a cluster."""
    digest = hashlib.sha256(
        json.dumps(values, sort_keys=True, separators=(",", ":")).encode()
    ).digest()
    key = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    state = np.random.SeedSequence(sweep_seed, spawn_key=key).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 32 | int(state[1])) % SEED_LIMIT


def expand(spec: SweepFile) -> tuple[list[Point], int]:
    """The design's points (duplicates dropped, first kept) and how many duplicates were dropped."""
    sweep = spec.sweep
    paths = list(spec.factors)
    if sweep.design == "grid":
        rows: Iterable[tuple] = itertools.product(*(spec.factors[p] for p in paths))
    elif sweep.design == "zip":
        rows = zip(*(spec.factors[p] for p in paths))
    else:
        rows = _space_filling(spec, paths)
    points: list[Point] = []
    seen: set[str] = set()
    dropped = 0
    for row in rows:
        values = dict(zip(paths, row))
        identity = point_id(values)
        if identity in seen:
            dropped += 1  # e.g. an integer factor rounded onto the same value twice
            continue
        seen.add(identity)
        points.append(Point(len(points), values))
    return points, dropped


def _space_filling(spec: SweepFile, paths: list[str]) -> list[tuple]:
    from scipy.stats import qmc  # 0.4-0.7 s to import: only for a Latin hypercube or Sobol design

    sweep = spec.sweep
    # The design's own stream: spawn key ("design") keeps it apart from the points' seeds.
    rng = np.random.default_rng(np.random.SeedSequence(sweep.seed, spawn_key=(0x64657369,)))
    engine_type = qmc.LatinHypercube if sweep.design == "lhs" else qmc.Sobol
    engine = engine_type(d=len(paths), **_rng_keyword(engine_type, rng))
    unit = engine.random(sweep.points)
    rows = []
    for u in unit:  # validated: lhs / sobol factors are ranges
        rows.append(tuple(_scale(cast(Range, spec.factors[p]), float(x)) for p, x in zip(paths, u)))
    return rows


def _rng_keyword(engine_type, rng) -> dict:
    """scipy >= 1.15 calls the generator `rng`; older versions `seed`."""
    import inspect

    return (
        {"rng": rng}
        if "rng" in inspect.signature(engine_type.__init__).parameters
        else {"seed": rng}
    )


def _scale(factor: Range, u: float) -> float | int:
    if factor.scale == "log":
        value = math.exp(math.log(factor.low) + u * (math.log(factor.high) - math.log(factor.low)))
    else:
        value = factor.low + u * (factor.high - factor.low)
    if factor.integer:
        return int(min(max(round(value), math.ceil(factor.low)), math.floor(factor.high)))
    return value


def toml_literal(value: Any) -> str:
    """A value as `--set` reads it (a TOML value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {toml_literal(v)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as a TOML value")
