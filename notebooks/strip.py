"""Remove outputs, execution counts and saved widget state from notebooks, in place.

    python notebooks/strip.py [NOTEBOOK ...]     # default: every notebook under notebooks/

Committed notebooks carry none (tests/test_notebooks.py checks): outputs make diffs
unreadable, and an executed lesson embeds megabytes of plotly.js.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def strip(path: Path) -> bool:
    """True if the file changed."""
    notebook = nbformat.read(path, as_version=4)
    before = nbformat.writes(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)  # timings JupyterLab and nbclient record
    notebook.metadata.pop("widgets", None)
    after = nbformat.writes(notebook)
    if after != before:
        path.write_text(after + "\n", encoding="utf-8")
    return after != before


if __name__ == "__main__":
    paths = [Path(a) for a in sys.argv[1:]] or sorted(Path(__file__).parent.rglob("*.ipynb"))
    for path in paths:
        if ".ipynb_checkpoints" not in path.parts and strip(path):
            print(f"stripped {path}")
