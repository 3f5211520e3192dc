"""The DataFrames of the package's face, named alike (docs/api.md, "Frames").

One naming of interval bounds: a confidence interval's are `ci_low` and `ci_high`, a
prediction interval's `pi_low` and `pi_high` (as in `--json`'s rows); in a wide frame, one
column per metric, they are `<metric>.ci_low` / `<metric>.ci_high`.  A frame whose rows are
quantities carries each one's unit in a `unit` column; every frame carries them in
`frame.attrs["units"]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from sim.analytic.model_solver import Answer
    from sim.measurements.estimate import HostDemands


def summary_frame(summary: dict, units: dict[str, str]) -> pd.DataFrame:
    """One row per metric (the index): mean, ci_low, ci_high, half_width, unit."""
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "metric": name,
                "mean": i.mean,
                "ci_low": i.low,
                "ci_high": i.high,
                "half_width": i.half_width,
                "unit": units.get(name, ""),
            }
            for name, i in summary.items()
        ],
        columns=["metric", "mean", "ci_low", "ci_high", "half_width", "unit"],
    ).set_index("metric")
    frame.attrs["units"] = dict(units)
    return frame


def answer_frame(answer: Answer) -> pd.DataFrame:
    """The analytic answer as metrics named as the simulation's (`throughput`,
    `response.mean`, `tomcat1.cpu.utilization`, `class.<name>.throughput`), so that it lines
    up with `Simulation.to_frame()` by index: `value`, `unit`.  `attrs`: units, `model`,
    `network`, `exact`, `caveats` (why it is not exact) and `stations` (kind, servers)."""
    import pandas as pd

    rows: list[tuple[str, float, str]] = [
        ("throughput", answer.throughput_per_s, "1/s"),
        ("response.mean", answer.response_mean_s, "s"),
    ]
    for s in answer.stations:
        rows += [
            (f"{s.name}.demand", s.demand_s, "s"),
            (f"{s.name}.utilization", s.utilization, "fraction"),
            (f"{s.name}.residence", s.residence_s, "s"),
            (f"{s.name}.queue", s.queue_length, "requests"),
        ]
    for c in answer.classes:
        rows += [
            (f"class.{c.name}.throughput", c.throughput_per_s, "1/s"),
            (f"class.{c.name}.response.mean", c.response_mean_s, "s"),
        ]
    bound_units = {
        "throughput_upper": "1/s",
        "response_lower": "s",
        "saturation_population": "users",
    }
    for name, value in answer.bounds.items():
        rows.append((f"bounds.{name}", value, bound_units.get(name, "")))
    frame = pd.DataFrame(rows, columns=["metric", "value", "unit"]).set_index("metric")
    frame.attrs.update(
        units={metric: unit for metric, _, unit in rows},
        model=answer.model,
        network=answer.network,
        exact=answer.exact,
        caveats=list(answer.caveats),
        stations={s.name: {"kind": s.kind, "servers": s.servers} for s in answer.stations},
    )
    return frame


def demands_frame(found: list[HostDemands]) -> pd.DataFrame:
    """One row per host and class: demand, std_error, ci_low, ci_high (seconds of the whole
    host per request), unit, at_bound, method, windows.  `attrs`: units, `warnings`, and per
    host its `residual_std` and `condition_number`."""
    import pandas as pd

    columns = [
        "host",
        "class",
        "demand",
        "std_error",
        "ci_low",
        "ci_high",
        "unit",
        "at_bound",
        "method",
        "windows",
    ]
    rows: list[dict[str, Any]] = [
        {
            "host": host.host,
            "class": d.name,
            "demand": d.demand_s,
            "std_error": d.std_error_s,
            "ci_low": d.low_s,
            "ci_high": d.high_s,
            "unit": "s",
            "at_bound": d.at_bound,
            "method": host.method,
            "windows": host.windows,
        }
        for host in found
        for d in host.demands
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs.update(
        units={"demand": "s", "std_error": "s", "ci_low": "s", "ci_high": "s"},
        warnings=[w for host in found for w in host.warnings],
        hosts={
            host.host: {
                "residual_std": host.residual_std,
                "condition_number": host.condition_number,
            }
            for host in found
        },
    )
    return frame


def parameters_frame(parameters: list[dict]) -> pd.DataFrame:
    """A calibration's parameters: `interval` (its 95 % interval) as `ci_low` / `ci_high`, and
    the search range's `low` / `high` as `range_low` / `range_high` (a range, not an interval)."""
    import pandas as pd

    rows = []
    for p in parameters:
        row = {k: v for k, v in p.items() if k not in ("low", "high", "interval")}
        interval = p.get("interval") or (None, None)
        row |= {
            "range_low": p.get("low"),
            "range_high": p.get("high"),
            "ci_low": interval[0],
            "ci_high": interval[1],
        }
        rows.append(row)
    return pd.DataFrame(rows)
