"""`tiersim plan` with a traced run: the per-tier table `tiersim import otel` writes beside the
table (or given with `--tiers`) places the demands tier by tier: the front's time is
`proxy.demand`, the application server's own time bounds the CPU demand's search, the JDBC
calls' time is the wait the request thread holds; on the real trace of tests/fixtures (a front
proxy before an application calling SQLite, 3 client threads)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.table import write

pytest.importorskip("pandas")

TRACE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "otel" / "trace.jsonl.gz"
)
THREADS = 3  # the fixture's driver: 3 client threads (its README); a trace records no users


def imported(path: Path, *args: str) -> Path:
    path.parent.mkdir(exist_ok=True)
    result = CliRunner().invoke(main, ["import", "otel", str(TRACE), "-o", str(path), *args])
    assert result.exit_code == 0, result.output
    return path


def traced_table(tmp_path: Path) -> Path:
    """The trace as two runs at 3 users: the whole (`users3`, its per-tier table beside the
    table) and its second half (`late`), the users the driver ran filled in."""
    table = imported(tmp_path / "in" / "measured.csv", "--run", "users3")
    late = imported(tmp_path / "late.csv", "--run", "late", "--warmup", "3.5")
    both = pd.concat([pd.read_csv(table), pd.read_csv(late)])
    both["users"] = float(THREADS)
    write(both.to_dict(orient="records"), table)
    return table


def plan(table: Path, out: Path, *extra: str):
    args = ["plan", str(table), "--fit", "users3", "--fit", "late", "-o", str(out)]
    return CliRunner().invoke(main, [*args, "--threads", "8", *extra])


def distribution(settings: list[str], path: str) -> dict:
    (setting,) = [s for s in settings if s.startswith(f"{path}=")]
    return tomllib.loads("value = " + setting.split("=", 1)[1])["value"]


def test_the_trace_places_each_tiers_demand(tmp_path):
    table = traced_table(tmp_path)
    tiers = pd.read_csv(table.with_name("measured.tiers.csv"))
    rows = tiers[(tiers["run"] == "users3") & (tiers["class"] == "total")].set_index("tier")
    front, app = rows.loc["front", "time_per_request_s"], rows.loc["app", "time_per_request_s"]
    waits = rows.drop(index=["front", "app"])["time_per_request_s"].sum()
    assert rows.loc["database", "time_per_request_s"] > 0 and waits > 0

    out = tmp_path / "exp"
    result = plan(table, out)
    assert result.exit_code == 0, result.output
    (said,) = [line for line in result.stdout.splitlines() if "per-tier time" in line]
    assert "users3" in said and "database" in said and "calls of" in said
    spec = tomllib.loads((out / "experiment.toml").read_text())
    settings = spec["factors"]["users"]["*"]
    assert distribution(settings, "proxy.demand") == {
        "dist": "exponential",
        "mean": pytest.approx(front),
    }
    assert distribution(settings, "backends.0.io_wait") == {
        "dist": "exponential",
        "mean": pytest.approx(waits),
    }
    (demand,) = [c for c in spec["calibrate"] if c["parameter"] == "backends.0.demand.mean"]
    assert demand["bounds"] == pytest.approx([app / 20, app * 1.5])  # not the whole response


def test_with_a_shape_the_cpu_range_is_the_servers_own_time(tmp_path):
    table = traced_table(tmp_path)
    tiers = pd.read_csv(table.with_name("measured.tiers.csv"))
    rows = tiers[(tiers["run"] == "users3") & (tiers["class"] == "total")].set_index("tier")
    app = rows.loc["app", "time_per_request_s"]
    shape = ["--shape", str(TRACE), "--shape-format", "otel"]
    result = plan(table, tmp_path / "exp", *shape)
    assert result.exit_code == 0, result.output
    spec = tomllib.loads((tmp_path / "exp" / "experiment.toml").read_text())
    (cpu,) = [u for u in spec["unknown"] if u["parameter"] == "backends.0.demand.value"]
    measured = pd.read_csv(table).set_index(["run", "class"])
    light = measured.loc[("users3", "total"), "response.mean"]
    assert cpu["range"] == pytest.approx([0.01 * app, min(app, 0.9 * light)])
    assert "trace" in cpu["provenance"]
    settings = spec["factors"]["users"]["*"]
    assert distribution(settings, "proxy.demand")["mean"] == pytest.approx(
        rows.loc["front", "time_per_request_s"]
    )
    # the wait is the samples' shape, which holds the database's calls already
    assert "offset" in distribution(settings, "backends.0.io_wait")


def test_a_trace_of_another_run_is_refused_when_given_and_said_when_beside(tmp_path):
    table = traced_table(tmp_path)
    other = imported(tmp_path / "trace.csv")  # run "trace", the file's stem
    result = plan(table, tmp_path / "exp", "--tiers", str(other.with_name("trace.tiers.csv")))
    assert result.exit_code == 3, result.output
    message = result.output.strip()
    assert "no run 'users3' (its runs: trace)" in message and "--run users3" in message
    assert "\n" not in message

    stale = table.with_name("measured.tiers.csv")
    stale.write_text(other.with_name("trace.tiers.csv").read_text())
    result = plan(table, tmp_path / "exp")
    assert result.exit_code == 0, result.output
    assert "the per-tier table beside the table is left out" in result.stdout
    spec = tomllib.loads((tmp_path / "exp" / "experiment.toml").read_text())
    assert not any(s.startswith("proxy.demand=") for s in spec["factors"]["users"]["*"])


def test_a_run_without_users_is_said_to_lack_them_not_to_be_missing(tmp_path):
    table = imported(tmp_path / "measured.csv", "--run", "users3")  # a trace names no users
    result = plan(table, tmp_path / "exp")
    assert result.exit_code == 3, result.output
    message = result.output.strip()
    assert "run 'users3'" in message and "records no users" in message and "\n" not in message
    assert "no run 'users3'" not in message


def test_the_api_takes_the_per_tier_table_as_plan_does(tmp_path):
    """`sim.plan_experiment(..., tiers=)` is `tiersim plan --tiers`: the same experiment lines
    from a per-tier table named anywhere (here moved away from the table), and a path that
    is not a file refused with the parameter named."""
    import sim
    from sim.api.arguments import ArgumentError

    table = traced_table(tmp_path)
    elsewhere = tmp_path / "traces" / "users3.tiers.csv"
    elsewhere.parent.mkdir()
    table.with_name("measured.tiers.csv").rename(elsewhere)
    found = sim.plan_experiment(
        table, ["users3", "late"], tmp_path / "api", threads=8, tiers=elsewhere
    )
    assert "per-tier time" in found["tiers"] and "users3" in found["tiers"]
    result = plan(table, tmp_path / "cli", "--tiers", str(elsewhere))
    assert result.exit_code == 0, result.output
    api = tomllib.loads((tmp_path / "api" / "experiment.toml").read_text())
    cli = tomllib.loads((tmp_path / "cli" / "experiment.toml").read_text())
    assert api["factors"] == cli["factors"] and api["calibrate"] == cli["calibrate"]
    with pytest.raises(ArgumentError, match="tiers"):
        sim.plan_experiment(table, ["users3"], tmp_path / "bad", threads=8, tiers=123)
