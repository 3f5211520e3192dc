"""Cluster scaling under session replication: throughput and p95 against node count, for no
replication, asynchronous total, synchronous total and synchronous buddy replication.

    .venv/bin/python experiments/scaling/scaling.py [--replications 3] [--duration 60] [--out DIR]

Writes `results/scaling.csv` (one row per variant and node count: mean and 95 % interval of
throughput, mean response and p95, the nodes' CPU utilisation and the replication wait) and
`results/scaling.html` (one Plotly figure, two panels).  Each finished point is appended to
the CSV at once, so an interrupted run keeps its points and a rerun skips them.

Workload: 40 users per node (the population grows with the cluster), exponential think time
0.5 s, every request touches the session (JBoss `replication-trigger` SET_AND_GET); round
robin over N identical nodes: 1 core (a 2003 Pentium IV), 50 threads, 10 ms of CPU per
request (100 req/s per node).  Replication: a 4 KiB session (whole-session granularity);
0.2 ms of CPU per message on the sender and on each receiver for the group-communication
stack plus 0.05 ms per KiB to serialize or apply; switched 100 Mbit/s Ethernet, 0.1 ms,
UDP multicast (JGroups' default transport).  These are plausible values, not fitted: the
experiment shows what the mechanism implies, not a measured cluster.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from sim.model.load import parse_model
from sim.run.replications import run

HERE = Path(__file__).resolve().parent
NODES = (2, 4, 6, 8, 12, 16)
USERS_PER_NODE = 40
VARIANTS = {
    "none": [],
    "async, all nodes": [{"mode": "async", "scope": "all"}],
    "sync, all nodes": [{"mode": "sync", "scope": "all"}],
    "sync, 1 buddy": [{"mode": "sync", "scope": "buddy", "buddies": 1}],
}
SESSION = {
    "session_bytes": 4096,
    "trigger": "set_and_get",
    "message_cpu_s": 2e-4,
    "serialize_s_per_kb": 5e-5,
    "apply_s_per_kb": 5e-5,
}
METRICS = ("throughput", "response.mean", "response.p95")
FIELDS = (
    ["variant", "nodes", "users"]
    + [f"{m}.{k}" for m in METRICS for k in ("mean", "low", "high")]
    + ["node_cpu_utilization", "replication_wait_s"]
)


def model(variant: str, nodes: int, duration_s: float, replications: int):
    return parse_model(
        {
            "meta": {"name": f"{variant}, {nodes} nodes"},
            "clients": {
                "kind": "closed",
                "users": USERS_PER_NODE * nodes,
                "think": {"dist": "exponential", "mean": 0.5},
            },
            "balancer": {"policy": "round_robin"},
            "backends": [
                {
                    "name": "node",
                    "count": nodes,
                    "cores": 1,
                    "threads": 50,
                    "cpu": {"dist": "exponential", "mean": 0.010},
                }
            ],
            "cluster": {
                "replication": [{**SESSION, **spec} for spec in VARIANTS[variant]],
                "network": "switched",
                "bandwidth_bps": 100e6,
                "latency_s": 1e-4,
                "multicast": True,
            },
            "run": {
                "duration_s": duration_s,
                "warmup": 10.0,
                "replications": replications,
                "seed": 17,
            },
        },
        source=f"<scaling {variant} {nodes}>",
    )


def _done(path: Path) -> set[tuple[str, int]]:
    if not path.exists():
        return set()
    with path.open(newline="") as handle:
        return {(row["variant"], int(row["nodes"])) for row in csv.DictReader(handle)}


def simulate(out: Path, duration_s: float, replications: int, variants=None) -> Path:
    table = out / "scaling.csv"
    done = _done(table)
    new_file = not table.exists()
    with table.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for variant in variants or VARIANTS:
            for nodes in NODES:
                if (variant, nodes) in done:
                    continue
                result = run(model(variant, nodes, duration_s, replications))
                row = {"variant": variant, "nodes": nodes, "users": USERS_PER_NODE * nodes}
                for metric in METRICS:
                    interval = result.summary[metric]
                    row.update(
                        {
                            f"{metric}.mean": interval.mean,
                            f"{metric}.low": interval.low,
                            f"{metric}.high": interval.high,
                        }
                    )
                cpu = [result.summary[f"node{i + 1}.cpu.utilization"].mean for i in range(nodes)]
                row["node_cpu_utilization"] = sum(cpu) / nodes
                wait = result.summary.get("replication.web.wait")
                row["replication_wait_s"] = wait.mean if wait is not None else 0.0
                writer.writerow(row)
                handle.flush()  # a finished point is kept even if the run is interrupted
                print(
                    f"{variant:18s} N={nodes:2d}: X = {row['throughput.mean']:7.1f}/s "
                    f"[{row['throughput.low']:.1f}, {row['throughput.high']:.1f}], "
                    f"p95 = {row['response.p95.mean'] * 1000:6.1f} ms, CPU {row['node_cpu_utilization']:.0%}",
                    flush=True,
                )
    return table


def figure(table: Path, out: Path) -> Path:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    with table.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("throughput [req/s]", "p95 response [s]"))
    colours = ["#636efa", "#00cc96", "#ef553b", "#ab63fa"]
    for colour, variant in zip(colours, VARIANTS):
        points = sorted((r for r in rows if r["variant"] == variant), key=lambda r: int(r["nodes"]))
        nodes = [int(r["nodes"]) for r in points]
        for col, metric in ((1, "throughput"), (2, "response.p95")):
            mean = [float(r[f"{metric}.mean"]) for r in points]
            low = [float(r[f"{metric}.low"]) for r in points]
            high = [float(r[f"{metric}.high"]) for r in points]
            fig.add_trace(
                go.Scatter(
                    x=nodes,
                    y=mean,
                    name=variant,
                    legendgroup=variant,
                    showlegend=col == 1,
                    line={"color": colour},
                    mode="lines+markers",
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": [h - m if math.isfinite(h) else 0 for h, m in zip(high, mean)],
                        "arrayminus": [
                            m - lo if math.isfinite(lo) else 0 for lo, m in zip(low, mean)
                        ],
                    },
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text=f"nodes ({USERS_PER_NODE} users each)")
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(
        title="Session replication and cluster size (95 % intervals)", height=480, width=1100
    )
    path = out / "scaling.html"
    fig.write_html(path, include_plotlyjs="cdn", full_html=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=3)
    parser.add_argument(
        "--duration", type=float, default=60.0, help="simulated seconds after warm-up"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument(
        "--variant",
        action="append",
        choices=list(VARIANTS),
        help="run only these variants (repeatable); default all",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    table = simulate(args.out, args.duration, args.replications, args.variant)
    print(f"wrote {table} and {figure(table, args.out)}")


if __name__ == "__main__":
    main()
