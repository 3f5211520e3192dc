"""A snapshot pair named wrong is refused with the names it should have, in the file's own
extension: `mysql -B` writes tab-separated `RUN.before.tsv`, psql --csv `RUN.before.csv`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sim.measurements.database.importer import import_database
from sim.measurements.errors import MeasurementError

MYSQL = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "mysql" / "levels"


@pytest.mark.parametrize(
    ("names", "message"),
    [
        # the MariaDB fixture's before snapshot alone: its after is a .tsv too
        (["clients1.before.tsv"], "no after snapshot; expected clients1.after.tsv beside it"),
        (["clients1.after.tsv"], "no before snapshot; expected clients1.before.tsv beside it"),
        # a snapshot not named before or after
        (["clients1.tsv"], "named RUN.before.tsv and RUN.after.tsv"),
    ],
)
def test_a_digest_snapshot_named_wrong_names_its_tsv_pair(tmp_path, names, message):
    for name in names:
        kind = "after" if "after" in name or "before" not in name else "before"
        shutil.copy(MYSQL / f"clients1.{kind}.tsv", tmp_path / name)
    with pytest.raises(MeasurementError, match=re.escape(message)) as raised:
        import_database("mysql-digest", [str(tmp_path / n) for n in names], None)
    assert "\n" not in str(raised.value) and ".csv" not in str(raised.value)
