"""The parameter draws of a calibration are consistent with the figures it was fitted to
(sim.studies.calibration.conditioned): a CPU demand fitted beside an unknown wait on a log
scale make one light response between them, and every draw keeps that response."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import sim
from sim.studies.calibration.linearise import draw_units
from sim.studies.calibration.saved import CalibrationFileError, load_calibration
from sim.studies.calibration.truncated import gaussian_points
from sim.studies.capacity.uncertain import CapacityRange

MEASUREMENT_SD = 0.01  # the fitted response's relative sd


def _experiment(folder: Path) -> Path:
    """Open arrivals at 2/s on a node with many threads and four cores (a request hardly ever
    shares one): the response is the CPU demand (a [[calibrate]], linear scale) plus a
    deterministic wait (an [[unknown]] over fifty times its low end, log scale), and the
    simulation has next to no noise, so the fitted response's sd is its measurement's."""
    (folder / "model.toml").write_text(
        textwrap.dedent("""
        [clients]
        kind = "open"
        rate_per_s = 2.0

        [[backends]]
        name = "server"
        threads = 50
        cores = 4
        demand = { dist = "deterministic", value = 0.05 }
        io_wait = { dist = "deterministic", value = 0.001 }

        [balancer]
        policy = "round_robin"

        [run]
        duration_s = 200
        warmup = 10
        replications = 3
        seed = 5
        """)
    )
    (folder / "published.csv").write_text("row,rate,response_s\na,2,0.06\n")
    (folder / "experiment.toml").write_text(
        textwrap.dedent(f"""
        [experiment]
        name = "ridge"
        published = "published.csv"
        value_column = "response_s"
        metric = "response.mean"
        measurement_error = {MEASUREMENT_SD}

        [models]
        column = "row"
        a = "model.toml"

        [factors.rate]
        "*" = ["clients.rate_per_s={{value}}"]

        [[calibrate]]
        parameter = "backends.0.demand.value"
        bounds = [0.001, 0.1]
        scale = "linear"

        [[fitted]]
        row = "a"

        [[unknown]]
        parameter = "backends.0.io_wait.value"
        range = [0.001, 0.05]
        start = 0.001
        provenance = "a test: the response alone cannot tell the wait from the CPU"
        """)
    )
    return folder


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> tuple[Path, Path]:
    folder = _experiment(tmp_path_factory.mktemp("ridge"))
    saved = folder / "calibration.json"
    sim.calibrate(folder).save(saved)
    return folder, saved


def test_every_draw_keeps_the_fitted_response(calibrated):
    """The Gaussian linearised at the fit moves the demand in proportion to the wait's draw on
    its unit scale; on the wait's log scale that proportion misses (a draw above the fit
    lengthens the wait by more than the demand gives back), and a draw past the range's end is
    cut there while the demand keeps its move: unconditioned, several draws answer the fitted
    level up to a third slower than the fit, tens of its sds.  Conditioned, the draws' responses at
    the fitted level (the fit's seeds) spread about the fit's as the posterior says, while the
    wait still spreads over its range."""
    folder, saved = calibrated
    calibration = load_calibration(saved)
    model = folder / "model.toml"
    at_fit = sim.simulate(model, ["clients.rate_per_s=2", *calibration.overrides()])
    fitted = at_fit.result.summary["response.mean"].mean
    points = calibration.points(16, 1)
    responses = np.array(
        [
            sim.simulate(model, ["clients.rate_per_s=2", *point.overrides])
            .result.summary["response.mean"]
            .mean
            for point in points
        ]
    )
    # the fitted response of a draw, in the figure's sds: the posterior spreads it by at most
    # one sd (its predictive variance of a fitted figure is at most the figure's own), so over
    # 16 draws the mean square is a chi-square over 16 at most, and none is 4 sds out
    distance = (responses / fitted - 1) / MEASUREMENT_SD
    bound = stats.chi2.ppf(0.999, len(points)) / len(points)
    assert np.mean(distance**2) < bound, (responses, distance)
    assert np.max(np.abs(distance)) < 4.0, (responses, distance)
    waits = np.array([point.values[1] for point in points])
    # the unknown is carried, not collapsed onto the fit: its draws span a good part of its range
    assert waits.max() / waits.min() > 5.0, waits


def test_a_saved_draw_outside_the_unit_range_is_refused(calibrated, tmp_path):
    _, saved = calibrated
    document = json.loads(saved.read_text())
    document["uncertainty"]["posterior"]["conditioned"]["draws"][0][0] = 2.5
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    with pytest.raises(
        CalibrationFileError, match=r"conditioned\.draws must be points on the unit scale"
    ):
        load_calibration(edited)


def test_a_document_from_before_the_conditioned_draws_draws_from_the_gaussian(calibrated, tmp_path):
    """An older document (no `conditioned`) still runs: its draws are the Gaussian's own, the
    same points the conditioned ones started from."""
    _, saved = calibrated
    document = json.loads(saved.read_text())
    del document["uncertainty"]["posterior"]["conditioned"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(document))
    new, old = load_calibration(saved), load_calibration(older)
    assert old.conditioned is None
    # a draw the screen replaced leaves its place out of the new ones (`calibration.screen`)
    places = np.arange(16) if new.sequence is None else new.sequence
    old_units = np.array([p.units for p in old.points(int(places[-1]) + 1, 1)])[places]
    new_units = np.array([p.units for p in new.points(16, 1)])
    # the unknown (column 1) is drawn alike; the demand (column 0) is what conditioning moved
    assert np.allclose(old_units[:, 1], new_units[:, 1])
    assert not np.allclose(old_units[:, 0], new_units[:, 0])


def test_no_draw_of_the_unknown_sits_at_its_ranges_end(calibrated):
    """The wait's Gaussian spreads over its whole range (the response cannot pin it), so some of
    its points lie past an end; the draws are the Gaussian truncated to the range
    (`truncated`), conditioned: none is cut to an end, the saved ones nor those drawn past
    them."""
    _, saved = calibrated
    calibration = load_calibration(saved)
    gaussian = gaussian_points(calibration.mean, calibration.cov, 48, calibration.draw_seed)
    past = (gaussian[:, 1] < 1.0) | (gaussian[:, 1] > 2.0)
    assert past.sum() >= 2, gaussian  # clipping would have put these at an end
    units = np.array([p.units for p in calibration.points(48, 1)])
    assert len(units) == 48 and np.all((units > 1.0) & (units < 2.0)), units


def test_a_calibrations_screened_draws_are_counted_and_said(calibrated):
    """A calibration whose conditioned draws skip a place of the Gaussian's sequence
    (`calibration.screen`: a draw the fitted figures rule out, replaced by the next): a run
    at it counts the draws screened ahead of the ones it runs, the capacity range says so,
    and the Gaussian's own draws past the saved ones continue after the last one's place."""
    _, saved = calibrated
    calibration = load_calibration(saved)
    # a document from before the screen counts none
    assert dataclasses.replace(calibration, sequence=None).screened(16) == 0
    # a calibration whose third draw was screened: runs of 2 draws count none, of 8 one
    skipped = dataclasses.replace(calibration, sequence=np.array([0, 1, *range(3, 17)]))
    assert skipped.screened(2) == 0 and skipped.screened(8) == 1
    # past the saved draws, the Gaussian's own continue after the last one's place (16), never
    # repeating a place the saved ones took
    units = np.array([p.units for p in skipped.points(20, 1)])
    gaussian = draw_units(skipped.mean, skipped.cov, 21, skipped.draw_seed)
    assert np.allclose(units[16:], gaussian[17:21]) and np.allclose(units[:16], skipped.conditioned)
    spread = CapacityRange(
        "clients.users",
        "largest",
        ["p95<0.3"],
        80.0,
        [80.0] * 8,
        [False] * 8,
        78.0,
        82.0,
        0.9,
        8,
        0.0,
        ["x"],
        screened=skipped.screened(8),
    )
    assert "1 draw the fitted figures rule out screened" in spread.sentence()
    assert spread.as_dict()["screened_draws"] == 1


def test_a_saved_sequence_out_of_order_is_refused(calibrated, tmp_path):
    _, saved = calibrated
    document = json.loads(saved.read_text())
    found = document["uncertainty"]["posterior"]["conditioned"]
    found["sequence"] = [1, 0, *range(2, len(found["draws"]))]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    with pytest.raises(CalibrationFileError, match=r"conditioned\.sequence must be increasing"):
        load_calibration(edited)


# to append to tests/studies/test_conditioned_draws.py with wiring.patch (needs the screen wired in
# analysis._conditioned)


def test_the_saved_draws_say_what_the_screen_did(calibrated):
    """The document keeps each conditioned draw's misfit, its place in the Gaussian's sequence
    and the screen's count and limit (`calibration.screen`)."""
    _, saved = calibrated
    found = json.loads(saved.read_text())["uncertainty"]["posterior"]["conditioned"]
    screen = found["screen"]
    assert screen["degrees_of_freedom"] == 1 and screen["level"] == 0.99
    assert screen["limit"] == pytest.approx(stats.chi2.ppf(0.99, 1))
    sequence = found["sequence"]
    assert len(sequence) == len(found["draws"]) == len(found["misfit_chi2"])
    assert sequence == sorted(sequence) and found["screened"] == sequence[-1] + 1 - len(sequence)
    assert all(x <= screen["limit"] for x in found["misfit_chi2"])
    assert load_calibration(saved).screened(16) == found["screened"]
