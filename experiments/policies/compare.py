"""Every balancer policy on the same heterogeneous cluster: mean and p99 response time
against offered load (open Poisson arrivals), one Plotly figure and a CSV.

    .venv/bin/python experiments/policies/compare.py [--replications 3] [--duration 400] [--out DIR]

Cluster: 2 fast nodes (1 core, 25 ms exponential demand, weight 2) and 2 slow nodes (1 core,
50 ms, weight 1), 32 threads each (processor sharing on the core); pooled capacity 120 req/s.
Offered load is a fraction of that capacity.  A state-blind even split (round robin, random,
JBoss stubs, ...) is unstable from 2/3 of it (lambda >= N min mu = 80 req/s): those points are
refused by the model's stability check and left out, as `tiersim run` would refuse them.
Hash policies route by a Zipf-popular URL (1000 URLs, s = 1), so a popular key can overload
its node whatever the weights.  Every policy runs with the same seed (common random numbers: the
same arrivals and demands).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from sim.model.load import parse_model
from sim.model.schema import POLICY_NAMES
from sim.model.stability import overloads
from sim.run.replications import run

HERE = Path(__file__).resolve().parent
CAPACITY = 2 / 0.025 + 2 / 0.05  # req/s
LOADS = (0.3, 0.5, 0.65, 0.8, 0.9)
# (label, policy, extra balancer parameters): every policy, plus two mechanisms worth a curve
VARIANTS = [(name, name, {}) for name in POLICY_NAMES] + [
    ("consistent_hash, hash-balance-factor 125", "consistent_hash", {"hash_balance_factor": 125}),
    ("sqf on loads reported every 0.5 s", "sqf", {"report_interval_s": 0.5}),
]


def model(policy: str, load: float, duration_s: float, replications: int, **balancer):
    node = {"cores": 1, "threads": 32}
    return parse_model(
        {
            "meta": {"name": f"{policy} at {load:.0%}"},
            "clients": {"kind": "open", "rate_per_s": load * CAPACITY},
            "balancer": {"policy": policy, **balancer},
            "backends": [
                {
                    "name": "fast",
                    "count": 2,
                    "weight": 2,
                    "cpu": {"dist": "exponential", "mean": 0.025},
                    **node,
                },
                {
                    "name": "slow",
                    "count": 2,
                    "weight": 1,
                    "cpu": {"dist": "exponential", "mean": 0.05},
                    **node,
                },
            ],
            "run": {
                "duration_s": duration_s,
                "warmup": 50.0,
                "replications": replications,
                "seed": 11,
            },
        },
        source=f"<compare {policy}>",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=3)
    parser.add_argument(
        "--duration", type=float, default=400.0, help="simulated seconds after warm-up"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for policy, name, params in VARIANTS:
        for load in LOADS:
            m = model(name, load, args.duration, args.replications, **params)
            if overloads(m):
                rows.append({"policy": policy, "load": load, "status": "unstable"})
                continue
            summary = run(m).summary
            row = {"policy": policy, "load": load, "status": "ok"}
            for metric in ("response.mean", "response.p99"):
                interval = summary[metric]
                key = metric.replace("response.", "")
                row.update(
                    {
                        f"{key}_s": interval.mean,
                        f"{key}_low_s": interval.low,
                        f"{key}_high_s": interval.high,
                    }
                )
            rows.append(row)
            print(
                f"{policy:45s} {load:4.0%}  mean {row['mean_s']:.4f} s  p99 {row['p99_s']:.4f} s",
                flush=True,
            )
    columns = [
        "policy",
        "load",
        "status",
        "mean_s",
        "mean_low_s",
        "mean_high_s",
        "p99_s",
        "p99_low_s",
        "p99_high_s",
    ]
    with (args.out / "policies.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    # plotly.js from its CDN: the committed HTML stays small
    figure(rows).write_html(args.out / "policies.html", include_plotlyjs="cdn")
    print(f"wrote {args.out / 'policies.csv'} and {args.out / 'policies.html'}")


def figure(rows):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("mean response [s]", "p99 response [s]"))
    for policy, _, _ in VARIANTS:
        done = [r for r in rows if r["policy"] == policy and r["status"] == "ok"]
        x = [r["load"] for r in done]
        for col, key in ((1, "mean"), (2, "p99")):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[r[f"{key}_s"] for r in done],
                    name=policy,
                    legendgroup=policy,
                    showlegend=col == 1,
                    mode="lines+markers",
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": [r[f"{key}_high_s"] - r[f"{key}_s"] for r in done],
                        "arrayminus": [r[f"{key}_s"] - r[f"{key}_low_s"] for r in done],
                    },
                ),
                row=1,
                col=col,
            )
    for col in (1, 2):
        fig.update_xaxes(
            title_text="offered load (fraction of pooled capacity, 120 req/s)",
            tickformat=".0%",
            row=1,
            col=col,
        )
        fig.update_yaxes(type="log", row=1, col=col)
    fig.update_layout(
        title="Balancer policies on 2 fast + 2 slow nodes (95 % intervals; missing = unstable)",
        height=650,
    )
    return fig


if __name__ == "__main__":
    main()
