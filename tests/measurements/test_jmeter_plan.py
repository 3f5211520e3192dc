"""`tiersim plan --jmx`: a JMeter test plan's thread groups and the think time its timers add,
as JMeter draws them (org.apache.jmeter.timers: Constant, Uniform, Gaussian, Poisson), read
from plans JMeter ran (tests/fixtures/measurements/jmeter/plan.jmx, the planning-pool test's
make_plan.py) and from small plans in JMeter's own element format."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.errors import MeasurementError
from sim.measurements.formats import jmeter_plan
from sim.measurements.formats.jmeter_timers import Timer, think, total

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_PLAN = ROOT / "tests" / "fixtures" / "measurements" / "jmeter" / "plan.jmx"
POOL = ROOT / "notebooks" / "data" / "planning-pool"


def timer(kind: str, delay: object, spread: object = None, enabled: str = "true") -> str:
    spread_prop = (
        f'<stringProp name="RandomTimer.range">{spread}</stringProp>' if spread is not None else ""
    )
    return (
        f'<{kind} guiclass="{kind}Gui" testclass="{kind}" testname="t{delay}" enabled="{enabled}">'
        f'<stringProp name="ConstantTimer.delay">{delay}</stringProp>{spread_prop}</{kind}>'
        "<hashTree/>"
    )


def sampler(name: str, inside: str = "") -> str:
    return (
        f'<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" '
        f'testname="{name}" enabled="true"><stringProp name="HTTPSampler.path">/{name}</stringProp>'
        f"</HTTPSamplerProxy><hashTree>{inside}</hashTree>"
    )


def group(
    body: str, name: str = "users", threads: str = "8", ramp: str = "0", tag="ThreadGroup"
) -> str:
    return (
        f'<{tag} guiclass="ThreadGroupGui" testclass="{tag}" testname="{name}" enabled="true">'
        '<elementProp name="ThreadGroup.main_controller" elementType="LoopController">'
        '<intProp name="LoopController.loops">-1</intProp></elementProp>'
        f'<stringProp name="ThreadGroup.num_threads">{threads}</stringProp>'
        f'<stringProp name="ThreadGroup.ramp_time">{ramp}</stringProp>'
        '<boolProp name="ThreadGroup.scheduler">true</boolProp>'
        '<stringProp name="ThreadGroup.duration">60</stringProp>'
        f"</{tag}><hashTree>{body}</hashTree>"
    )


def plan(tmp_path: Path, *groups: str, head: str = "") -> Path:
    path = tmp_path / "plan.jmx"
    path.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>{head}'
        '<jmeterTestPlan version="1.2" properties="2.8" jmeter="2.13"><hashTree>'
        '<TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="p" enabled="true"/>'
        f"<hashTree>{''.join(groups)}</hashTree></hashTree></jmeterTestPlan>"
    )
    return path


# --- plans JMeter ran ---------------------------------------------------------------------


def test_the_fixture_plan_jmeter_ran():
    read = jmeter_plan.read(FIXTURE_PLAN)
    static, search = read.groups
    assert (static.name, static.threads.number, static.ramp_up_s.number) == ("static", 2, 0)
    assert static.samplers == ["home", "download", "profile"]
    assert static.duration_s.number == 20 and static.loops.number == -1
    assert (search.threads.number, search.ramp_up_s.number) == (4, 16)
    assert static.think(FIXTURE_PLAN).spec == {"dist": "deterministic", "value": 0.25}
    assert search.think(FIXTURE_PLAN).spec == {"dist": "deterministic", "value": 0.15}
    assert read.unknown == [] and static.unknown == []


def test_the_planning_pool_plan_is_uniform_400_to_600_ms(tmp_path):
    text = subprocess.run(
        [sys.executable, str(POOL / "setup" / "make_plan.py"), "20", "120"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = tmp_path / "plan20.jmx"
    path.write_text(text)
    (users,) = jmeter_plan.read(path).groups
    assert users.threads.number == 20 and users.duration_s.number == 120
    found = users.think(path)
    assert found.spec == {"dist": "uniform", "low": 0.4, "high": 0.6}
    assert found.mean_s == pytest.approx(0.5) and found.sd_s == pytest.approx(0.2 / 12**0.5)


# --- JMeter's timers, exactly -------------------------------------------------------------


def jmeter_draws(kind: str, delay: int, spread: float, n: int, rng) -> np.ndarray:
    """JMeter's delay() formulas (org.apache.jmeter.timers), drawn with numpy."""
    if kind == "UniformRandomTimer":
        return np.floor(np.abs(rng.random(n) * spread + delay))
    if kind == "GaussianRandomTimer":
        return np.floor(np.abs(rng.standard_normal(n) * spread + delay))
    return np.abs(rng.poisson(round(spread), n) + delay)


