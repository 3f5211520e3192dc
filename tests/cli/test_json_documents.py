"""`--json` documents are strict JSON: a value that is not a number is written as null and
named, never Python's `NaN` (which `jq` and JavaScript refuse) nor a traceback; and `calibrate`
refuses one replication, which gives its figures no interval."""

from __future__ import annotations

import json
import math

import numpy as np
from click.testing import CliRunner

from sim.cli import main
from sim.exit_codes import ExitCode
from sim.present.json_text import json_text, unknown_note


def strict(text: str):
    """json.loads that refuses NaN and Infinity, as a strict reader does."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} in a JSON document")

    return json.loads(text, parse_constant=refuse)


def test_values_that_are_not_numbers_are_null_and_named():
    document = {
        "rows": [
            {"simulated": 0.25, "ci_low": math.nan, "ci_high": np.float64("nan")},
            {"simulated": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        ],
        "choices": [{"cost": math.inf, "residuals": [(0.1, -math.inf)]}],
        "name": "users10",
        "converged": True,
        "count": 3,
    }
    text, unknown = json_text(document)
    parsed = strict(text)
    assert parsed["rows"][0] == {"simulated": 0.25, "ci_low": None, "ci_high": None}
    assert parsed["rows"][1] == {"simulated": 0.5, "ci_low": 0.4, "ci_high": 0.6}
    assert parsed["choices"][0] == {"cost": None, "residuals": [[0.1, None]]}
    assert parsed["name"] == "users10" and parsed["converged"] is True and parsed["count"] == 3
    assert unknown == [
        "rows.0.ci_low",
        "rows.0.ci_high",
        "choices.0.cost",
        "choices.0.residuals.0.1",
    ]
    note = unknown_note(unknown, "no interval from one replication", shown=2)
    assert note == (
        "4 values not known, written as null (rows.0.ci_low, rows.0.ci_high and 2 more): "
        "no interval from one replication"
    )
    assert unknown_note([], "anything") is None


def test_calibrate_refuses_one_replication_in_one_line(tmp_path):
    """`calibrate -r 1 --json` ended in "Out of range float values are not JSON compliant:
    nan" after the whole fit: the rows' intervals and the [[choose]] candidates' scores need
    a simulated figure's noise, which one replication cannot give."""
    result = CliRunner().invoke(
        main,
        ["calibrate", str(tmp_path / "experiment"), "-r", "1", "--max-evaluations", "1", "--json"],
    )
    assert result.exit_code == ExitCode.USAGE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "calibrate -r 1" in lines[0] and "give -r 2 or more" in lines[0]
    assert result.stdout == ""
