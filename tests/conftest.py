"""Shared helpers: build models from small dicts and run them."""

from __future__ import annotations

import copy
import math
import os

import pytest
from hypothesis import settings

from sim.engines.compiled.support import missing as compiled_lacks
from sim.model.load import parse_model
from sim.model.plan import compile_plan
from sim.run.replications import run

# The suite's property tests draw the same examples on every run (a fixed seed, like every other
# stochastic test here), so a red CI always means a change broke something. `explore` draws
# new random examples, more of them, to hunt for bugs before committing:
#     HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest tests/engines/test_properties.py
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True, print_blob=True)
settings.register_profile(
    "explore", max_examples=200, deadline=None, derandomize=False, print_blob=True
)
settings.register_profile("dev", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Theory tests assert that the analytic value lies inside the simulation's own interval.
# They use 99 % intervals so that a correct model fails a given fixed-seed test with
# probability about 1 %, not 5 %; the interval is still computed, never a fixed tolerance.
THEORY_LEVEL = 0.99


def differing(first: dict, second: dict) -> dict:
    """The metrics two runs disagree on, bit for bit (NaN equals NaN; a metric only one run
    has counts too): the engines' equality tests assert this is empty."""
    out = {
        name: (value, second.get(name))
        for name, value in first.items()
        if name not in second
        or not (value == second[name] or (math.isnan(value) and math.isnan(second[name])))
    }
    out.update({name: (None, value) for name, value in second.items() if name not in first})
    return out


def one_server_file(duration_s: float, warmup_s: float, replications: int) -> str:
    """The studies' small model file: open arrivals at 5 per s to one single-threaded server
    (exponential demand, 0.3 s in the file: the calibrations fit it), seed 11; `duration_s`,
    `warmup_s` and `replications` its run."""
    return f"""
[clients]
kind = "open"
rate_per_s = 5.0

[[backends]]
name = "server"
threads = 1
cores = 1
demand = {{ dist = "exponential", mean = 0.3 }}

[balancer]
policy = "round_robin"

[run]
duration_s = {duration_s:g}
warmup = {warmup_s:g}
replications = {replications}
seed = 11
"""


def model_from(data: dict, **run_control):
    data = copy.deepcopy(data)
    data.setdefault("run", {}).update(run_control)
    return parse_model(data, source="<test>")


def simulate(data: dict, replications: int = 10, **run_control):
    run_control.setdefault("confidence", THEORY_LEVEL)
    model = model_from(data, **run_control)
    return run(model, replications=replications)


@pytest.fixture
def sim_run():
    return simulate


@pytest.fixture(autouse=True)
def capacity_keeps_no_cache_unless_given(monkeypatch):
    """`tiersim capacity` keeps its finished evaluations in `.tiersim-cache/` of the current
    folder unless told otherwise; a test that runs it in this process keeps none unless it
    gives `--cache`: the tests compare a command with itself (serial and clustered, before and
    after a change), which a replay from the other run would make pass without running, and
    nothing is written into the working tree.  (`test_study_interrupts` tests the default.)"""
    monkeypatch.setattr("sim.studies.capacity.kept.default_cache", lambda source: None)


@pytest.fixture(autouse=True)
def run_and_import_keep_no_cache_unless_given(monkeypatch):
    """`tiersim run` keeps its finished replications, and `tiersim import` the files it has
    read, in `.tiersim-cache/` of the current folder until the command is whole; a test that
    runs them in this process keeps none unless it gives `--cache`, as capacity's
    (`test_run_import_interrupts` tests the default)."""
    monkeypatch.setattr("sim.studies.kept_replications.default_cache", lambda source, inputs: None)
    monkeypatch.setattr("sim.studies.kept_samples.default_cache", lambda inputs: None)


@pytest.fixture(params=["reference", "compiled"])
def engine(request) -> str:
    """`run.engine` for a test that runs on both engines (theory tests whose models the
    compiled engine supports): the two compute the same trajectory, and each is checked."""
    return request.param


def on_both_engines():
    """An autouse fixture for a module of exact tests: every model the module builds with
    `model_from` runs on the reference engine and on the compiled engine, so neither engine
    loses the tests (named, not `auto`: `auto` sends a small run in a fresh process to the
    reference engine).  A case whose model the compiled engine does not implement is skipped
    on it, naming the features: it would only rerun the reference case."""

    @pytest.fixture(autouse=True, params=["reference", "compiled"])
    def _on_both_engines(request, monkeypatch):
        def on_engine(data, **run_control):
            run_control.setdefault("engine", request.param)
            model = model_from(data, **run_control)
            if request.param == "compiled":
                missing = compiled_lacks(compile_plan(model))
                if missing:
                    pytest.skip(
                        "the reference case covers it: the compiled engine does not "
                        "implement " + "; ".join(missing)
                    )
            return model

        monkeypatch.setattr(request.module, "model_from", on_engine)

    return _on_both_engines


# The default suite's longest cases on the reference engine whose compiled twins stay in it:
# the engines compute the same replication bit for bit (tests/engines/, and
# tests/tiers/test_database_lock.py's equality cases for the lock), so the theory is still
# checked on every `make test`; `make slow-test` (CI) runs these too.
SLOW_REFERENCE_CASES = (
    # test_theory.py's heavy-load tails at rho = 0.95: about 70 s of one core together
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/1 rho=0.95]",
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/4 rho=0.95]",
    # the shared lock's M/M/1 cases (a share of the calls, full share, random order): ~20 s
    "test_a_share_of_the_calls_takes_the_lock[reference]",
    "test_a_lock_both_nodes_share_is_one_mm1_queue[reference]",
    "test_random_order_keeps_the_mm1_mean_and_lengthens_its_tail[reference]",
    # test_theory.py's heavy-load tails at rho = 0.9, the product-form cluster, the database's
    # disk and the exact MVA cases: about 48 s of one core together
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/1 rho=0.9]",
    "test_heavy_load_mean_and_tail_percentiles[reference-M/M/4 rho=0.9]",
    "test_solve_agrees_with_simulation_on_a_product_form_cluster[reference]",
    "test_database_disk_is_a_fcfs_station_in_the_product_form_network[reference]",
    "test_exact_mva_near_saturation[reference-10-46]",
    "test_exact_mva_closed_three_station_chain[reference]",
)

# The signal tests' second halves, whose first halves stay in the default suite: each command
# is sent SIGINT there (exit 130, the same code path to its end), SIGTERM here (143, the same
# handler); the resumed calibration after an interrupt (a fit run twice, 25 s) and the silent
# scheduler over ws (tcp stays): about 55 s together, in `make slow-test` (CI).
SLOW_TWIN_CASES = (
    "test_capacity_answers_a_signal[15-143]",
    "test_a_long_compiled_replication_says_its_progress_and_answers_a_signal[15-143]",
    "test_a_long_reference_replication_says_its_progress_and_answers_a_signal[15-143]",
    "test_calibrate_keeps_its_finished_evaluations_and_a_rerun_resumes",
    "test_a_silent_scheduler_at_the_default_timeout[ws]",
)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.name in SLOW_REFERENCE_CASES or item.name in SLOW_TWIN_CASES:
            item.add_marker(pytest.mark.slow)