@pytest.mark.parametrize(
    ("kind", "delay", "spread"),
    [
        ("UniformRandomTimer", 400, 200.0),
        ("UniformRandomTimer", 0, 7.5),
        ("GaussianRandomTimer", 300, 100.0),
        ("GaussianRandomTimer", 20, 100.0),  # folded at zero
        ("PoissonRandomTimer", 100, 300.0),
        ("PoissonRandomTimer", 0, 12.0),
    ],
)
def test_each_timers_law_is_the_one_jmeter_draws(kind, delay, spread):
    """The exact pmf against 200 000 draws of JMeter's formula: the mean inside 4 standard
    errors, the CDF inside the Dvoretzky-Kiefer-Wolfowitz band at 1e-6."""
    n = 200_000
    draws = jmeter_draws(kind, delay, spread, n, np.random.default_rng(20261127))
    pmf = Timer(kind, "t", delay, spread, 1).pmf()
    grid = np.arange(len(pmf))
    mean = float((grid * pmf).sum())
    sd = float(np.sqrt((grid**2 * pmf).sum() - mean**2))
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(n)
    empirical = np.searchsorted(np.sort(draws), grid, side="right") / n
    band = np.sqrt(np.log(2 / 1e-6) / (2 * n))
    assert np.max(np.abs(empirical - np.cumsum(pmf))) < band


def test_timers_in_one_scope_add_up_and_samplers_share_the_pause():
    constant = Timer("ConstantTimer", "c", 200, 0.0, 1)
    gauss = Timer("GaussianRandomTimer", "g", 300, 50.0, 2)
    summed = total([constant, gauss])
    grid = np.arange(len(summed))
    assert (grid * summed).sum() == pytest.approx(200 + 299.5, abs=0.01)  # floor: -0.5 ms
    # two samplers, one with 100 ms and one with 300 ms before it: half the pauses each
    mixed = think(
        [[Timer("ConstantTimer", "a", 100, 0, 1)], [Timer("ConstantTimer", "b", 300, 0, 2)]], "x"
    )
    assert mixed.spec["dist"] == "empirical" and mixed.mean_s == pytest.approx(0.2)
    assert sorted(set(mixed.spec["samples"])) == [0.1, 0.3]
    assert mixed.spec["samples"].count(0.1) == 100


def test_an_empirical_think_keeps_the_exact_mean_and_spread():
    found = think([[Timer("GaussianRandomTimer", "g", 300, 100.0, 1)]], "x")
    values = np.array(found.spec["samples"])
    assert found.spec["dist"] == "empirical" and len(values) == 200
    assert values.mean() == pytest.approx(found.mean_s, rel=0.01)
    assert values.std() == pytest.approx(found.sd_s, rel=0.05)
    assert found.mean_s == pytest.approx(0.2995, abs=1e-4) and found.sd_s == pytest.approx(
        0.1, rel=0.01
    )


# --- scope, properties and what the plan does not say -------------------------------------


def test_a_timers_scope_is_its_tree_and_a_disabled_timer_is_left_out(tmp_path):
    body = (
        timer("ConstantTimer", 100)
        + timer("ConstantTimer", 5000, enabled="false")
        + sampler("a", timer("UniformRandomTimer", 0, 50))  # a's alone
        + sampler("b")
    )
    path = plan(tmp_path, group(body))
    (users,) = jmeter_plan.read(path).groups
    assert [[t.kind for t in ts] for ts in users.timers] == [
        ["ConstantTimer", "UniformRandomTimer"],
        ["ConstantTimer"],
    ]
    assert users.think(path).mean_s == pytest.approx((0.1 + 0.1245) / 2, abs=1e-4)


