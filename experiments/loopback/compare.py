"""tiersim's predictions of the loopback cells beside what the clients measured.

For each cell of results/cells.csv: how long httpd had run when the clients started (its
error log's "resuming normal operations" to the clients' start: `proxy.uptime_s`), the phase
of the parent's maintenance clock that gives (the first tick `ceil(U) - U` s into the load),
the children the clients saw forked (children.csv), and the figures -- served, gave up, the
last client's end (its last EOF, or its deadline) -- measured, predicted with the load started
with the server (`uptime_s = 0`, the model before) and with the measured uptime.

    PYTHONPATH=. python experiments/loopback/compare.py   (from the repository's root)

Writes results/compare.csv.
"""

from __future__ import annotations

import csv
import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
RESULTS = HERE / "results"
MODELS = {"jk": HERE / "jk-worker-maxconn30.toml", "spawn": HERE / "proxy-worker-spawn.toml"}


def uptime_s(row: dict) -> float:
    """The clients' start less the parent's entry into its main loop (the host runs on UTC)."""
    resumed = datetime.datetime.fromisoformat(row["httpd_resumed"]).replace(tzinfo=datetime.UTC)
    return float(row["clients_start_epoch_s"]) - resumed.timestamp()


def predict(cell: str, uptime: float) -> dict[str, float]:
    kind = cell.split("-")[0]
    sets = [f"proxy.uptime_s={uptime}"]
    if kind == "jk":  # jk-<ms>: the servlet's sleep
        sets.append(f"backends.0.io_wait={int(cell.split('-')[1]) / 1000}")
    command = [sys.executable, "-m", "sim", "run", str(MODELS[kind]), "--json"]
    for override in sets:
        command += ["--set", override]
    out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    metrics = out["metrics"]

    def mean(name: str) -> float:
        metric = metrics.get(name)
        return math.nan if metric is None else float(metric["mean"])

    return {
        "served": mean("count.completed"),
        "gave_up": mean("count.timed_out"),
        "end_s": mean("elapsed.server_close"),
    }


def measured_end_s(cell: str) -> float:
    """The last client's end: its EOF, or its deadline if it gave up."""
    deadline = 120.0 if cell.startswith("jk") else 30.0
    ends = []
    with open(RESULTS / cell / "clients.csv") as f:
        for row in csv.DictReader(f):
            ends.append(float(row["eof_s"]) if row["outcome"] == "served" else deadline)
    return max(ends)


def forks(cell: str) -> str:
    with open(RESULTS / cell / "children.csv") as f:
        return " ".join(
            row["forked_after_start_s"]
            for row in csv.DictReader(f)
            if float(row["forked_after_start_s"]) > 0
        )


def main() -> None:
    with open(RESULTS / "cells.csv") as f:
        cells = list(csv.DictReader(f))
    fields = (
        "cell",
        "uptime_s",
        "first_tick_s",
        "forks_s",
        "served",
        "gave_up",
        "end_s",
        "before_served",
        "before_end_s",
        "predicted_served",
        "predicted_gave_up",
        "predicted_end_s",
    )
    rows = []
    for row in cells:
        cell = row["cell"]
        uptime = uptime_s(row)
        before = predict(cell, 0.0)
        now = predict(cell, uptime)
        rows.append(
            {
                "cell": cell,
                "uptime_s": f"{uptime:.4f}",
                "first_tick_s": f"{math.floor(uptime) + 1 - uptime:.4f}",
                "forks_s": forks(cell),
                "served": row["served"],
                "gave_up": row["gave_up"],
                "end_s": f"{measured_end_s(cell):.3f}",
                "before_served": f"{before['served']:g}",
                "before_end_s": f"{before['end_s']:.3f}",
                "predicted_served": f"{now['served']:g}",
                "predicted_gave_up": f"{now['gave_up']:g}",
                "predicted_end_s": f"{now['end_s']:.3f}",
            }
        )
    with open(RESULTS / "compare.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    print(" | ".join(fields))
    for row in rows:
        print(" | ".join(row[field] for field in fields))


if __name__ == "__main__":
    main()
