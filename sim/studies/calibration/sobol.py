"""Scrambled Sobol' points and the normal quantile without importing scipy.stats.

The parameter draws of `calibrate`, `run --calibration` and `capacity --calibration` are the
first points of a scrambled Sobol' sequence (`scipy.stats.qmc.Sobol(d, scramble=True,
seed=SEED).random(n)`) mapped through the normal quantile (`scipy.stats.norm.ppf`).  Importing
scipy.stats for those two calls costs 1.5-2.5 s of CPU (scipy 1.17 rewrites its distributions'
docstrings at import), more than a command's simulations of a small level.  This module gives
the same numbers, bit for bit, from NumPy and `scipy.special.ndtri` (already imported for the
Student-t quantile); `tests/studies/test_sobol.py` compares them with scipy's over many
dimensions, seeds and lengths.

What scipy does, and so what is done here:

* direction numbers: Joe and Kuo's `new-joe-kuo-6.21201` (search criterion D(6)), the table
  scipy ships as `scipy/stats/_sobol_direction_numbers.npz` and read from there (the file, not
  the module), extended to 30 bits by Bratley and Fox's recurrence (Algorithm 659);
* seed: an integer (or None) seeds `numpy.random.default_rng(seed)` (scipy.stats.qmc's own
  `check_random_state`, whatever the keyword), which draws first the digital shift (d x 30
  bits), then the lower-triangular scrambling matrices (d x 30 x 30 bits);
* scrambling: Owen's linear matrix scramble (each direction number's bits multiplied by a
  random unit lower-triangular matrix over GF(2)) and the digital shift;
* order: the first point is the shift itself; point i + 1 is point i XOR the direction number
  of the lowest zero bit of i (Antonov and Saleev's Gray-code order).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

BITS = 30  # scipy's default `bits`: points are multiples of 2**-30
SCALE = 1.0 / 2**BITS


@functools.cache
def _joe_kuo() -> tuple[np.ndarray, np.ndarray]:
    """(poly, vinit): each dimension's primitive polynomial (its degree is the bit length
    less one) and its initial direction numbers m_1..m_s, from scipy's packaged table."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("scipy is not installed: the Sobol' direction numbers come with it")
    table = Path(next(iter(spec.submodule_search_locations))) / "stats"
    with np.load(table / "_sobol_direction_numbers.npz") as numbers:
        return numbers["poly"], numbers["vinit"]


def direction_numbers(dimension: int) -> np.ndarray:
    """The (dimension, 30) unscrambled direction numbers, each column j scaled by
    2**(29 - j), as uint32."""
    poly, vinit = _joe_kuo()
    v = np.zeros((dimension, BITS), dtype=np.int64)
    if dimension == 0:
        return v.astype(np.uint32)
    v[0, :] = 1  # the first dimension is van der Corput's: every m_j = 1
    for d in range(1, dimension):
        p = int(poly[d])
        degree = p.bit_length() - 1
        row = [int(x) for x in vinit[d, :degree]]
        for j in range(degree, BITS):
            # m_j = 2 a_1 m_{j-1} ^ 4 a_2 m_{j-2} ^ ... ^ 2^s m_{j-s} ^ m_{j-s}
            new = row[j - degree]
            for k in range(degree):
                if (p >> (degree - 1 - k)) & 1:
                    new ^= row[j - k - 1] << (k + 1)
            row.append(new)
        v[d, :] = row
    return (v << np.arange(BITS - 1, -1, -1)).astype(np.uint32)


def _scrambled(v: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(shift, scrambled direction numbers), drawn from `rng` in scipy's order."""
    dimension = v.shape[0]
    shift_bits = rng.integers(2, size=(dimension, BITS), dtype=np.uint32).astype(np.int64)
    shift = shift_bits @ (np.int64(1) << np.arange(BITS, dtype=np.int64))
    lower = np.tril(rng.integers(2, size=(dimension, BITS, BITS), dtype=np.uint32))
    lower = lower.astype(np.int64)
    lower[:, np.arange(BITS), np.arange(BITS)] = 1
    # bit q from the top of each direction number, then the matrix product over GF(2): row p
    # of a dimension's matrix gives bit p from the top of the scrambled number
    msb_first = np.arange(BITS - 1, -1, -1)
    bits = (v.astype(np.int64)[:, :, None] >> msb_first) & 1  # (d, j, q)
    scrambled_bits = np.einsum("dpq,djq->djp", lower, bits) & 1
    scrambled = (scrambled_bits << msb_first).sum(axis=2)
    return shift.astype(np.uint32), scrambled.astype(np.uint32)


def _trailing_ones(count: int) -> np.ndarray:
    """For i = 0 .. count - 1, how many of i's lowest bits are ones (the index, from 0, of
    its lowest zero bit)."""
    i = np.arange(count, dtype=np.int64)
    ones = np.zeros(count, dtype=np.int64)
    rest = i
    while True:
        odd = (rest & 1) == 1
        if not odd.any():
            return ones
        ones += odd
        rest = np.where(odd, rest >> 1, 0)


def sobol_points(dimension: int, n: int, seed: int | None, scramble: bool = True) -> np.ndarray:
    """The first `n` points (n, dimension) of `scipy.stats.qmc.Sobol(dimension,
    scramble=scramble, seed=seed)`, float for float (seed None: fresh entropy)."""
    v = direction_numbers(dimension)
    if scramble:
        shift, v = _scrambled(v, np.random.default_rng(seed))
    else:
        shift = np.zeros(dimension, dtype=np.uint32)
    steps = v[:, _trailing_ones(max(n - 1, 0))].T  # (n - 1, d): XOR-ed in, one a point
    quasi = np.bitwise_xor.accumulate(np.vstack([shift[None, :], steps]), axis=0)
    return (quasi[:n] * SCALE).astype(np.float64)


def normal_quantile(probability: np.ndarray | float) -> np.ndarray | np.float64:
    """`scipy.stats.norm.ppf(probability)` for probabilities in (0, 1), bit for bit: scipy's
    `_ppf` is `scipy.special.ndtri`, scaled by 1 and shifted by 0 (which turns -0.0 into 0.0)."""
    from scipy.special import ndtri

    out = np.asarray(ndtri(np.asarray(probability, dtype=np.float64)) * 1.0 + 0.0)
    return out[()] if out.ndim == 0 else out
