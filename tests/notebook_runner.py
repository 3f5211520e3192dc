"""Execute a notebook in a Jupyter kernel (nbclient), top to bottom, as a user would, and read
named values out of the kernel's namespace afterwards.

The values travel as JSON printed by one extra cell appended to a copy of the notebook (and
removed from the executed copy returned): data frames as lists of records, Plotly figures as
their trace names, dataclasses as dicts.  Each notebook runs once per test session.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MARK = "__notebook_values__"

EXTRACT = """
import dataclasses as _dc, json as _json

def _plain(value):
    if hasattr(value, "to_dict") and hasattr(value, "columns"):
        return _json.loads(value.to_json(orient="records"))
    if hasattr(value, "to_plotly_json"):
        return {"traces": [trace.name for trace in value.data]}
    if _dc.is_dataclass(value):
        return _dc.asdict(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value

print(%r + _json.dumps({name: _plain(globals()[name]) for name in %r}, default=str))
"""


@functools.cache
def execute(relative: str, names: tuple[str, ...] = ()):
    """(executed notebook, {name: value}, wall seconds) of notebooks/<relative>."""
    import nbformat
    from nbclient import NotebookClient

    path = NOTEBOOKS / relative
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(EXTRACT % (MARK, list(names))))
    # The kernel imports this checkout's `sim`, installed or not.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    started = time.perf_counter()
    client.execute(env=env)
    wall = time.perf_counter() - started
    extract = notebook.cells.pop()
    text = "".join(o.get("text", "") for o in extract.outputs if o.output_type == "stream")
    values = json.loads(text.split(MARK, 1)[1])
    print(f"{relative}: executed in {wall:.1f} s")
    return notebook, values, wall
