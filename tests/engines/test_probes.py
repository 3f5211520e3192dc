"""Probes own their metrics: what a time series samples is in --json too, each with its unit."""

from __future__ import annotations

import csv
import json

from click.testing import CliRunner

from sim.cli import main

STALL = """
[clients]
kind = "closed"
users = 20
think = 0.5
[proxy]
workers = 20
[proxy.backend_pool]
timeout_s = 2.0
[[backends]]
name = "jetty"
threads = 5
connector = "blocking"
demand = { dist = "exponential", mean = 0.01 }
[run]
duration_s = 20
warmup = "none"
replications = 2
timeseries_interval_s = 1.0
"""


def test_every_time_series_column_is_in_the_json_with_a_unit(tmp_path):
    model = tmp_path / "stall.toml"
    model.write_text(STALL, encoding="utf-8")
    series = tmp_path / "series.csv"
    result = CliRunner().invoke(main, ["run", str(model), "--json", "--timeseries", str(series)])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    with series.open(encoding="utf-8") as handle:
        columns = set(next(csv.reader(handle))) - {"replication", "time"}
    # the seed-001 stall counters among them
    assert {"jetty1.read_timeouts", "jetty1.connections.idle_pinned_now"} <= columns
    assert columns - set(metrics) == set()
    assert {name for name, m in metrics.items() if not m["unit"]} == set()
    assert metrics["jetty1.connections.idle_pinned_now"]["unit"] == "connections"
    assert metrics["proxy.workers.utilization"]["unit"] == "fraction"
