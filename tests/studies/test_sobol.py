"""The parameter draws' Sobol' points and normal quantiles without scipy.stats
(`sim.studies.calibration.sobol`): scipy.stats.qmc.Sobol's and scipy.stats.norm.ppf's numbers,
bit for bit, over many dimensions, seeds and lengths; and the commands that draw no longer
import scipy.stats for them."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.stats import norm, qmc, t

from sim.studies.calibration.linear import model_error_quantile
from sim.studies.calibration.linearise import draw_units
from sim.studies.calibration.sobol import direction_numbers, normal_quantile, sobol_points

DIMENSIONS = [1, 2, 3, 4, 5, 7, 8, 13, 21, 40, 64, 111]
SEEDS = [0, 1, 2, 7, 42, 2026, 123_456_789, 2**31 - 1, 2**40 + 3]
LENGTHS = [1, 2, 3, 4, 5, 8, 16, 31, 64, 256]


def scipy_points(dimension: int, n: int, seed: int | None, scramble: bool) -> np.ndarray:
    with warnings.catch_warnings():  # scipy warns of n not a power of two: so do the draws
        warnings.simplefilter("ignore")
        return qmc.Sobol(d=dimension, scramble=scramble, seed=seed).random(n)


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_scrambled_points_are_scipys_bit_for_bit(dimension):
    for seed in SEEDS:
        for n in LENGTHS:
            ours = sobol_points(dimension, n, seed)
            assert same_floats(ours, scipy_points(dimension, n, seed, True)), (dimension, seed, n)


def test_a_thousand_dimensions_too():
    for seed in SEEDS[:3]:
        assert same_floats(sobol_points(1000, 32, seed), scipy_points(1000, 32, seed, True))


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_unscrambled_points_and_direction_numbers_are_scipys(dimension):
    engine = qmc.Sobol(d=dimension, scramble=False)
    assert np.array_equal(direction_numbers(dimension), engine._sv)
    assert direction_numbers(dimension).dtype == engine._sv.dtype
    for n in LENGTHS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = engine.random(n)
        assert same_floats(sobol_points(dimension, n, 0, scramble=False), theirs)
        engine.reset()


def test_the_points_are_a_sobol_sequence_not_only_scipys_numbers():
    """Independent of scipy: unscrambled 2-D points are van der Corput's in the first
    coordinate (bit-reversed Gray code order) and every coordinate of the first 2**k points
    falls once in each of the 2**k equal cells; scrambling keeps that balance."""
    first = sobol_points(2, 8, None, scramble=False)[:, 0]
    assert first.tolist() == [0.0, 0.5, 0.75, 0.25, 0.375, 0.875, 0.625, 0.125]
    for scramble in (False, True):
        points = sobol_points(5, 64, 11, scramble=scramble)
        for column in points.T:
            assert sorted(np.floor(column * 64).astype(int)) == list(range(64))


def test_different_seeds_scramble_differently_and_one_seed_alike():
    assert same_floats(sobol_points(3, 16, 5), sobol_points(3, 16, 5))
    assert not np.array_equal(sobol_points(3, 16, 5), sobol_points(3, 16, 6))


def test_normal_quantile_is_norm_ppf_bit_for_bit():
    rng = np.random.default_rng(3)
    probabilities = np.concatenate(
        [
            rng.random(10_000),
            [0.5, 1e-9, 1 - 1e-9, 0.025, 0.975, 0.95, 1e-300, 0.0, 1.0],
            np.clip(sobol_points(4, 256, 9).ravel(), 1e-9, 1 - 1e-9),
        ]
    )
    assert same_floats(normal_quantile(probabilities), norm.ppf(probabilities))
    for p in (0.5, 0.975, 0.95, 0.05):
        ours, theirs = normal_quantile(p), norm.ppf(p)
        assert type(ours) is type(theirs) and ours == theirs
        assert np.signbit(ours) == np.signbit(theirs)  # 0.5 gives +0.0 in both


@pytest.mark.parametrize("dof", [None, 1.0, 2.5, 7.0, 30.0, 1e6])
def test_model_error_quantile_is_scipys(dof):
    for p in (0.5, 0.9, 0.95, 0.975, 0.025, 0.3):
        expected = norm.ppf(p) if dof is None else t.ppf(p, dof)
        assert model_error_quantile(p, dof) == float(expected)


def test_draw_units_are_those_of_scipy_stats():
    """The posterior's draws are scipy.stats' Gaussian points (its Sobol' points through
    norm.ppf and the Cholesky factor, as `draw_units` made them with scipy.stats before), those
    inside the ranges [1, 2] in sequence order (`truncated`)."""
    mean = np.array([1.4, 1.6, 1.5])
    a = np.array([[0.02, 0.004, 0.0], [0.004, 0.03, -0.01], [0.0, -0.01, 0.05]])
    for draws, seed in [(8, 0), (16, 12_345), (5, 99), (1, 3)]:
        points = qmc.Sobol(d=3, scramble=True, seed=seed).random(256)
        normal = norm.ppf(np.clip(points, 1e-9, 1 - 1e-9))
        factor = np.linalg.cholesky(a + 1e-15 * np.eye(3))
        gaussian = mean[None, :] + normal @ factor.T
        expected = gaussian[np.all((gaussian >= 1.0) & (gaussian <= 2.0), axis=1)][:draws]
        assert len(expected) == draws
        assert same_floats(draw_units(mean, a, draws, seed), expected)


def test_drawing_imports_no_scipy_stats():
    code = (
        "import sys, numpy as np\n"
        "from sim.studies.calibration.linearise import draw_units\n"
        "from sim.studies.calibration.linear import model_error_quantile\n"
        "draw_units(np.array([1.5, 1.5]), np.eye(2) * 0.01, 8, 4)\n"
        "model_error_quantile(0.95, None); model_error_quantile(0.95, 4.0)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
