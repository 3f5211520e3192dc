"""A sweep's results directory that cannot be made: one line and exit 2, not an internal
NotADirectoryError (a path through a file, as /dev/null/x is)."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli import main
from tests.hostile.test_interrupts import sweep_file


def test_a_results_directory_through_a_file(tmp_path):
    (tmp_path / "a-file").write_text("not a folder\n")
    results = tmp_path / "a-file" / "results"
    result = CliRunner().invoke(
        main, ["sweep", str(sweep_file(tmp_path)), "--serial", "-o", str(results)]
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"error: {results}: cannot make the results directory (Not a directory); give another "
        "(--results)"
    ], result.stderr
