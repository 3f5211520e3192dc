"""Serve notebooks as pages a lecturer or a reader opens without touching code (Voilà): the
code hidden, the cells executed top to bottom as the page loads and shown as they finish
(progressive rendering: the first figure comes with its cell, not after the last one), the
controls live, and a cell's error shown as an error with its traceback.

    python notebooks/serve.py [DIRECTORY] [--port N] [--no-browser]

`make lessons` serves notebooks/lessons; the browser test (tests/test_lessons_browser.py)
serves notebooks/ with the same command, on loopback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command(directory: Path, port: int, browser: bool) -> list[str]:
    """The `voila` command line; its kernels import this checkout's `sim` (PYTHONPATH)."""
    return [
        sys.executable,
        "-m",
        "voila",
        f"--Voila.root_dir={directory}",
        "--Voila.ip=127.0.0.1",
        f"--port={port}",
        f"--Voila.open_browser={browser}",
        "--VoilaConfiguration.progressive_rendering=True",
        "--VoilaConfiguration.show_tracebacks=True",
        # a lesson runs for a minute at most; a cell that never ends is not cut silently
        "--NotebookClient.timeout=-1",
    ]


def environment() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", default=str(ROOT / "notebooks" / "lessons"))
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    directory = Path(args.directory).resolve()
    if not directory.is_dir():
        parser.error(f"{args.directory}: no such directory; give a folder of notebooks")
    os.chdir(directory)
    arguments = command(directory, args.port, not args.no_browser)
    os.execve(arguments[0], arguments, environment())


if __name__ == "__main__":
    main()
