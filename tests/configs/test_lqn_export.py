"""`tiersim export lqn`: the plan's product-form part as an LQN; solved by LINE (the
`line-solver` package) where both it and `tiersim solve` are exact, and checked element by
element against the plan."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from sim.analytic.model_solver import solve_model
from sim.cli import main
from sim.configs.lqn import export_lqn
from sim.model.load import parse_model
from sim.model.plan import compile_plan

ONE_LAYER = {
    "meta": {"name": "one layer"},
    "clients": {"kind": "closed", "users": 20, "think": {"dist": "exponential", "mean": 0.5}},
    "backends": [
        {
            "name": "tomcat",
            "cores": 1,
            "threads": 200,
            "demand": {"dist": "exponential", "mean": 0.03},
        }
    ],
    "run": {"duration_s": 100},
}
LAYERED = {
    "meta": {"name": "front and two nodes"},
    "clients": {"kind": "closed", "users": 20, "think": {"dist": "exponential", "mean": 0.5}},
    "proxy": {
        "mpm": "event",
        "workers": 400,
        "cores": 1,
        "demand": {"dist": "exponential", "mean": 0.002},
    },
    "balancer": {"policy": "random"},
    "backends": [
        {
            "name": "tomcat",
            "count": 2,
            "cores": 2,
            "threads": 150,
            "demand": {"dist": "exponential", "mean": 0.03},
            "io_wait": 0.01,
        }
    ],
    "run": {"duration_s": 100},
}


def exported(data: dict):
    model = parse_model(data, source="<test>")
    plan = compile_plan(model)
    return model, plan, export_lqn(model, plan, name="test")


def test_the_lqn_holds_the_plan():
    """Processors, tasks with their pools, entries with per-visit demands, calls by share."""
    _, _, lqn = exported(LAYERED)
    root = ET.fromstring(lqn.xml.split("-->", 1)[1])
    tasks = {t.get("name"): t for t in root.iter("task")}
    assert tasks["clients"].get("scheduling") == "ref"
    assert (
        tasks["clients"].get("multiplicity") == "20" and tasks["clients"].get("think-time") == "0.5"
    )
    assert tasks["proxy"].get("multiplicity") == "400"
    assert (
        tasks["tomcat1"].get("multiplicity") == "150"
        and tasks["tomcat2"].get("multiplicity") == "150"
    )
    processors = {p.get("name"): p for p in root.iter("processor")}
    assert (
        processors["tomcat1_cpu"].get("multiplicity") == "2"
        and processors["tomcat1_cpu"].get("scheduling") == "ps"
    )
    assert processors["tomcat1_io"].get("scheduling") == "inf"
    activities = {a.get("name"): a for a in root.iter("activity")}
    assert activities["proxy_work"].get("host-demand-mean") == "0.002"
    assert activities["tomcat1_work"].get("host-demand-mean") == "0.03"  # per visit
    assert activities["tomcat1_io_work"].get("host-demand-mean") == "0.01"
    calls = {
        c.get("dest"): c.get("calls-mean") for c in activities["proxy_work"].iter("synch-call")
    }
    assert calls == {"tomcat1": "0.5", "tomcat2": "0.5"}


def test_what_lqn_cannot_say_is_named(tmp_path):
    data = {**LAYERED, "balancer": {"policy": "round_robin", "sticky_session": True}}
    data["clients"] = {**LAYERED["clients"], "keep_alive": True, "timeout_s": 5}
    data["backends"] = [{**LAYERED["backends"][0], "accept_queue": 100}]
    path = tmp_path / "m.toml"
    from sim.configs.draft import Draft, toml_text

    draft = Draft()
    for key, value in _flatten(data):
        draft.values[key] = value
    path.write_text(toml_text(draft, ["test"]))
    result = CliRunner().invoke(main, ["export", "lqn", str(path), "-o", str(tmp_path / "m.lqnx")])
    assert result.exit_code == 0, result.output
    said = result.stderr
    for what in (
        "clients.keep_alive",
        "clients.timeout_s",
        "balancer.sticky_session",
        "accept_queue",
        "round_robin",
    ):
        assert what in said
    text = (tmp_path / "m.lqnx").read_text()
    assert "What LQN cannot say" in text and "clients.timeout_s" in text.split("-->", 1)[0]


def _flatten(data: dict, prefix: str = ""):
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and "dist" not in value:
            yield from _flatten(value, f"{path}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from _flatten(item, f"{path}.{i}.")
        else:
            yield path, value


def line_solution(lqn_xml: str, tmp_path, entry: str, demand_s: float) -> tuple[float, float]:
    """(throughput, response) of `entry` by LINE's layered solver on the exported file."""
    layered = pytest.importorskip("line_solver.layered")
    solvers = pytest.importorskip("line_solver")
    path = tmp_path / "model.lqnx"
    path.write_text(lqn_xml)
    table = solvers.SolverLN(layered.LayeredNetwork.parse_xml(str(path))).getAvgTable().data
    row = table[
        (table.Node.astype(str).str.strip() == entry)
        & (table.NodeType.astype(str).str.strip() == "Entry")
    ].iloc[0]
    # LINE's table rounds Tput for display; the utilisation law gives it in full
    return float(row.Util) / demand_s, float(row.RespT)


def test_line_solves_the_export_as_tiersim_solve_does(tmp_path):
    """One layer (users -> a node on one core): LINE's layered solver and `tiersim solve` are
    both exact MVA there, so they agree to the solvers' convergence tolerance."""
    model, plan, lqn = exported(ONE_LAYER)
    answer = solve_model(model, plan)
    assert answer.exact
    throughput, response = line_solution(lqn.xml, tmp_path, "tomcat1", 0.03)
    assert throughput == pytest.approx(answer.throughput_per_s, rel=1e-6)
    assert response == pytest.approx(answer.response_mean_s, rel=1e-6)


