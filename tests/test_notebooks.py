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
                exec(compile("".join(cell["source"]), f"{name}:{cell['id']}", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
    return namespace


def test_stall_notebook_shows_pinned_threads_and_waiting_connections(tmp_path):
    ns = run_notebook("stall.ipynb")
    try:
        columns = ns["columns"]
        assert {trace.name for trace in ns["figure"].data} >= {"jetty1.connections.idle_pinned",
                                                               "jetty1.connections.awaiting_thread"}
        # The stall: all 30 threads pinned by idle connections while others wait, until the 60-s timeout.
        during = [i for i, t in enumerate(columns["time"]) if 5 <= t <= 55]
        assert all(columns["jetty1.connections.idle_pinned_now"][i] == 30 for i in during)
        assert all(columns["jetty1.connections.awaiting_thread_now"][i] > 0 for i in during)
        assert all(columns["jetty1.serving_now"][i] == 0 for i in during)
    finally:
        ns["series"].unlink(missing_ok=True)
