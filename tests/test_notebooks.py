"""The notebooks run top to bottom (their code cells, without a Jupyter kernel)."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_notebook(name: str) -> dict:
    notebook = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(ROOT / "notebooks")
    try:
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                exec(compile("".join(cell["source"]), f"{name}:{cell['id']}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


def test_stall_notebook_shows_pinned_threads_and_waiting_connections(tmp_path):
    ns = run_notebook("stall.ipynb")
    try:
        columns = ns["columns"]
        assert {trace.name for trace in ns["figure"].data} >= {
            "jetty1.connections.idle_pinned",
            "jetty1.connections.awaiting_thread",
        }
        # The stall: all 30 threads pinned by idle connections while others wait, until the 60-s timeout.
        during = [i for i, t in enumerate(columns["time"]) if 5 <= t <= 55]
        assert all(columns["jetty1.connections.idle_pinned_now"][i] == 30 for i in during)
        assert all(columns["jetty1.connections.awaiting_thread_now"][i] > 0 for i in during)
        assert all(columns["jetty1.serving_now"][i] == 0 for i in during)
    finally:
        ns["series"].unlink(missing_ok=True)


def test_cluster_notebook_shows_total_replication_flattening_and_the_gc_collapse():
    ns = run_notebook("cluster.ipynb")
    scaling = ns["scaling"].set_index(["replication", "nodes"])
    # per-node throughput at 8 nodes: buddy above total replication, intervals apart
    assert (
        scaling.loc[("sync, 1 buddy", 8), "per_node_low"]
        > scaling.loc[("sync, all nodes", 8), "per_node_high"]
    )
    # total replication loses per-node throughput from 2 to 8 nodes; no replication does not
    assert (
        scaling.loc[("sync, all nodes", 8), "per_node_high"]
        < scaling.loc[("sync, all nodes", 2), "per_node_low"]
    )
    assert scaling.loc[("none", 8), "per_node_high"] > scaling.loc[("none", 2), "per_node_low"]
    heap = ns["heap"].set_index(["container", "batch"])
    assert (
        heap.loc[("Tomcat 6.0.18", 4), "throughput"]
        < 0.2 * heap.loc[("Tomcat 6.0.18", 3), "throughput"]
    )
    assert heap.loc[("Tomcat 6.0.18", 4), "gc_fraction"] > 0.5
    assert (
        heap.loc[("Jetty 6.1.14", 4), "throughput"]
        > 0.9 * heap.loc[("Jetty 6.1.14", 3), "throughput"]
    )
    assert {trace.name for trace in ns["scaling_figure"].data} == {
        "none",
        "sync, all nodes",
        "sync, 1 buddy",
    }


def test_calibrate_notebook_fits_two_demands_and_predicts_the_rest():
    import shutil

    from sim.studies.calibrate import RESOLVED

    ns = run_notebook("calibrate.ipynb")
    try:
        fit = ns["fit"]
        assert fit.converged, fit.message
        for target in fit.targets:  # each fitted throughput as close as its interval resolves
            assert (
                abs(target["simulated"] - target["published"])
                <= RESOLVED * (target["ci_high"] - target["ci_low"]) / 2
            )
        # the response times were not fitted: they are predictions, within the project's ±15 % bar
        predicted = [r for r in fit.rows if not r.fitted]
        assert [r.figure.split(" ")[0] for r in predicted] == ["alone", "shared"]
        assert all(abs(r.rel_error) <= 0.15 for r in predicted)
        # the database is the bottleneck: a third node serves no more users within the objective,
        # because the database saturates while each node's CPU has room (a third node does unload
        # the nodes, so the node count is not ignored)
        assert ns["answer"][3] == ns["answer"][2]
        curve = ns["curve"].set_index(["nodes", "users"])
        for nodes in (2, 3):
            assert (
                curve.loc[(nodes, 150), "database_busy"]
                > 0.9
                > curve.loc[(nodes, 150), "node_busy"]
            )
        assert curve.loc[(3, 150), "node_busy"] < 0.8 * curve.loc[(2, 150), "node_busy"]
        assert curve.loc[(2, 60), "high"] < 1.0 < curve.loc[(2, 150), "low"]
        assert len(ns["figure"].data) == 3
    finally:
        shutil.rmtree(ns["folder"], ignore_errors=True)