def test_a_from_config_model_exports(tmp_path):
    """The configuration's own model, as `from-config` writes it, exports once the load and
    the demands are given; the pools are the configuration's."""
    from pathlib import Path

    from sim.configs.to_model import Sources, assemble

    directory = (
        Path(__file__).resolve().parents[2]
        / "tests"
        / "fixtures"
        / "configs"
        / "apache24-event-tomcat10"
    )
    text = assemble(
        Sources(httpd=directory / "httpd.conf", tomcat=[(None, directory / "server.xml")])
    ).text
    (tmp_path / "m.toml").write_text(text)
    args = ["export", "lqn", str(tmp_path / "m.toml"), "-o", str(tmp_path / "m.lqnx")]
    args += ["--set", "clients.concurrency=100", "--set", "backends.0.demand.mean=0.01"]
    # placeholders are not zeros: the export refuses until every one is given
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 3 and not (tmp_path / "m.lqnx").exists()
    assert "--set proxy.demand.mean=SECONDS" in refused.stderr
    assert "backends.0.demand.mean" not in refused.stderr  # given
    for given in (
        "proxy.cores=1",
        "proxy.demand.mean=0.0002",
        "backends.0.cores=4",
        "backends.0.io_wait=0",  # said, not assumed: the application waits on nothing
        "clients.kind=ab",
        "clients.requests=10000",
    ):
        args += ["--set", given]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    root = ET.fromstring((tmp_path / "m.lqnx").read_text().split("-->", 1)[1])
    tasks = {t.get("name"): t.get("multiplicity") for t in root.iter("task")}
    assert tasks == {"proxy": "400", "tomcat1": "200", "clients": "100"}
    assert "proxy.start_servers" in result.stderr  # process management: LQN has none


def test_run_and_solve_refuse_a_model_whose_placeholders_are_unfilled(tmp_path):
    """A 0 s demand left as from-config wrote it would be a 0 s response (and solve divided by
    it); each unfilled placeholder is named with the --set that fills it, and an edit of the
    file fills one as well as --set does."""
    from pathlib import Path

    from sim.configs.to_model import Sources, assemble

    directory = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
    directory /= "apache24-event-tomcat10"
    text = assemble(
        Sources(httpd=directory / "httpd.conf", tomcat=[(None, directory / "server.xml")])
    ).text
    model = tmp_path / "m.toml"
    model.write_text(text.replace("cores = 1\n", "cores = 8\n", 1))  # the front's, edited
    for command in (["run", "-r", "1"], ["solve"]):
        result = CliRunner().invoke(main, [command[0], str(model), *command[1:]])
        assert result.exit_code == 3, result.output
        line = result.stderr.strip()
        assert len(line.splitlines()) == 1
        assert f"tiersim {command[0]}" in line or f"main {command[0]}" in line
        assert "--set backends.0.demand.mean=SECONDS" in line
        assert "--set backends.0.cores=N" in line and "proxy.cores" not in line


def test_each_caveat_is_said_once_and_a_stock_connection_limit_is_none():
    """A stock Tomcat NIO connector (acceptCount 100, maxConnections 8192) behind
    a front of 400 workers: the accept queue is named once (the plan's words), and 8192
    connections are no limit "below the threads"; 100 of them (below 150 threads) are, and so
    are 300 (below the 400 workers, which can each open one)."""
    from sim.configs.lqn import unsaid_by_lqn

    data = {**LAYERED, "backends": [{**LAYERED["backends"][0], "accept_queue": 100}]}
    data["backends"][0]["max_connections"] = 8192
    model = parse_model(data, source="<test>")
    said = unsaid_by_lqn(model, compile_plan(model))
    assert sum("backends.0.accept_queue" in line for line in said) == 1
    assert not any(line.startswith("backends.0.max_connections") for line in said)
    data["backends"][0]["max_connections"] = 100
    model = parse_model(data, source="<test>")
    said = unsaid_by_lqn(model, compile_plan(model))
    assert [line for line in said if line.startswith("backends.0.max_connections")] == [
        "backends.0.max_connections = 100: a connection limit below the node's 150 threads"
    ]
    data["backends"][0]["max_connections"] = 300  # above the threads, below the 400 workers
    model = parse_model(data, source="<test>")
    said = unsaid_by_lqn(model, compile_plan(model))
    limit = [line for line in said if line.startswith("backends.0.max_connections")]
    assert limit and "wait in the accept queue" in limit[0]


def test_a_ramp_is_named_not_dropped():
    """The LQN's population is the ramp's peak throughout: said, with the step count."""
    ramp = [{"users": 10, "over_s": 50, "hold_s": 20}, {"users": 20, "over_s": 10}]
    data = {**ONE_LAYER, "clients": {**ONE_LAYER["clients"], "ramp": ramp}}
    _, _, lqn = exported(data)
    said = [line for line in lqn.unsaid if line.startswith("clients.ramp")]
    assert said == [
        "clients.ramp: 2 step(s) in time; the LQN holds the peak, 20 users, throughout "
        "(a steady state has no schedule)"
    ]
    assert "clients.ramp" in lqn.xml  # in the file's comment too
    _, _, steady = exported(ONE_LAYER)
    assert not any(line.startswith("clients.ramp") for line in steady.unsaid)