def test_a_property_is_read_as_its_default_and_a_variable_is_refused(tmp_path):
    path = plan(
        tmp_path, group(sampler("a") + timer("ConstantTimer", 250), threads="${__P(users,10)}")
    )
    (users,) = jmeter_plan.read(path).groups
    assert users.threads.number == 10 and "-Jusers=" in users.threads.note
    path = plan(tmp_path, group(sampler("a") + timer("ConstantTimer", "${think}")))
    with pytest.raises(MeasurementError, match=r"ConstantTimer.delay = '\$\{think\}'.*--think"):
        jmeter_plan.read(path)


def test_unknown_timers_and_thread_groups_are_named(tmp_path):
    throughput = (
        '<ConstantThroughputTimer guiclass="TestBeanGUI" testclass="ConstantThroughputTimer" '
        'testname="pace" enabled="true"/><hashTree/>'
    )
    path = plan(
        tmp_path,
        group(sampler("a") + throughput),
        group(sampler("b"), name="steps", tag="kg.apc.jmeter.threads.SteppingThreadGroup"),
    )
    read = jmeter_plan.read(path)
    assert read.groups[0].unknown == ["ConstantThroughputTimer 'pace' (line 1)"]
    assert read.unknown == ["kg.apc.jmeter.threads.SteppingThreadGroup 'steps' (line 1)"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '<?xml version="1.0"?><!DOCTYPE j [<!ENTITY a "aaaa">]><jmeterTestPlan/>',
            "a DOCTYPE (entity declarations are refused)",
        ),
        ("<jmeterTestPlan><hashTree>", "not well-formed XML"),
        ("<project/>", "expected <jmeterTestPlan>"),
        ("<jmeterTestPlan><hashTree/></jmeterTestPlan>", "no enabled thread group"),
    ],
)
def test_a_bad_plan_is_one_line(tmp_path, text, message):
    path = tmp_path / "bad.jmx"
    path.write_text(text)
    with pytest.raises(MeasurementError, match=re.escape(message)) as raised:
        jmeter_plan.read(path)
    assert "\n" not in str(raised.value)


# --- tiersim plan --jmx -------------------------------------------------------------------


def plan_command(tmp_path, *extra):
    return CliRunner().invoke(
        main,
        [
            "plan",
            str(POOL / "measured.csv"),
            "--fit",
            "users10",
            "--fit",
            "users60",
            "-o",
            str(tmp_path / "exp"),
            *extra,
        ],
    )


def test_plan_takes_the_think_time_from_the_test_plan(tmp_path):
    path = plan(
        tmp_path, group(sampler("work") + timer("GaussianRandomTimer", 500, 100), ramp="16")
    )
    result = plan_command(tmp_path, "--jmx", str(path))
    assert result.exit_code == 0, result.output
    assert "Gaussian 500 ± 100 ms" in result.output and "--warmup 16" in result.output
    experiment = tomllib.loads((tmp_path / "exp" / "experiment.toml").read_text())
    settings = experiment["factors"]["users"]["*"]
    (spec,) = [s for s in settings if s.startswith("clients.think=")]
    think_spec = tomllib.loads("think = " + spec.split("=", 1)[1])["think"]
    assert think_spec["dist"] == "empirical" and len(think_spec["samples"]) == 200
    assert not any(c["parameter"] == "clients.think.mean" for c in experiment.get("calibrate", []))


def test_plan_refuses_what_the_test_plan_cannot_say(tmp_path):
    result = plan_command(tmp_path, "--jmx", str(FIXTURE_PLAN))
    assert result.exit_code == 2 and "give --jmx-group NAME" in result.output
    result = plan_command(tmp_path, "--jmx", str(FIXTURE_PLAN), "--jmx-group", "search")
    assert result.exit_code == 0, result.output
    assert "Constant 150 ms" in result.output
    result = plan_command(tmp_path, "--jmx", str(FIXTURE_PLAN), "--jmx-group", "nope")
    assert result.exit_code == 2 and "'static', 'search'" in result.output
    result = plan_command(tmp_path, "--jmx", str(FIXTURE_PLAN), "--think", "0.5")
    assert result.exit_code == 2 and "give one" in result.output
    result = plan_command(tmp_path, "--jmx-group", "search")
    assert result.exit_code == 2 and "give the plan" in result.output
