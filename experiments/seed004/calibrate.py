"""Fit seed 004's free parameters to the figures named in experiment.toml's [[fitted]] entries,
and print the values to write into the model files and experiment.toml.

    .venv/bin/python experiments/seed004/calibrate.py [--replications 5] [--rounds 4]

* JMeter's own time per request Z (the model's think time) from Table 1's R: it starts at the
  response-time law's Z = N/X - R = 60/80.4 - 0.507 s and moves by the simulated R's error,
  since in a finite run the last users finish alone (fewer than 60 in the loop at the end) and
  the steady-state law over-states R by a few per cent.
* The node's CPU and the database's demand per request, jointly, from Table 1 X (one node,
  node-bound) and Table 4 X (two loaded nodes on one database, database-bound).
* The node's CPU behind Apache + mod_jk2 from Table 3 X.
* The HSQLDB node's CPU from C1 X; the web-tier replication's CPU per message from C3 X; the
  EJB tier's from C4 X (2 nodes: each node serializes its own updates and applies the other's,
  so a node's CPU per request of its own is cpu + 2 x message_cpu_s).

Each demand starts from the bottleneck law (X = 1/D at saturation) and is refined by the
fixed-point update demand *= simulated X / published X, each round simulating the rows with the
same overrides `tiersim reproduce seed004` uses.  No withheld figure is read (Table 2, C5).
"""
from __future__ import annotations

import argparse
import csv
import tomllib
from pathlib import Path

from sim.model.load import load_model
from sim.reproduce import _overrides
from sim.runner import run

HERE = Path(__file__).resolve().parent
USERS = 60


def published() -> dict[str, dict[str, str]]:
    with (HERE / "published.csv").open(newline="") as handle:
        return {row["config"]: row for row in csv.DictReader(handle)}


def simulate(spec: dict, row: dict[str, str], extra: list[str], replications: int, metric="throughput"):
    model_file = HERE / spec["models"][row["config"]]
    model = load_model(model_file, _overrides(spec, row, HERE / "experiment.toml") + extra)
    summary = run(model, replications=replications).summary
    return summary[metric].mean, summary["response.mean"].mean


def throughput(*args, **kwargs) -> float:
    return simulate(*args, **kwargs)[0]


def exp(mean: float) -> str:
    return f'{{dist = "exponential", mean = {mean:.5g}}}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    spec = tomllib.loads((HERE / "experiment.toml").read_text())
    rows = published()
    x = {name: float(rows[name]["throughput_res_per_s"]) for name in
         ("single-node", "single-node-mod-jk", "single-node-shared-db", "C1", "C3", "C4")}
    think = USERS / x["single-node"] - float(rows["single-node"]["response_time_ms"]) / 1000
    node, db = 1 / x["single-node"], 1 / (2 * x["single-node-shared-db"])
    node_jk = 1 / x["single-node-mod-jk"]
    node_c = 1 / x["C1"]
    total_web = 2 / x["C3"]  # cpu + 2 message_cpu_s per request at saturation
    total_ejb = 2 / x["C4"]
    r1_published = float(rows["single-node"]["response_time_ms"]) / 1000
    for round_ in range(args.rounds):
        think_set = f'clients.think={{dist = "deterministic", value = {think:.5g}}}'
        base = [think_set, f"backends.0.cpu={exp(node)}", f"database.demand={exp(db)}"]
        x1, r1 = simulate(spec, rows["single-node"], base, args.replications)
        x4 = throughput(spec, rows["single-node-shared-db"], base, args.replications, "jboss1.throughput")
        x3 = throughput(spec, rows["single-node-mod-jk"], base[:1] + [f"database.demand={exp(db)}",
                                                                      f"backends.0.cpu={exp(node_jk)}"],
                        args.replications)
        hsql = [think_set, f"backends.0.cpu={exp(node_c)}"]
        xc1 = throughput(spec, rows["C1"], hsql, args.replications)
        web = f"cluster.replication.0.message_cpu_s={max(total_web - node_c, 0) / 2:.5g}"
        ejb = f"cluster.replication.1.message_cpu_s={max(total_ejb - node_c, 0) / 2:.5g}"
        xc3 = throughput(spec, rows["C3"], hsql + [web], args.replications)
        xc4 = throughput(spec, rows["C4"], hsql + [ejb], args.replications)
        print(f"round {round_ + 1}: T1 R {r1 * 1000:.1f} ms, X {x1:.2f}  T4 {x4:.2f}  T3 {x3:.2f}  C1 {xc1:.2f}  C3 {xc3:.2f}  C4 {xc4:.2f}")
        think += r1 - r1_published
        node *= x1 / x["single-node"]
        db *= x4 / x["single-node-shared-db"]
        node_jk *= x3 / x["single-node-mod-jk"]
        node_c *= xc1 / x["C1"]
        total_web *= xc3 / x["C3"]
        total_ejb *= xc4 / x["C4"]
    print(f"clients.think = {think:.5g} s (Table 1 R)")
    print(f"maxdb model: backends.0.cpu mean = {node:.5g} s, database.demand mean = {db:.5g} s (Tables 1 and 4 X)")
    print(f"experiment.toml apache-mod-jk2: backends.0.cpu mean = {node_jk:.5g} s (Table 3 X; "
          f"+{(node_jk - node) * 1000:.2f} ms for the AJP path)")
    print(f"hsqldb model: backends.0.cpu mean = {node_c:.5g} s (C1 X)")
    print(f"hsqldb model: cluster.replication.0.message_cpu_s = {(total_web - node_c) / 2:.5g} s (C3 X)")
    print(f"hsqldb model: cluster.replication.1.message_cpu_s = {(total_ejb - node_c) / 2:.5g} s (C4 X)")


if __name__ == "__main__":
    main()
