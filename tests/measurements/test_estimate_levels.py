"""`tiersim estimate`: each level's response times with their errors, the shape section, the
warm-up and cool-down cuts, and one line for each bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements import table
from sim.measurements.errors import MeasurementError
from sim.measurements.importer import ImportOptions, import_files
from sim.measurements.levels import level_responses, require
from sim.measurements.sampling import min_samples

pytest.importorskip("pandas")

PLANNING = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "planning"


@pytest.fixture(scope="module")
def planning_table(tmp_path_factory):
    path = tmp_path_factory.mktemp("planning") / "measured.csv"
    files = [str(PLANNING / f"users{n}.jtl") for n in (1, 4, 32)]
    table.write(import_files("jtl", files, ImportOptions()), path)
    return path


def test_levels_carry_their_errors_where_they_have_the_samples(planning_table):
    levels = {level.run: level for level in level_responses(table.read(planning_table))}
    light, heavy = levels["users1"], levels["users32"]
    assert light.samples == 152 and heavy.samples == 2984
    # 152 samples: the mean and p50 have errors (>= 40), p90 (200) and above do not
    assert light.std_errors["response.p50"] > 0
    assert all(
        light.std_errors[f"response.p{p}"] != light.std_errors[f"response.p{p}"]
        for p in (90, 95, 99)
    )
    assert all(heavy.std_errors[f"response.p{p}"] > 0 for p in (50, 90, 95, 99))
    require(heavy, "response.p99", str(planning_table))
    with pytest.raises(MeasurementError) as caught:
        require(light, "response.p95", str(planning_table))
    message = str(caught.value)
    assert message.startswith(f"{planning_table}: run users1: response.p95 rests on 152")
    assert f"needs at least {min_samples(95)}" in message and "a longer run" in message
    assert "\n" not in message


def test_estimate_json_has_responses_and_shape(planning_table, tmp_path):
    csv = tmp_path / "demand.csv"
    result = CliRunner().invoke(
        main,
        [
            "estimate",
            str(planning_table),
            "--shape",
            str(PLANNING / "users1.jtl"),
            "--shape-csv",
            str(csv),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    responses = {r["run"]: r for r in document["responses"]}
    p95 = responses["users32"]["response.p95"]
    assert p95["value"] == pytest.approx(0.342) and p95["std_error"] > 0
    assert responses["users1"]["response.p95"]["std_error"] is None
    shape = document["shape"]
    assert shape["best"]["family"] == "lognormal" and shape["best"]["shifted"]
    assert shape["best"]["demand"]["dist"] == "lognormal"
    assert shape["best"]["offset"] == {"dist": "deterministic", "value": 0.011}
    lines = csv.read_text().split()
    assert lines[0] == "demand_s" and len(lines) == 153


def test_estimate_text_names_the_model_file_spec(planning_table):
    result = CliRunner().invoke(
        main, ["estimate", str(planning_table), "--shape", str(PLANNING / "users1.jtl")]
    )
    assert result.exit_code == 0, result.output
    assert "response times per run" in result.stdout
    assert 'model file: offset = { dist = "deterministic", value = 0.011 }' in result.stdout
    assert 'demand = { dist = "lognormal"' in result.stdout


def test_estimate_warmup_cuts_windows(tmp_path):
    path = tmp_path / "windows.csv"
    rows = import_files("jtl", [str(PLANNING / "users8.jtl")], ImportOptions(window_s=10.0))
    table.write(rows, path)
    whole = level_responses(table.read(path))[0]
    cut = level_responses(table.read(path).pipe(lambda t: t[t["window_start_s"] >= 10]))[0]
    result = CliRunner().invoke(main, ["estimate", str(path), "--warmup", "10", "--json"])
    document = json.loads(result.stdout)
    assert document["responses"][0]["samples"] == cut.samples < whole.samples
    assert document["runs"][0]["completed"] == cut.samples


@pytest.mark.parametrize(
    ("extra", "code", "words"),
    [
        (["--warmup", "20", "--until", "10"], 2, "--until 10 s is not after --warmup 20 s"),
        (["--warmup", "500"], 3, "--warmup 500 s leave no window (the windows span 0 s to"),
        (["--shape", "{empty}"], 3, "success: no sample succeeded"),
        (["--shape", "{short}"], 3, "success: 20 successful samples"),
    ],
)
def test_estimate_bad_input_is_one_line(planning_table, tmp_path, extra, code, words):
    header = "timeStamp,elapsed,label,success\n"
    empty = tmp_path / "down.jtl"
    empty.write_text(header + "".join(f"{1700000000000 + i},5,w,false\n" for i in range(50)))
    short = tmp_path / "short.jtl"
    short.write_text(header + "".join(f"{1700000000000 + i},5,w,true\n" for i in range(20)))
    argv = ["estimate", str(planning_table), *(e.format(empty=empty, short=short) for e in extra)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_an_empty_percentile_says_why(tmp_path):
    """A run imported in several windows has no percentile of the whole run (the windows'
    percentiles do not combine): the cell says n/a and a line under the table says why and how
    to get it, instead of a blank."""
    path = tmp_path / "windows.csv"
    files = [str(PLANNING / f"users{n}.jtl") for n in (4, 32)]
    table.write(import_files("jtl", files, ImportOptions(window_s=10.0)), path)
    result = CliRunner().invoke(main, ["estimate", str(path)])
    assert result.exit_code == 0, result.output
    responses = result.output[result.output.index("response times per run") :]
    assert "n/a" in responses
    assert "percentiles of windows do not make the run's" in responses
    assert "users32" in responses.split("n/a (", 1)[1]


def test_a_table_written_by_hand_without_percentiles_is_read_as_not_saying_them(tmp_path):
    """docs/measurement-table.md: a table may be written by hand, and an empty cell means the
    file does not say.  An aggregate's columns alone (no percentile, no standard error) were an
    internal error (KeyError 'response.p50'); an absent column now reads as empty cells."""
    path = tmp_path / "aggregate.csv"
    path.write_text(
        "run,window_start_s,window_end_s,class,users,throughput,response.mean,count.completed\n"
        "agg,0,100,total,4,20,0.05,2000\n"
    )
    result = CliRunner().invoke(main, ["estimate", str(path)])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line.startswith("  agg ")]
    assert rows[0][1:5] == ["4", "20", "0.05", "0.15"]  # N, X, R, Z = N/X - R
    assert rows[1][:2] == ["agg", "2000"] and "50" in rows[1] and rows[1].count("n/a") == 4
    assert "n/a (agg): the table holds none for this run" in result.output
    document = json.loads(CliRunner().invoke(main, ["estimate", str(path), "--json"]).output)
    assert document["responses"][0]["response.p95"]["value"] is None


def _with_failures(path: Path, every: int) -> Path:
    """users4.jtl with every `every`-th sample answered 503 (success false), as JMeter writes a
    failed sample: the same times and threads, so the users' cycle is unchanged."""
    lines = (PLANNING / "users4.jtl").read_text().splitlines()
    header = lines[0].split(",")
    success, code = header.index("success"), header.index("responseCode")
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        cells = line.split(",")
        if i % every == 0:
            cells[success], cells[code] = "false", "503"
        out.append(",".join(cells))
    path.write_text("\n".join(out) + "\n")
    return path


