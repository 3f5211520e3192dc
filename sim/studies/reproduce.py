"""`tiersim reproduce NAME`: run an experiment's published table and set simulated beside published.

An experiment is a folder `experiments/NAME/` with `experiment.toml` (how each row of the
published CSV maps onto a model file and parameter overrides), the model files, and the
published CSV.  A row may carry several figures (`[[figures]]`: a CSV column, the simulated
metric compared to it, and optionally `when`, the column values of the rows it applies to).
Every row is simulated with the model's replications; the row reports the
published figure, the simulated mean and interval, the relative error, whether the published
yes/no flag (e.g. "client timeouts") matches, and whether the row was used to fit a parameter
(`fitted`): errors on fitted rows are not predictions.
"""

from __future__ import annotations

from sim.studies.rows import Row, render_rows, simulate_rows


def reproduce(name: str, replications: int | None = None, progress=None, map_=map) -> list[Row]:
    """Every mapped row of the experiment's table, simulated with the model files' values."""
    return simulate_rows(name, replications=replications, progress=progress, map_=map_)


def render(rows: list[Row], console) -> None:
    render_rows(rows, console)
