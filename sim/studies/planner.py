"""`tiersim plan TABLE --fit RUN --fit RUN -o FOLDER`: an experiment folder for the planner's
path, written from an imported load test by the operational laws alone.

The folder gets the table (`measured.csv`) and an `experiment.toml` on it: the template model
(`models/planner-apache-tomcat.toml` unless `--model`), each run's users as the model's
`clients.users`, `throughput` and `response.mean` as figures, the two (or more) runs to fit,
`[[choose]]` over the candidate core counts, and the free parameters with search ranges the
laws give on the fitted runs:

* the think time by the response-time law, Z = N/X - R (their mean), searched from Z/2 to 2Z;
  a test with no timers (Z under a millisecond) gets think time 0 and no search;
* the demand per request: at most the lightest fitted run's response time R_min (a request
  alone waits for nobody: R = D at one user, more with any queueing), searched from
  R_min/20 to 1.5 R_min (the margin is for the measurement's own noise).

Nothing is set to meet a figure: the ranges only place the search, and `tiersim calibrate`
fits within them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sim.studies.experiment import ExperimentError

TEMPLATE = Path(__file__).resolve().parents[2] / "models" / "planner-apache-tomcat.toml"
CORES = (1, 2, 4, 8)
NO_THINK_S = 0.001
TABLE_NAME = {"csv": "measured.csv", "parquet": "measured.parquet"}


def scaffold(
    table_path: str | Path,
    fit: list[str],
    folder: str | Path,
    model: str | Path = TEMPLATE,
    cores: tuple[int, ...] = CORES,
    warmup_s: float = 0.0,
    duration_s: float | None = None,
    predict: tuple[int, ...] = (),
) -> dict:
    """Write the experiment folder; returns what was estimated (runs, think, demand).
    `predict`: user counts to predict that no run measured; each becomes a run `usersN` of the
    copied table with its users and no figures (withheld: predicted with an interval, never
    scored)."""
    from sim.measurements.laws import run_laws
    from sim.measurements.table import read, table_format

    table = read(table_path)
    laws = {law.run: law for law in run_laws(table, warmup_s)}
    if len(fit) < 2:
        raise ExperimentError(
            "--fit: name two runs (or more) to fit, e.g. --fit users2 --fit users16: one light, "
            "one heavy; the other runs are predicted"
        )
    missing = [run for run in fit if run not in laws]
    if missing:
        raise ExperimentError(
            f"--fit {missing[0]}: no run {missing[0]!r} with users, throughput and response time "
            f"in {table_path} (its runs: {', '.join(laws) or 'none'})"
        )
    if not cores or any(c < 1 for c in cores):
        raise ExperimentError(f"--cores {cores}: expected core counts >= 1, e.g. 1,2,4,8")
    chosen = [laws[run] for run in fit]
    think_s = sum(law.think_s for law in chosen) / len(chosen)
    lightest = min(chosen, key=lambda law: law.users)
    demand_s = lightest.response_mean_s
    model_path = Path(model).resolve()
    if not model_path.is_file():
        raise ExperimentError(f"--model {model}: no such model file")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    name = TABLE_NAME[table_format(table_path)]
    if predict:
        _with_levels(table, predict, warmup_s, table_path, out / name)
    elif Path(table_path).resolve() != (out / name).resolve():
        shutil.copyfile(table_path, out / name)
    settings = ["clients.users={value}"]
    if think_s < NO_THINK_S:
        settings.append("clients.think.mean=0")
    if duration_s is not None:
        settings.append(f"run.duration_s={duration_s:g}")
    lines = [
        f"# Written by `tiersim plan {Path(table_path).name} "
        + " ".join(f"--fit {run}" for run in fit)
        + "`: the planner's path on an",
        '# imported load test (README, "From your load test to a capacity answer"). Edit freely;',
        "# `tiersim calibrate FOLDER` fits the free parameters and predicts the other runs.",
        "",
        "[experiment]",
        f'name = "{out.resolve().name}"',
        f'table = "{name}"',
        f"warmup_s = {warmup_s:g}",
        "",
        "[models]",
        f"model = {json.dumps(str(model_path))}",
        "",
        "[factors.users]",
        '"*" = [' + ", ".join(f'"{s}"' for s in settings) + "]",
        "",
        "[[figures]]",
        'column = "throughput"',
        "",
        "[[figures]]",
        'column = "response.mean"',
        "",
    ]
    for run in fit:  # by figure, so that a figure added later is compared, not fitted
        for column in ("throughput", "response.mean"):
            lines += ["[[fitted]]", f'run = "{run}"', f'figure = "{column}"', ""]
    lines += [
        "# the cores a request can use: one calibration per candidate, the best fit kept",
        "[[choose]]",
        'parameter = "backends.0.cores"',
        f"values = [{', '.join(str(c) for c in cores)}]",
        "",
        f"# at most the lightest fitted run's response time ({lightest.run}: "
        f"{demand_s * 1000:.4g} ms at {lightest.users:.3g} users)",
        "[[calibrate]]",
        'parameter = "backends.0.demand.mean"',
        f"bounds = [{demand_s / 20!r}, {demand_s * 1.5!r}]",
        f"start = {demand_s * 0.75!r}",
        "",
    ]
    if think_s >= NO_THINK_S:
        lines += [
            f"# the response-time law on the fitted runs: Z = N/X - R = {think_s * 1000:.4g} ms",
            "[[calibrate]]",
            'parameter = "clients.think.mean"',
            f"bounds = [{think_s / 2!r}, {think_s * 2!r}]",
            f"start = {think_s!r}",
            "",
        ]
    (out / "experiment.toml").write_text("\n".join(lines), encoding="utf-8")
    return {
        "folder": str(out),
        "fit": list(fit),
        "think_s": think_s,
        "demand_bound_s": demand_s,
        "runs": [law.as_dict() for law in laws.values()],
    }


def _with_levels(table, users: tuple[int, ...], warmup_s: float, source, path: Path) -> None:
    """The table with a run `usersN` per load level to predict: its users, nothing measured."""
    from sim.measurements.table import nan_to_none, write

    if any(n < 1 for n in users):
        raise ExperimentError(f"--predict {users}: expected user counts >= 1")
    rows = [
        {k: nan_to_none(v) if isinstance(v, float) else v for k, v in record.items()}
        for record in table.to_dict(orient="records")
    ]
    taken = {str(r["run"]) for r in rows}
    for n in users:
        run = f"users{n}"
        if run in taken:
            raise ExperimentError(
                f"--predict {n}: {source} already has a run {run!r}; a measured level is "
                "predicted anyway unless fitted"
            )
        # one empty window where the experiment's warm-up ends, so that it is kept
        rows.append(
            {
                "run": run,
                "window_start_s": warmup_s,
                "window_end_s": warmup_s,
                "class": "total",
                "users": float(n),
            }
        )
    write(rows, path)