def test_every_latency_of_estimate_is_shown_beside_its_failed_share(tmp_path):
    """A run of which a quarter failed showed its response times and its think time as if
    nothing had: each table that shows a latency now has the run's failed share beside it, and
    the think time the response-time law gives is said to read high, by f.N/X."""
    failing = _with_failures(tmp_path / "failing4.jtl", every=4)
    path = tmp_path / "measured.csv"
    files = [str(PLANNING / "users4.jtl"), str(failing)]
    table.write(import_files("jtl", files, ImportOptions()), path)
    result = CliRunner().invoke(main, ["estimate", str(path)])
    assert result.exit_code == 0, result.output
    laws, responses = result.output.split("response times per run")
    rows = {line.split()[0]: line.split() for line in laws.splitlines() if line.startswith("  ")}
    assert rows["run"][-1] == "failed" and rows["users4"][-2:] == ["0", "%"]
    sent = len((PLANNING / "users4.jtl").read_text().splitlines()) - 1
    failed = len(range(0, sent, 4))
    share = f"{100 * failed / sent:.1f} %"
    assert " ".join(rows["failing4"][-2:]) == share
    assert f"Z reads high where requests failed (failing4 {share})" in laws
    heads = responses.splitlines()[1].split()
    assert heads[:3] == ["run", "samples", "failed"]
    assert f"{sent - failed} {share.split()[0]} %" in " ".join(responses.split())

    document = json.loads(CliRunner().invoke(main, ["estimate", str(path), "--json"]).output)
    run = {r["run"]: r for r in document["runs"]}
    level = {r["run"]: r for r in document["responses"]}
    for entry in (run["failing4"], level["failing4"]):
        assert entry["failed"] == failed
        assert entry["failed_share"] == pytest.approx(failed / sent, rel=1e-12)
    assert run["users4"]["failed"] == 0 and run["users4"]["failed_share"] == 0
    # the bias said: the failed quarter's time is in neither X nor R, so Z is f.N/X above
    # the think time of the same users' run without failures
    laws_of = {law["run"]: law for law in document["runs"]}
    f, n, x = failed / sent, laws_of["failing4"]["users"], laws_of["failing4"]["throughput"]
    clean_z = laws_of["users4"]["think_s"]
    assert laws_of["failing4"]["think_s"] - clean_z == pytest.approx(f * n / x, rel=0.05)


def test_a_table_that_does_not_say_which_requests_failed_shows_a_dash(tmp_path):
    path = tmp_path / "aggregate.csv"
    path.write_text(
        "run,window_start_s,window_end_s,class,users,throughput,response.mean,count.completed,"
        "count.errors,count.timed_out\n"
        "agg,0,100,total,4,20,0.05,2000,,\n"
    )
    result = CliRunner().invoke(main, ["estimate", str(path)])
    assert result.exit_code == 0, result.output
    assert "failed '-' (agg): the file does not say which requests failed" in result.output
    assert "Z reads high" not in result.output
    document = json.loads(CliRunner().invoke(main, ["estimate", str(path), "--json"]).output)
    assert document["runs"][0]["failed"] is None and document["responses"][0]["failed"] is None
