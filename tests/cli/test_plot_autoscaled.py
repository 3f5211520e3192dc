"""`tiersim plot --autoscaled GROUP`: an autoscaled group's replicas and ready nodes beside the
load, from a `tiersim run --timeseries` file, and one line for a group the file does not have."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli import main
from sim.present.plots import read_timeseries

# tests/tiers/test_elastic_group.py's exact scale-up: an arrival every 0.3 s, web2 asked for at
# 15 s and ready at 50 s
MODEL = """
[clients]
kind = "open"
interarrival = 0.3
[[backends]]
name = "web"
count = 1
cores = 1
threads = 10
demand = 0.01
[backends.autoscale]
metric = "pods"
target = 1.5
max_replicas = 2
provisioning_s = 5
jvm_start_s = 25
readiness_period_s = 10
[run]
duration_s = 60.0
warmup = 0.0
replications = 1
"""


def test_the_replicas_are_drawn_beside_the_load(tmp_path):
    (tmp_path / "elastic.toml").write_text(MODEL)
    series, page = tmp_path / "ts.csv", tmp_path / "nodes.html"
    ran = CliRunner().invoke(
        main, ["run", str(tmp_path / "elastic.toml"), "--timeseries", str(series)]
    )
    assert ran.exit_code == 0, ran.output
    drawn = CliRunner().invoke(main, ["plot", str(series), "--autoscaled", "web", "-o", str(page)])
    assert drawn.exit_code == 0, drawn.output
    html = page.read_text()
    assert "web: nodes and load" in html
    for trace in ("web.autoscale.replicas", "web.autoscale.ready", "load: requests arrived"):
        assert trace in html
    # what the figure draws: web2 asked for at 15 s, ready at 50 s; one arrival every 0.3 s
    columns = read_timeseries(series)
    asked = [t for t, n in zip(columns["time"], columns["web.autoscale.replicas_now"]) if n == 2]
    ready = [t for t, n in zip(columns["time"], columns["web.autoscale.ready_now"]) if n == 2]
    assert 15 <= min(asked) < 20 and 50 <= min(ready) < 55
    assert sum(columns["count.arrived"]) == 200  # arrivals at 0.3, 0.6, ..., 60.0


def test_a_group_the_file_does_not_have_is_named_with_those_it_has(tmp_path):
    (tmp_path / "elastic.toml").write_text(MODEL)
    series = tmp_path / "ts.csv"
    CliRunner().invoke(main, ["run", str(tmp_path / "elastic.toml"), "--timeseries", str(series)])
    out = CliRunner().invoke(
        main, ["plot", str(series), "--autoscaled", "app", "-o", str(tmp_path / "x.html")]
    )
    assert out.exit_code == 3
    message = out.stderr.strip()
    assert "\n" not in message and "autoscaled groups in it: web" in message
    both = CliRunner().invoke(
        main,
        ["plot", str(series), "--autoscaled", "web", "-c", "count.arrived", "-o", "x.html"],
    )
    assert both.exit_code == 2 and "not both" in both.stderr
