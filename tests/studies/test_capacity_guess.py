"""The analytic first guess of `tiersim capacity` is shown only where the solver's network is
the model: a network without the thread pool that bounds a model answers for another model."""

from __future__ import annotations

from sim.studies.capacity import search as cap
from sim.studies.capacity.slo import parse_slo

# Closed users on one node whose requests hold one of 4 threads through a 0.1 s wait off the
# CPU: the threads, not the core, bound it (at most 4 / 0.11 = 36 requests/s), and the solver,
# which has no thread pool, would answer for a node with unbounded threads (about 90/s).
THREADS = """
[clients]
kind = "closed"
users = 2
think = { dist = "exponential", mean = 1.0 }
[[backends]]
name = "app"
threads = 4
cores = 1
demand = { dist = "exponential", mean = 0.01 }
io_wait = { dist = "exponential", mean = 0.1 }
[run]
duration_s = 100
replications = 2
"""


def guess(tmp_path, text: str, slo: str, vary: str):
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    base = cap.search_base(path, (), None, None)
    real, integer, start = cap.resolve_path(base, vary)
    bounds = (1.0, start * 2**20)
    return cap.analytic_guess(
        base, real, [parse_slo(slo)], cap.default_direction(real), integer, start, bounds
    )


def test_no_guess_where_the_solver_lacks_a_thread_pool_that_fills_up(tmp_path):
    value, note = guess(tmp_path, THREADS, "mean<0.5", "clients.users")
    assert value is None
    assert "backends.0.threads = 4 can fill up" in note and "clients.users" in note


def test_a_guess_where_every_pool_is_larger_than_the_population(tmp_path):
    # the same node with as many threads as the search can have users: MVA is exact there
    text = THREADS.replace("threads = 4", "threads = 2000")
    value, note = guess(tmp_path, text, "mean<0.5", "clients.users")
    assert value is not None and "exact" in note


def test_no_solve_is_spent_where_the_plan_already_leaves_something_out(tmp_path, monkeypatch):
    import sim.analytic.model_solver as solver

    def must_not_run(*args, **kwargs):
        raise AssertionError("solved a model the solver cannot hold")

    monkeypatch.setattr(solver, "solve_model", must_not_run)
    refusing = THREADS.replace("threads = 4", "threads = 4\naccept_queue = 10")
    value, note = guess(tmp_path, refusing, "mean<0.5", "clients.users")
    assert value is None and "backends.0.accept_queue" in note


def test_before_any_solve_the_condition_is_the_plan_s_approximations(tmp_path):
    from sim.model.load import load_model
    from sim.model.plan import compile_plan

    path = tmp_path / "m.toml"
    path.write_text(THREADS.replace("threads = 4", "threads = 4\naccept_queue = 10"))
    left_out = cap.unmodelled_by_solver(compile_plan(load_model(path)))
    assert any(item.startswith("backends.0.accept_queue") for item in left_out)
    path.write_text(THREADS)
    assert cap.unmodelled_by_solver(compile_plan(load_model(path))) == []
