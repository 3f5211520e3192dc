"""An experiment whose figures are an imported measurement table (`[experiment] table = ...`):
rows by run or window, [[fitted]] selectors, derived measurement errors, readable errors, and a
simulated table calibrated back to the demand and think time that made it."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest

from sim.measurements.table import write
from sim.studies.experiment import ExperimentError
from sim.studies.records import load_experiment

MODEL = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"

EXPERIMENT = f"""\
[experiment]
name = "lab"
table = "measured.csv"

[models]
model = "{MODEL}"

[factors.users]
"*" = ["clients.users={{value}}"]

[[fitted]]
users = 2

[[calibrate]]
parameter = "backends.0.demand.mean"
bounds = [0.002, 0.05]
"""


def window(run: str, users: float, start: float, count: int, response: float, **more) -> dict:
    return {
        "run": run,
        "window_start_s": start,
        "window_end_s": start + 10.0,
        "class": "total",
        "users": users,
        "throughput": count / 10.0,
        "response.mean": response,
        "response.p95": 3 * response,
        "count.completed": count,
        "count.errors": 0,
        **more,
    }


def lab(tmp_path: Path, rows: list[dict], experiment: str = EXPERIMENT) -> Path:
    write(rows, tmp_path / "measured.csv")
    (tmp_path / "experiment.toml").write_text(experiment, encoding="utf-8")
    return tmp_path


def three_runs() -> list[dict]:
    rows = []
    for users, count, response in ((2, 70, 0.012), (8, 280, 0.014), (16, 500, 0.02)):
        for k, wobble in enumerate((0.95, 1.0, 1.05)):
            rows.append(
                window(f"users{users}", users, 10.0 * k, round(count * wobble), response / wobble)
            )
    return rows


def test_runs_pool_their_windows_into_one_row_each(tmp_path):
    _, spec, records = load_experiment(str(lab(tmp_path, three_runs())))
    assert [r["run"] for r in records] == ["users2", "users8", "users16"]
    assert [r["users"] for r in records] == ["2", "8", "16"]
    first = records[0]
    assert float(first["throughput"]) == pytest.approx((66 + 70 + 74) / 30.0)
    counts, responses = (66, 70, 74), (0.012 / 0.95, 0.012, 0.012 / 1.05)
    pooled = sum(c * r for c, r in zip(counts, responses)) / sum(counts)
    assert float(first["response.mean"]) == pytest.approx(pooled)
    assert spec.models.column == "run" and spec.models.files["users2"] == str(MODEL)
    # the published file calibration fingerprints is the table itself
    assert spec.experiment.published == "measured.csv"


def test_measurement_error_from_the_windows_or_the_count(tmp_path):
    rows = [*three_runs(), window("users32", 32, 0.0, 900, 0.05)]
    _, spec, _ = load_experiment(str(lab(tmp_path, rows)))
    sd = {(f.when["run"], f.column): f.measurement_error for f in spec.figures}
    # three windows: the batch-means standard error of the pooled throughput
    x = [6.6, 7.0, 7.4]
    mean = sum(x) / 3
    batch = math.sqrt(sum((v - mean) ** 2 for v in x) / 9 * 3 / 2) / mean
    assert sd[("users2", "throughput")] == pytest.approx(batch)
    # one window: a sample of 900 requests with coefficient of variation 1
    assert sd[("users32", "throughput")] == pytest.approx(1 / 30)
    assert sd[("users32", "response.mean")] == pytest.approx(1 / 30)


def test_declared_measurement_error_wins(tmp_path):
    experiment = EXPERIMENT.replace(
        'table = "measured.csv"', 'table = "measured.csv"\nmeasurement_error = 0.03'
    )
    _, spec, _ = load_experiment(str(lab(tmp_path, three_runs(), experiment)))
    assert all(f.measurement_error is None for f in spec.figures)
    from sim.studies.calibration.figures import published_figures

    _, spec, records = load_experiment(str(tmp_path))
    figures = published_figures(spec, records, tmp_path / "experiment.toml")
    assert {f.measurement_sd for f in figures} == {0.03} and len(figures) == 6
    assert [f.fitted for f in figures] == [True, True, False, False, False, False]


def test_each_window_is_a_row_and_warmup_drops_the_first(tmp_path):
    experiment = EXPERIMENT.replace(
        'table = "measured.csv"', 'table = "measured.csv"\nwindows = "each"\nwarmup_s = 10'
    )
    _, spec, records = load_experiment(str(lab(tmp_path, three_runs(), experiment)))
    assert [(r["run"], r["window_start_s"]) for r in records] == [
        (run, start) for run in ("users2", "users8", "users16") for start in ("10", "20")
    ]
    assert spec.figures[0].when == {"run": "users2", "window_start_s": "10"}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ("users = 2", "users = 3"),
            "fitted[0] (users = '3') matches no row of measured.csv; its users values: 2, 8, 16",
        ),
        (("users = 2", 'host = "a"'), "fitted[0].host is not a column"),
        (
            ('name = "lab"', 'name = "lab"\nclass = "search"'),
            "class = 'search' is not a class of measured.csv (its classes: total)",
        ),
        (
            ('name = "lab"', 'name = "lab"\nwindows = "all"'),
            "experiment.windows = 'all': must be 'pool' or 'each'",
        ),
        (
            ('name = "lab"', 'name = "lab"\nwarmup_s = "10"'),
            "experiment.warmup_s = '10': must be a valid number",
        ),
        (
            ('name = "lab"', 'name = "lab"\nwarmup_s = 40'),
            "warmup_s = 40 leaves no window of run 'users16'",
        ),
        (
            ('table = "measured.csv"', 'table = "gone.csv"'),
            "gone.csv not found; write it with `tiersim import",
        ),
        (('name = "lab"', 'name = "lab"\npublished = "x.csv"'), "keep one"),
        (
            ("[[fitted]]", '[[figures]]\ncolumn = "latency"\n\n[[fitted]]'),
            "figures[0].column = 'latency' is not a column of measured.csv",
        ),
        (
            ("[[fitted]]", '[[figures]]\ncolumn = "response.p95"\n\n[[fitted]]'),
            "a percentile cannot be pooled",
        ),
        (
            ("[[fitted]]", '[[figures]]\ncolumn = "response.mean"\nscale = 1000\n\n[[fitted]]'),
            "remove scale and offset",
        ),
        ((f'model = "{MODEL}"', 'column = "users"'), "models are chosen by run"),
    ],
)
def test_bad_experiment_names_the_file_the_field_and_the_fix(tmp_path, change, message):
    with pytest.raises(ExperimentError) as caught:
        load_experiment(str(lab(tmp_path, three_runs(), EXPERIMENT.replace(*change))))
    assert message in str(caught.value)
    assert str(tmp_path) in str(caught.value)


@pytest.mark.parametrize(
    "users, message",
    [
        (
            float("nan"),
            "run 'users2' of measured.csv has no users (a JTL records them in allThreads",
        ),
        (7.5, "run 'users2' of measured.csv has 7.5 users (its windows' median)"),
    ],
)
def test_users_of_a_run_must_be_threads(tmp_path, users, message):
    rows = three_runs()
    for row in rows:
        if row["run"] == "users2":
            row["users"] = users
    with pytest.raises(ExperimentError, match=re.escape(message)):
        load_experiment(str(lab(tmp_path, rows, EXPERIMENT.replace("users = 2", "users = 8"))))


def test_simulated_table_calibrates_back_to_its_cores_demand_and_think(tmp_path):
    """A table written from simulated runs of a known model (sim.measurements.simulated) is
    fitted back: the core count chosen among candidates, demand and think time inside their
    intervals, the held-out level inside its prediction interval."""
    from sim.measurements.simulated import rows_from_run
    from sim.model.load import load_model
    from sim.run.replications import run
    from sim.studies.calibration.fit import calibrate
    from sim.studies.choose import calibrate_choosing

    truth = {"backends.0.demand.mean": 0.012, "clients.think.mean": 0.3}
    rows = []
    for users in (2, 10, 20):
        overrides = [f"clients.users={users}", "run.duration_s=20", "run.seed=99"]
        model = load_model(
            MODEL, [*overrides, "backends.0.cores=1", *(f"{k}={v}" for k, v in truth.items())]
        )
        result = run(model, replications=2)
        rows += [r for r in rows_from_run(result, f"users{users}") if r["class"] == "total"]
    experiment = EXPERIMENT.replace("users = 2", "users = 2\n\n[[fitted]]\nusers = 20")
    experiment = experiment.replace('{value}"]', '{value}", "run.duration_s=20"]')
    experiment += textwrap.dedent("""
        [[calibrate]]
        parameter = "clients.think.mean"
        bounds = [0.05, 2.0]

        [[choose]]
        parameter = "backends.0.cores"
        values = [1, 2]
        """)
    # a level nobody measured: its users, no figures (tiersim plan --predict)
    rows.append({"run": "users30", "window_start_s": 0.0, "window_end_s": 0.0, "users": 30.0})
    rows[-1]["class"] = "total"
    folder = lab(tmp_path, rows, experiment)
    fit, choices = calibrate_choosing(str(folder), calibrate, replications=2)
    assert [c["set"] for c in choices if c["chosen"]] == [["backends.0.cores=1"]], choices
    assert fit.converged, fit.message
    for parameter in fit.parameters:
        low, high = parameter["interval"]
        assert low <= truth[parameter["parameter"]] <= high, parameter
    predicted = [r for r in fit.rows if not r.fitted and r.published is not None]
    assert {r.figure.split("#")[0] for r in predicted} == {"users10"}
    for row in predicted:  # the held-out level inside its prediction interval
        assert row.pi_low <= row.published <= row.pi_high, row
    unmeasured = [r for r in fit.rows if r.published is None]
    assert [r.figure for r in unmeasured] == ["users30 throughput", "users30 response.mean"]
    # the true system at the level nobody measured (the known model, 4 replications of 40 s)
    true_model = load_model(
        MODEL,
        [
            "clients.users=30",
            "run.duration_s=40",
            "run.seed=7",
            "backends.0.cores=1",
            *(f"{k}={v}" for k, v in truth.items()),
        ],
    )
    true_at_30 = run(true_model, replications=4).summary
    for row in unmeasured:  # a 90 % interval wider than the simulation's noise alone gives
        # (sampled, as `run --calibration` makes it: the draws' noise is each draw's sd)
        noise_only = 1.6449 * row.sd_noise * row.simulated
        assert row.pi_low < row.simulated < row.pi_high, row
        assert row.sd_parameters > 0 and (row.pi_high - row.pi_low) / 2 > noise_only, row
        metric = row.figure.split(" ")[1]
        assert row.pi_low <= true_at_30[metric].mean <= row.pi_high, (row, true_at_30[metric])


def test_choose_needs_a_table_and_candidates(tmp_path):
    from sim.studies.experiment import parse_experiment

    source = tmp_path / "experiment.toml"
    published = {
        "experiment": {"published": "p.csv", "value_column": "x", "metric": "throughput"},
        "models": {"column": "c"},
    }
    choose = {"parameter": "backends.0.cores", "values": [1, 2]}
    with pytest.raises(ExperimentError, match="needs an experiment on an imported table"):
        parse_experiment({**published, "choose": [choose]}, source)
    table = {"experiment": {"table": "t.csv"}, "models": {"model": "m.toml"}}
    with pytest.raises(ExperimentError, match=re.escape("choose[0].values: required")):
        parse_experiment({**table, "choose": [{"parameter": "backends.0.cores"}]}, source)
    with pytest.raises(ExperimentError, match=re.escape("choose[0].values = []: must have")):
        parse_experiment({**table, "choose": [{**choose, "values": []}]}, source)
    assert parse_experiment({**table, "choose": [choose]}, source).choose[0].values == [1, 2]


def test_response_time_law_gives_each_runs_think_time(tmp_path):
    from click.testing import CliRunner

    from sim.cli import main
    from sim.measurements.laws import run_laws
    from sim.measurements.table import frame

    rows = [window("users8", 8, 0.0, 300, 0.02), window("users8", 8, 10.0, 310, 0.03)]
    (law,) = run_laws(frame(rows))
    x, r = 61.0, (300 * 0.02 + 310 * 0.03) / 610
    assert (law.users, law.throughput, law.completed) == (8.0, x / 2, 610)
    assert law.response_mean_s == pytest.approx(r)
    assert law.think_s == pytest.approx(8 / (x / 2) - r)
    assert run_laws(frame(rows), warmup_s=10)[0].completed == 310
    write(rows, tmp_path / "t.csv")
    # no utilisation column: the law alone, and no error
    result = CliRunner().invoke(main, ["estimate", str(tmp_path / "t.csv")])
    assert result.exit_code == 0, result.output
    assert "think time Z = N/X - R" in result.stdout
    assert f"{8 / (x / 2) - r:.4g}" in result.stdout


def test_plan_writes_an_experiment_from_the_laws(tmp_path):
    from click.testing import CliRunner

    from sim.cli import main
    from sim.studies.calibration.parameters import free_parameters

    write(three_runs(), tmp_path / "t.csv")
    folder = tmp_path / "exp"
    args = ["plan", str(tmp_path / "t.csv"), "--fit", "users2", "--fit", "users16", "-o"]
    result = CliRunner().invoke(main, [*args, str(folder), "--cores", "1,2"])
    assert result.exit_code == 0, result.output
    _, spec, records = load_experiment(str(folder))
    assert [r["run"] for r in records] == ["users2", "users8", "users16"]
    # no --threads: Tomcat's maxThreads is candidates below the heaviest run's 16 users, and 200
    assert [(c.parameter, c.values) for c in spec.choose] == [
        ("backends.0.threads", [4, 8, 200]),
        ("backends.0.cores", [1, 2]),
    ]
    bounds = {p.path: (p.low, p.high) for p in free_parameters(spec, folder / "experiment.toml")}
    r_min = (66 * 0.012 / 0.95 + 70 * 0.012 + 74 * 0.012 / 1.05) / 210  # users2's response
    assert bounds["backends.0.demand.mean"] == pytest.approx((r_min / 20, 1.5 * r_min))
    think = [
        2 / 7.0 - r_min,
        16 / 50.0 - (475 * 0.02 / 0.95 + 500 * 0.02 + 525 * 0.02 / 1.05) / 1500,
    ]
    low, high = bounds["clients.think.mean"]
    assert (low, high) == pytest.approx((sum(think) / 4, sum(think)))
    # no timers: think time 0, not searched
    rows = [
        window(f"users{n}", n, 10.0 * k, round(n / 0.012 * 10), 0.012)
        for n in (2, 8, 16)
        for k in range(3)
    ]
    write(rows, tmp_path / "busy.csv")
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "busy.csv"), *args[2:], str(folder)])
    assert result.exit_code == 0, result.output
    _, spec, _ = load_experiment(str(folder))
    assert "clients.think.mean=0" in spec.factors["users"]["*"]
    assert [c.parameter for c in spec.calibrate] == ["backends.0.demand.mean"]
    predict = ["--predict", "4", "--predict", "32"]
    result = CliRunner().invoke(main, [*args, str(folder), *predict])
    assert result.exit_code == 0, result.output
    _, _, records = load_experiment(str(folder))
    assert [(r["run"], r["users"], r["throughput"]) for r in records][-2:] == [
        ("users16", "16", "50"),
        ("users32", "32", ""),
    ]
    again = CliRunner().invoke(main, [*args, str(folder), "--predict", "8"])
    assert again.exit_code == 3 and "--predict 8: " in again.stderr
    bad = CliRunner().invoke(main, [*args[:4], "--fit", "users3", "-o", str(folder)])
    assert bad.exit_code == 3 and "--fit users3: no run 'users3'" in bad.stderr


def test_choices_are_printed_with_the_chosen_settings():
    from rich.console import Console

    from sim.studies.choose import render

    console = Console(record=True, width=200)
    summaries = [
        {"set": ["backends.0.cores=1"], "cost": 7.4, "parameters": {"d": 0.0116}, "chosen": True},
        {"set": ["backends.0.cores=2"], "cost": 8.9, "parameters": {"d": 0.017}, "close": True},
        {"set": ["backends.0.cores=4"], "cost": None, "error": "unstable", "chosen": False},
    ]
    summaries[1]["chosen"] = False
    summaries[0]["weight"], summaries[1]["weight"] = 0.68, 0.32
    render(summaries, console)
    text = console.export_text()
    assert "[[choose]]: one calibration per candidate" in text
    assert "chosen: --set backends.0.cores=1" in text
    assert "close: not ruled out" in text and "unstable" in text
    assert "backends.0.cores=2 (weight 32%) beside the chosen one (68%)" in text
    assert "carry each by its weight" in text


def test_bad_planner_input_is_one_line_and_an_exit_code(tmp_path):
    from click.testing import CliRunner

    from sim.cli import main

    write(three_runs(), tmp_path / "t.csv")
    runner = CliRunner()
    out = str(tmp_path / "exp")
    cases = [
        (["plan", "/dev/zero", "--fit", "a", "--fit", "b", "-o", out], 3, "not a regular file"),
        (["plan", str(tmp_path / "t.csv"), "--fit", "users2", "-o", out], 3, "name two runs"),
        (
            [
                "plan",
                str(tmp_path / "t.csv"),
                "--fit",
                "users2",
                "--fit",
                "users8",
                "-o",
                out,
                "--cores",
                "one",
            ],
            2,
            "--cores 'one': expected core counts",
        ),
    ]
    for args, code, message in cases:
        result = runner.invoke(main, args)
        assert result.exit_code == code and message in result.stderr, (args, result.output)
        assert "Traceback" not in result.output
    lab(tmp_path, three_runs(), EXPERIMENT.replace("users = 2", "users = 3"))
    result = runner.invoke(main, ["calibrate", str(tmp_path), "--no-cache"])
    assert result.exit_code == 3 and "fitted[0] (users = '3') matches no row" in result.stderr


def test_plan_with_a_shape_splits_computing_from_waiting(tmp_path):
    """--shape: the wait a request thread holds takes the light level's shape (its fixed part
    fitted), the CPU comes from the utilisation law with sar and one --cores, else it is an
    [[unknown]]; the measured percentiles are figures and the p95 is fitted."""
    from click.testing import CliRunner

    from sim.cli import main
    from sim.model.load import load_model
    from sim.studies.calibration.parameters import free_parameters

    data = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning"
    runs = [str(data / f"users{n}.jtl") for n in (2, 8, 16)]
    table = tmp_path / "t.csv"
    cut = ["--warmup", "2", "--until", "38"]
    sar = ["--utilisation", str(data / "sar.sadf.csv")]
    result = CliRunner().invoke(main, ["import", "jtl", *runs, "-o", str(table), *cut, *sar])
    assert result.exit_code == 0, result.output
    args = ["plan", str(table), "--fit", "users2", "--fit", "users16", "--shape", runs[0]]

    folder = tmp_path / "with-sar"
    result = CliRunner().invoke(main, [*args, "-o", str(folder), "--cores", "2", "--threads", "8"])
    assert result.exit_code == 0, result.output
    assert "by the utilisation law" in result.stdout
    _, spec, records = load_experiment(str(folder))
    settings = spec.factors["users"]["*"]
    assert "backends.0.threads=8" in settings and "backends.0.cores=2" in settings
    model = load_model(
        Path(spec.models.files[records[0]["run"]]),
        [s.replace("{value}", "2") for s in settings],
    )
    wait = model.backends[0].io_wait
    assert wait.dist == "lognormal" and wait.offset > 0  # the shape users2's samples have
    # the CPU by the utilisation law: U x 2 cores / X, below the light response
    cpu = model.backends[0].demand.value  # a constant: the shape holds the variation
    light = float(next(r for r in records if r["run"] == "users2")["response.mean"])
    assert 0 < cpu < light
    fitted = {(f.selectors.get("run"), f.figure) for f in spec.fitted}
    assert ("users16", "response.p95") in fitted and ("users2", "response.p95") in fitted
    assert {f.column for f in spec.figures} >= {"response.p50", "response.p95", "response.p99"}
    names = {p.path for p in free_parameters(spec, folder / "experiment.toml")}
    # the time outside the request thread (JMeter, Apache): 0 to all of the host's CPU
    assert names == {"backends.0.io_wait.offset", "clients.think.mean", "proxy.demand.value"}
    (outside,) = spec.unknown
    assert outside.parameter == "proxy.demand.value" and outside.range == [0.0, cpu]

    folder = tmp_path / "unknown-cpu"
    result = CliRunner().invoke(main, [*args, "-o", str(folder), "--threads", "8,200"])
    assert result.exit_code == 0, result.output
    assert "needs its cores" in result.stdout
    _, spec, _ = load_experiment(str(folder))
    assert [c.parameter for c in spec.choose] == ["backends.0.threads", "backends.0.cores"]
    assert [u.parameter for u in spec.unknown] == ["backends.0.demand.value"]

    # the test plan's timer is given, not fitted; a spec the model refuses is one line
    timer = '{dist="uniform", low=0.2, high=0.3}'
    folder = tmp_path / "timer"
    result = CliRunner().invoke(main, [*args, "-o", str(folder), "--think", timer])
    assert result.exit_code == 0, result.output
    _, spec, _ = load_experiment(str(folder))
    assert f"clients.think={timer}" in spec.factors["users"]["*"]
    assert "clients.think.mean" not in {c.parameter for c in spec.calibrate}
    bad = CliRunner().invoke(main, [*args, "-o", str(folder), "--think", '{dist="uniform"}'])
    assert bad.exit_code == 3 and "--think" in bad.stderr and "clients.think" in bad.stderr
