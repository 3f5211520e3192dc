"""Service demand estimation: known demands recovered within the reported standard errors,
collinear classes named, and a simulated run's CPU demand recovered from tiersim's output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from sim.cli import main
from sim.measurements import table
from sim.measurements.estimate import BACKGROUND, estimate, fit
from sim.measurements.simulated import rows_from_run
from tests.conftest import THEORY_LEVEL, simulate

pytest.importorskip("pandas")

DEMANDS = np.array([0.012, 0.030, 0.004])
NAMES = ["browse", "search", "login"]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"


def synthetic(seed: int, windows: int = 20, noise: float = 0.01, background: float = 0.03):
    """Windows of the utilisation law U = Σ D_c·X_c + U_0 with Gaussian measurement noise."""
    rng = np.random.default_rng(seed)
    throughputs = rng.uniform(1.0, 12.0, size=(windows, len(DEMANDS)))
    utilisation = throughputs @ DEMANDS + background + rng.normal(0.0, noise, windows)
    return throughputs, utilisation


def test_known_demands_recovered_within_their_intervals_at_the_nominal_rate():
    inside = trials = 0
    for seed in range(200):
        throughputs, utilisation = synthetic(seed)
        result = fit(throughputs, utilisation, NAMES, background=True)
        estimates = {d.name: d for d in result.demands}
        assert not result.warnings
        quantile = stats.t.ppf(0.975, result.windows - 4)
        for name, true in zip([*NAMES, BACKGROUND], [*DEMANDS, 0.03]):
            demand = estimates[name]
            assert abs(demand.demand_s - true) < 5 * demand.std_error_s  # never far off
            inside += abs(demand.demand_s - true) <= quantile * demand.std_error_s
            trials += 1
    # 800 intervals at 95 %: the binomial standard deviation of the rate is 0.8 %
    assert 0.92 <= inside / trials <= 0.98


def test_collinear_classes_are_named():
    throughputs, utilisation = synthetic(3)
    rng = np.random.default_rng(4)
    throughputs[:, 1] = 0.5 * throughputs[:, 0] * (1 + rng.normal(0, 0.002, len(utilisation)))
    result = fit(throughputs, utilisation, NAMES)
    assert len(result.warnings) == 1
    assert "browse and search are collinear" in result.warnings[0]
    assert result.condition_number > 30


def test_a_class_without_throughput_and_too_few_windows_are_warned():
    throughputs = np.array([[1.0, 0.0], [2.0, 0.0]])
    result = fit(throughputs, np.array([0.1, 0.2]), ["a", "b"])
    assert any("class b has no throughput" in w for w in result.warnings)
    one = fit(np.array([[4.0]]), np.array([0.2]), ["a"])
    assert one.demands[0].demand_s == pytest.approx(0.05)  # D = U/X
    assert "one window" in one.method and any("no residual degrees" in w for w in one.warnings)


def test_simulated_single_class_cpu_demand_is_recovered():
    """tiersim at three arrival rates, one node with 50 ms of CPU per request on one core:
    the regression of its cpu.utilization on its throughput recovers 50 ms."""
    rows = []
    for rate in (4.0, 8.0, 12.0):
        model = {
            "clients": {"kind": "open", "rate_per_s": rate},
            "backends": [
                {
                    "name": "server",
                    "threads": 8,
                    "cores": 1,
                    "demand": {"dist": "exponential", "mean": 0.05},
                }
            ],
            "run": {"duration_s": 200, "warmup": 20},
        }
        rows += rows_from_run(simulate(model, replications=3, seed=5), f"rate={rate:g}")
    (result,) = estimate(table.frame(rows), level=THEORY_LEVEL)
    (demand,) = result.demands
    assert result.host == "server1" and result.windows == 9
    assert demand.low_s <= 0.05 <= demand.high_s
    assert demand.high_s - demand.low_s < 0.01  # and the interval is informative


def test_cli_import_then_estimate_on_the_jmeter_fixture(tmp_path):
    output = tmp_path / "table.parquet"
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "import",
            "jtl",
            str(FIXTURES / "jmeter" / "run.jtl"),
            "-o",
            str(output),
            "--window",
            "4",
            "--utilisation",
            str(FIXTURES / "sar" / "jmeter_run.sadf.csv"),
            "--class",
            "search=search",
            "--class",
            ".=static",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "5 window(s), classes search, static" in result.stderr
    result = runner.invoke(main, ["estimate", str(output), "--json"])
    assert result.exit_code == 0, result.output
    import json

    document = json.loads(result.stdout)
    (host,) = document["hosts"]
    assert host["host"] == "vm" and host["windows"] == 5
    assert [d["name"] for d in host["demands"]] == ["search", "static"]
    bad = runner.invoke(main, ["estimate", str(output), "--host", "db"])
    assert bad.exit_code == 3 and "no host 'db'; expected one of vm" in bad.stderr


def test_three_classes_on_two_hosts_recovered_from_a_simulated_run():
    """Three request classes with known demands on two hosts (the application node and the
    database), run at four mixes: the utilisation regression over the replications' windows
    recovers every class's demand on each host inside its 99 % interval."""
    from sim.measurements.table import frame as to_frame

    demands = {  # class -> (node CPU per request, database calls, database CPU per call) [s]
        "browse": (0.010, 1, 0.004),
        "search": (0.030, 2, 0.006),
        "buy": (0.020, 3, 0.010),
    }
    classes = [
        {
            "name": name,
            "backend": {"demand": {"dist": "exponential", "mean": cpu}, "db_calls": calls},
            "database": {"demand": {"dist": "exponential", "mean": db}},
        }
        for name, (cpu, calls, db) in demands.items()
    ]
    rows = []
    mixes = [(0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6), (0.34, 0.33, 0.33)]
    for k, mix in enumerate(mixes):
        data = {
            "clients": {"kind": "open", "rate_per_s": 20.0, "mix": dict(zip(demands, mix))},
            "backends": [{"name": "app", "cores": 2, "demand": 0.01, "db_calls": 1}],
            "database": {"cores": 2, "demand": 0.004},
            "classes": classes,
        }
        result = simulate(data, replications=3, duration_s=300.0, warmup=20.0, seed=60 + k)
        rows += rows_from_run(result, f"mix{k}")
    frame = to_frame(rows)
    truth = {
        "app1": {name: cpu for name, (cpu, _, _) in demands.items()},
        "database": {name: calls * db for name, (_, calls, db) in demands.items()},
    }
    results = {r.host: r for r in estimate(frame, level=THEORY_LEVEL)}
    assert set(results) == set(truth)
    for host, expected in truth.items():
        found = {d.name: d for d in results[host].demands}
        for name, demand in expected.items():
            assert found[name].low_s <= demand <= found[name].high_s, (host, name, found[name])
