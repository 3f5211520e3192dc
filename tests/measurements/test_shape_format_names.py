"""`--shape-format` takes the names `tiersim import` gives the per-sample files, in `estimate`
and `plan` alike (`sim.measurements.format_names`): each is read for a shape from a real file of
its tool, and a name that gives no time per request is one line saying why and naming the
valid ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.format_names import FORMATS, SHAPE_FORMATS

pytest.importorskip("pandas")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"
FILES = {
    "jtl": FIXTURES / "jmeter" / "run.jtl",
    "ab-gnuplot": FIXTURES / "ab" / "ab_home.tsv",
    "k6": FIXTURES / "k6" / "run.ndjson.gz",
    "gatling": FIXTURES / "gatling" / "simulation.log",
    "otel": FIXTURES / "otel" / "trace.jsonl.gz",
}
VALID = "expected one of jtl, ab-gnuplot, k6, gatling, otel"


def test_every_shape_format_is_an_import_format_with_a_real_file():
    assert set(SHAPE_FORMATS) <= set(FORMATS)
    assert set(FILES) == set(SHAPE_FORMATS)


@pytest.mark.parametrize("name", SHAPE_FORMATS)
def test_the_import_name_reads_the_same_samples_for_the_shape(tmp_path, name):
    table = tmp_path / "measured.csv"
    path = str(FILES[name])
    imported = CliRunner().invoke(main, ["import", name, path, "-o", str(table)])
    assert imported.exit_code == 0, imported.output
    args = ["estimate", str(table), "--shape", path, "--shape-format", name, "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    (level,) = document["responses"]
    # the successful requests the import counted are the samples the shape was fitted to
    assert document["shape"]["samples"] == level["samples"] > 0


@pytest.mark.parametrize(
    "name, why",
    [
        ("accesslog", "not a format tiersim imports"),
        ("ab", "ab -g writes them: ab-gnuplot"),
        ("locust", "a locust file is an aggregate"),
        ("k6-summary", "k6 --out json writes them: k6"),
        ("access-log", "LogFormat"),
        ("pg-log", "the database's evidence"),
    ],
)
@pytest.mark.parametrize("command", ["plan", "estimate"])
def test_a_name_without_per_request_times_is_one_line(tmp_path, command, name, why):
    table = tmp_path / "measured.csv"
    table.write_text("run\n")
    args = [command, str(table), "--shape", str(FILES["jtl"]), "--shape-format", name]
    if command == "plan":
        args += ["--fit", "a", "--fit", "b", "-o", str(tmp_path / "exp")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith(f"error: --shape-format {name!r}:") and "\n" not in message
    assert why in message and VALID in message
