"""A replication's fresh tables: the engine takes its zero-filled tables from zeroed pages
(`engine._fresh`) instead of filling them (`kernel.tables.Table.fresh`); each must be the
table the declaration describes, value for value, shape and type, whatever the declaration
says (a table given a fill of its own, or columns of their own value, is filled as before)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.engines.compiled import kernel as k
from sim.engines.compiled.engine import _fresh


@pytest.mark.parametrize("table", k.TABLES, ids=lambda table: table.name)
def test_a_fresh_table_is_the_one_its_declaration_makes(table):
    if table.rows in ("plan", "token"):
        return  # copied from the plan, or a number: never made fresh
    for rows, columns in ((0, 3), (1, 3), (37, 5)):
        made, declared = _fresh(table, rows, columns), table.fresh(rows, columns)
        assert made.shape == declared.shape and made.dtype == declared.dtype, table.name
        # bit for bit: a float 0.0 is +0.0, and a NaN fill compares as itself
        assert np.array_equal(made.view(np.uint8), declared.view(np.uint8)), table.name


def test_the_zeroed_tables_include_the_recorders_histogram_rows():
    """The 11 MB table the change is for takes the zeroed path (not filled as before)."""
    (rows,) = [table for table in k.TABLES if table.name == "HROWS"]
    assert rows.fill == 0 and not rows.fill_columns and not rows.free
