"""The command line as a user meets it: bad input is a one-paragraph error naming the file,
the dotted field path, the value and what is allowed, with a documented exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

SMALL = """
[meta]
name = "cli test"
[clients]
kind = "closed"
users = 20
think = { dist = "exponential", mean = 1.0 }
[[backends]]
name = "app"
threads = 50
cores = 2
demand = { dist = "exponential", mean = 0.02 }
[run]
duration_s = 200
replications = 3
seed = 5
"""


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_run_prints_intervals(small):
    result = invoke("run", small)
    assert result.exit_code == 0, result.output
    assert (
        "throughput" in result.output and "±" in result.output and "3 replications" in result.output
    )


def test_run_json_document_is_stable_and_complete(small):
    result = invoke("run", small, "--json", "--set", "backends.0.threads=40", "--replications", "4")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    assert doc["model"]["overrides"] == ["backends.0.threads=40"]
    assert doc["run"]["replications"] == 4 and doc["run"]["seed"] == 5
    tput = doc["metrics"]["throughput"]
    assert set(tput) >= {"mean", "half_width", "low", "high", "n", "unit"} and tput["n"] == 4
    assert tput["low"] <= tput["mean"] <= tput["high"]
    for name in (
        "response.p95",
        "app1.threads.utilization",
        "app1.cpu.utilization",
        "count.completed",
    ):
        assert name in doc["metrics"], name
    assert len(doc["replications"]) == 4


def test_seed_changes_results_and_repeats_exactly(small):
    def tput(seed):
        return json.loads(invoke("run", small, "--json", "--seed", seed).stdout)["metrics"][
            "throughput"
        ]["mean"]

    assert tput(1) == tput(1)
    assert tput(1) != tput(2)


def test_timeseries_csv(small, tmp_path):
    out = tmp_path / "ts.csv"
    assert invoke("run", small, "--timeseries", out, "--replications", "1").exit_code == 0
    rows = out.read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("replication,") and "throughput" in rows[0]
    assert len(rows) > 150  # 200 s at one row per second


@pytest.mark.parametrize(
    "text, needles",
    [
        (
            "[clients]\nkind = 'closed'\nusers = -5\n[[backends]]\ndemand = 0.1\n",
            ["clients.users = -5", "greater than or equal to 1"],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[[backends]]\ndemand = 0.1\nthreads = 0\n",
            ["backends.0.threads = 0"],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[balancer]\npolicy = 'fastest'\n[[backends]]\ndemand = 0.1\n",
            ["balancer.policy = 'fastest'", "round_robin"],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\nthinkk = 1\n[[backends]]\ndemand = 0.1\n",
            ["clients.thinkk", "unknown parameter"],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[[backends]]\ndemand = { dist = 'gama', mean = 1 }\n",
            ["backends.0.demand", "'gama'", "'gamma'"],
        ),
        (
            "[clients]\nkind = 'swarm'\n[[backends]]\ndemand = 0.1\n",
            ["clients", "'swarm'", "'closed'"],
        ),
        ("[clients\nkind = 1", ["not valid TOML", "line 1"]),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[[backends]]\ndemand = 0.1\nconnector = "
            "'blocking'\nmax_connections = 50\n",
            ["backends.0", "max_connections", 'connector = "nonblocking"'],
        ),
        (
            "[clients]\nkind = 'closed'\nusers = 5\n[proxy.backend_pool]\nmodule = 'mod_jk'\ndisable_reuse = true\n"
            "[[backends]]\ndemand = 0.1\n",
            ["proxy.backend_pool", "disable_reuse", 'module = "mod_proxy"'],
        ),
        ("[clients]\nkind = 'open'\nrate_per_s = 5\n", ["no server"]),
    ],
)
def test_invalid_models_name_the_field_and_exit_3(tmp_path, text, needles):
    path = write(tmp_path, text)
    for command in ("validate", "run", "solve"):
        result = invoke(command, path)
        assert result.exit_code == 3, (command, result.output)
        assert "Traceback" not in result.output
        assert str(path) in result.stderr
        for needle in needles:
            assert needle in result.stderr, (needle, result.stderr)


def test_missing_file(tmp_path):
    result = invoke("validate", tmp_path / "nope.toml")
    assert result.exit_code == 3 and "no such model file" in result.stderr


def test_unstable_open_model_is_refused_before_running(tmp_path):
    path = write(
        tmp_path,
        "[clients]\nkind = 'open'\nrate_per_s = 500\n[[backends]]\ndemand = 0.01\nthreads = 100000\n"
        "[run]\nduration_s = 10\n",
    )
    result = invoke("run", path)
    assert result.exit_code == 4
    assert "backends.0.cores" in result.stderr and "offered 5" in result.stderr


@pytest.mark.parametrize(
    "override, needle",
    [
        ("backends.0.threads=abc", "backends.0.threads = 'abc'"),
        ("backends.7.threads=3", "index 7 out of range"),
        ("nothing=3", "nothing"),
        ("threads", "PATH=VALUE"),
    ],
)
def test_bad_overrides(small, override, needle):
    result = invoke("run", small, "--set", override)
    assert result.exit_code == 3
    assert needle in result.stderr


def test_override_takes_effect(small):
    doc = json.loads(invoke("run", small, "--json", "--set", "clients.users=2").stdout)
    assert doc["metrics"]["throughput"]["mean"] < 2.1  # at most N / Z = 2 per second


def test_schema_lists_every_parameter_with_range():
    result = invoke("schema")
    assert result.exit_code == 0
    for needle in (
        "backends.N.threads",
        "proxy.listen_backlog",
        "run.warmup",
        "maxThreads",
        ">= 1",
        "{dist = 'gamma'}.cv",
    ):
        assert needle in result.output, needle
    as_json = json.loads(invoke("schema", "--json").stdout)
    assert "properties" in as_json


def test_solve_reports_exact_mva_for_a_product_form_model(small):
    result = invoke("solve", small, "--json")
    doc = json.loads(result.stdout)
    assert doc["solvable"] and doc["exact"] and doc["caveats"] == []
    assert doc["throughput_per_s"] <= doc["bounds"]["throughput_upper"]


def test_solve_says_plainly_when_not_product_form(small):
    result = invoke("solve", small, "--set", "clients.ramp=[{users=10,over_s=60}]")
    assert (
        result.exit_code == 0
        and "no exact analytic solution" in result.output
        and "ramp" in result.output
    )
    # one thread keeps the second core idle: the pool binds (five threads on two cores would
    # not, with exponential demands: the queue in front of the threads is the CPU's own)
    caveat = json.loads(invoke("solve", small, "--json", "--set", "backends.0.threads=1").stdout)
    assert not caveat["exact"] and any("backends.0.threads = 1" in c for c in caveat["caveats"])
    exact = json.loads(invoke("solve", small, "--json", "--set", "backends.0.threads=5").stdout)
    assert exact["exact"], exact["caveats"]


def test_repository_models_validate():
    models = sorted(Path(__file__).resolve().parents[2].joinpath("models").glob("*.toml"))
    assert models
    result = invoke("validate", *models)
    assert result.exit_code == 0, result.output


def test_precision_stopping_reaches_the_target(small):
    result = invoke(
        "run",
        small,
        "--json",
        "--set",
        "run.precision={metric='throughput', relative_half_width=0.02}",
    )
    doc = json.loads(result.stdout)
    tput = doc["metrics"]["throughput"]
    assert doc["run"]["stopped_by"] == "precision"
    assert tput["half_width"] / tput["mean"] <= 0.02
    assert tput["n"] >= 3  # never fewer than run.replications


def test_precision_stopping_gives_up_at_its_limit(small):
    doc = json.loads(
        invoke(
            "run",
            small,
            "--json",
            "--set",
            "run.precision={metric='response.p99', relative_half_width=0.0001, max_replications=4}",
        ).stdout
    )
    assert doc["run"]["stopped_by"] == "precision-limit" and doc["run"]["replications"] == 4


def test_precision_on_an_unknown_metric_is_a_model_error(small):
    result = invoke("run", small, "--set", "run.precision={metric='thruput'}")
    assert result.exit_code == 3 and "'thruput'" in result.stderr and "throughput" in result.stderr


def test_interrupt_keeps_finished_replications(small, monkeypatch):
    import sim.run.replications

    real = sim.run.replications.run_replication

    def interrupted_at_third(model, r, *args):
        if r == 2:
            raise KeyboardInterrupt
        return real(model, r, *args)

    monkeypatch.setattr(sim.run.replications, "run_replication", interrupted_at_third)
    result = invoke("run", small, "--json")
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    assert doc["run"]["stopped_by"] == "interrupted" and doc["metrics"]["throughput"]["n"] == 2


def test_reproduce_prints_published_beside_simulated_rows():
    result = invoke("reproduce", "seed001", "--json", "--replications", "2")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 16  # both backends of the published table
    for row in rows:
        assert set(row) >= {
            "experiment",
            "figure",
            "published",
            "simulated",
            "ci_low",
            "ci_high",
            "rel_error",
            "fitted",
        }
        assert row["rel_error"] == pytest.approx(
            (row["simulated"] - row["published"]) / row["published"]
        )
    # KeepAliveTimeout is no longer fitted (the time is measured to the server's last close);
    # StartServers and the restart's kind are
    assert [r["figure"] for r in rows if r["fitted"]] == [
        "jetty-7.4.3 connector=mod_proxy_http max_clients=150 keep_alive=no",
        "jetty-7.4.3 connector=mod_proxy_http max_clients=150 keep_alive=yes",
    ]
    by_figure = {r["figure"]: r for r in rows}
    stall = by_figure["jetty-7.4.3 connector=mod_proxy_ajp max_clients=150 keep_alive=yes"]
    assert (
        stall["simulated_flag"] == stall["published_flag"] == "yes"
    )  # timeouts only with AJP here
    assert all(r["simulated_flag"] == "no" for r in rows if "mod_proxy_http" in r["figure"])
    for (
        figure,
        row,
    ) in by_figure.items():  # the seed's findings: HTTP no slower than AJP; keep-alive slower
        if "mod_proxy_ajp" in figure:
            http = by_figure[figure.replace("mod_proxy_ajp", "mod_proxy_http")]
            assert http["simulated"] <= row["ci_high"]
        if figure.endswith("keep_alive=no"):
            assert by_figure[figure[:-2] + "yes"]["simulated"] > row["simulated"]


def test_reproduce_unknown_experiment():
    result = invoke("reproduce", "seed999")
    assert result.exit_code == 3 and "seed001" in result.stderr


def test_plot_timeseries_writes_html(small, tmp_path):
    series = tmp_path / "ts.csv"
    assert invoke("run", small, "--replications", "1", "--timeseries", series).exit_code == 0
    out = tmp_path / "plot.html"
    result = invoke(
        "plot", series, "-o", out, "-c", "app1.threads.in_use_now", "-c", "app1.serving_now"
    )
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert "app1.threads.in_use" in html and "app1.serving" in html
    bad = invoke("plot", series, "-o", out, "-c", "nope")
    assert bad.exit_code == 3 and "no column nope" in bad.stderr


def test_reproduce_seed000_reports_pylot_figures_and_released_timeout_predictions():
    result = invoke("reproduce", "seed000", "--json", "--replications", "2", "--workers", "2")
    assert result.exit_code == 0, result.output
    rows = {r["figure"]: r for r in json.loads(result.stdout)}
    pylot = [r for f, r in rows.items() if "tool=pylot" in f]
    assert len(pylot) == 4 and all(r["published"] is not None for r in pylot)
    assert [f for f, r in rows.items() if r["fitted"]] == [
        "mod_proxy_ajp tool=pylot throughput_req_per_s"
    ]
    browsermob = [r for f, r in rows.items() if "tool=browsermob" in f]
    assert len(browsermob) == 2
    # released after the blind prediction (450 and 630): predictions, with their errors
    assert {r["published"] for r in browsermob} == {450.0, 630.0}
    for row in browsermob:
        assert not row["fitted"] and row["rel_error"] is not None
        assert row["ci_low"] <= row["simulated"] <= row["ci_high"]


def test_seed003_rows_all_load_and_fitted_figures_are_marked():
    """Every row of the seed003 experiment maps onto a valid model (the full reproduction
    takes about a minute and is not part of the suite)."""
    from sim.model.load import load_model
    from sim.studies.experiment import factor_overrides, is_fitted
    from sim.studies.records import load_experiment

    folder, spec, rows = load_experiment("seed003")
    policies = set()
    for row in rows:
        model = load_model(
            folder / spec.models.files[row["scenario"]], factor_overrides(spec, row, folder)
        )
        policies.add(model.balancer.policy)
        assert is_fitted(spec, row, "throughput_req_per_s") == row["scenario"].endswith("-alone")
        assert not is_fitted(spec, row, "requests_to_slow_backend")
    assert policies == {"sqf", "lighttpd_round_robin"}


def test_reproduce_seed004_fits_predicts_and_flags_rows_the_response_time_law_rejects():
    result = invoke("reproduce", "seed004", "--json", "--replications", "2")
    assert result.exit_code == 0, result.output
    rows = {r["figure"]: r for r in json.loads(result.stdout)}
    assert len(rows) == 18  # 9 configurations x (throughput, response time)
    # every figure is published now (Table 2 and C5 were released after the blind prediction)
    assert all(r["published"] is not None for r in rows.values())
    released = {
        f"{c} {col}"
        for c in ("two-nodes-mod-jk", "C5")
        for col in ("throughput_res_per_s", "response_time_ms")
    }
    assert not any(rows[f]["fitted"] for f in released)
    fitted = [r for r in rows.values() if r["fitted"]]
    assert len(fitted) == 8 and all(abs(r["rel_error"]) <= 0.15 for r in fitted)
    # response times are compared in the published unit (ms)
    assert 300 < rows["single-node response_time_ms"]["simulated"] < 800
    assert "consistent with config=single-node" in rows["C1 response_time_ms"]["note"]
    assert "inconsistent" in rows["C2 response_time_ms"]["note"]
    assert "155" in rows["C2 response_time_ms"]["note"]  # 60/145.9 - 0.256 s


def test_implied_think_time_and_its_rounding_tolerance():
    from sim.analytic.operational import agrees, implied_think

    row = implied_think("t1", 60, "507", 0.001, "80.4")
    assert row.think_s == pytest.approx(60 / 80.4 - 0.507)
    assert row.tolerance_s == pytest.approx(60 * 0.05 / 80.4**2 + 0.0005)
    assert implied_think("t2", 60, "[HELD OUT]", 0.001, "80.4") is None
    assert agrees(row, implied_think("c1", 60, "507", 0.001, "80.4"))
    assert not agrees(row, implied_think("c2", 60, "256", 0.001, "145.9"))


def test_run_table_shows_jvm_replication_and_batch_sections():
    root = Path(__file__).resolve().parents[2]
    result = invoke("run", root / "models" / "seed002-tomcat6018.toml", "--replications", "1")
    assert result.exit_code == 0, result.output
    assert "JVMs" in result.output and "app1 full gcs" in result.output
    assert "batch 4 app1 gc fraction" in result.output
    assert (
        "batch.4.app1 wait" not in result.output
    )  # batch windows stay out of the whole-run sections
    result = invoke(
        "run",
        root / "models" / "seed004-jboss323-hsqldb.toml",
        "--replications",
        "1",
        "--set",
        "backends.0.count=2",
        "--set",
        "cluster.replication.1.enabled=true",
    )
    assert result.exit_code == 0, result.output
    assert "Session replication" in result.output and "replication.ejb wait" in result.output


def test_response_time_law_section_errors_name_what_is_missing(tmp_path):
    from sim.studies.experiment import ExperimentError, parse_experiment
    from sim.studies.records import law_notes

    source = tmp_path / "experiment.toml"
    meta = {"published": "p.csv", "value_column": "x", "metric": "throughput"}
    law = {"users": 60, "response_column": "r"}
    raw = {"experiment": meta, "models": {"column": "config"}, "response_time_law": law}
    with pytest.raises(ExperimentError) as caught:
        parse_experiment(raw, source)
    assert str(caught.value).splitlines() == [
        f"{source}: response_time_law.throughput_column: required (the column of X)",
        f"{source}: response_time_law.reference: required (the row whose implied think time "
        'the model uses, e.g. {config = "C1"})',
    ]
    law.update(
        {"throughput_column": "x", "reference": {"config": "nope"}, "response_unit_s": 0.001}
    )
    spec = parse_experiment(raw, source)
    with pytest.raises(ExperimentError, match="names no published row"):
        law_notes(spec, [{"config": "a", "r": "500", "x": "80"}], source)
