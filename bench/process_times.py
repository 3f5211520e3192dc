"""Whole-process wall time of the commands a user waits for, from the shell's Enter to the prompt.

Each command runs as a fresh `python -m sim ...` process (what the `tiersim` script runs), so
the time includes the interpreter, tiersim's imports, the load of the compiled engine's cached
machine code and the output.  One untimed run of every command first warms numba's cache and
the operating system's file cache; then the commands alternate, round after round, so machine
noise hits all alike.  `--tree DIR` (repeatable) times other checkouts in the same rounds, each
command in every tree in turn: a before-and-after comparison under the same load.  Bytecode is
cached as Python does by default (PYTHONDONTWRITEBYTECODE is cleared for the children), as it
is for an installed tiersim.  Reported per command: the median wall time over rounds and its range,
the median CPU time of the process, the longest time the command printed nothing (standard
output and error read line by line as they come, unbuffered, as a terminal shows them: a
command should never stay silent for more than 10 s), and the load average at the start.

    python bench/process_times.py [--rounds 5] [--only tiny-run] [--tree ../before] [--cross-validate]

`--cross-validate` adds `tiersim reproduce seed00N --cross-validate` for N = 0..4, run once (it
takes many minutes) in an empty working directory, so that no calibration cache of an earlier
run is reused: a user's first cross-validation.  Calibration runs with `--no-cache` so that
every round does the fit.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A tiny run: one replication of one simulated minute of the demo model (about 5 700 requests,
# a steady state by its warm-up test); the simulation itself takes a few hundredths of a second.
# The same on the reference engine shows what the compiled engine's start costs.
TINY = ["run", "models/demo.toml", "--replications", "1", "--set", "run.duration_s=60"]
COMMANDS: dict[str, list[list[str]]] = {
    "version": [["--version"]],
    "tiny-run": [TINY],
    "tiny-run-reference": [[*TINY, "--engine", "reference"]],
    "demo": [["run", "models/demo.toml"]],
    "apache24-event": [["run", "models/apache24-event-tomcat10.toml"]],
    "calibrate-planning": [["calibrate", "planning", "--no-cache"]],
}
CROSS_VALIDATION = [["reproduce", f"seed00{n}", "--cross-validate"] for n in range(5)]


@dataclass
class Timing:
    wall_s: float
    cpu_s: float
    silent_s: float  # the longest gap without a line of output (start and end included)
    load: float  # the 1-minute load average at the start
    codes: list[int] = field(default_factory=list)
    parts_s: list[float] = field(default_factory=list)  # each process's wall time


def _watch(stream, stamps: list[float]) -> None:
    for _ in iter(stream.readline, b""):
        stamps.append(time.perf_counter())


def run_process(
    args: list[str], root: Path = ROOT, cwd: Path | None = None
) -> tuple[float, float, list[float], int]:
    """One `python -m sim ARGS` of checkout `root` (run in `cwd`, default `root`): wall time,
    CPU time (user + system), the times its lines of output came."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = os.times()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "sim", *args],
        cwd=root if cwd is None else cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stamps: list[float] = [start]
    readers = [
        threading.Thread(target=_watch, args=(stream, stamps))
        for stream in (process.stdout, process.stderr)
    ]
    for reader in readers:
        reader.start()
    code = process.wait()
    end = time.perf_counter()
    for reader in readers:
        reader.join()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    stamps.append(end)
    return end - start, cpu, sorted(stamps), code


def measure(commands: list[list[str]], root: Path = ROOT, cwd: Path | None = None) -> Timing:
    """A command made of one or more processes run one after the other (their sum)."""
    load = os.getloadavg()[0]
    wall = cpu = silent = 0.0
    codes, parts = [], []
    for args in commands:
        w, c, stamps, code = run_process(args, root, cwd)
        wall, cpu = wall + w, cpu + c
        parts.append(w)
        silent = max(silent, max(b - a for a, b in itertools.pairwise(stamps)))
        codes.append(code)
    return Timing(wall, cpu, silent, load, codes, parts)


def report(name: str, timings: list[Timing]) -> str:
    walls = [t.wall_s for t in timings]
    codes = sorted({code for t in timings for code in t.codes})
    return (
        f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f}–{max(walls):.2f} "
        f"| {statistics.median(t.cpu_s for t in timings):.2f} "
        f"| {max(t.silent_s for t in timings):.1f} "
        f"| {min(t.load for t in timings):.1f}–{max(t.load for t in timings):.1f} "
        f"| {len(timings)} | {','.join(map(str, codes))} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", action="append", choices=sorted(COMMANDS), default=None)
    parser.add_argument(
        "--tree", action="append", type=Path, default=[], help="another checkout to time alike"
    )
    parser.add_argument(
        "--cross-validate",
        action="store_true",
        help="also cross-validate seed000..seed004, once, with this checkout (--rounds 0: that alone)",
    )
    options = parser.parse_args()
    names = options.only or list(COMMANDS)
    trees = [ROOT, *(tree.resolve() for tree in options.tree)]
    for tree in trees if options.rounds > 0 else []:  # warm the caches; not timed
        for name in names:
            for args in COMMANDS[name]:
                run_process(args, tree)
    timings: dict[tuple[Path, str], list[Timing]] = {(t, n): [] for t in trees for n in names}
    for round_ in range(options.rounds):
        for name in names:
            for tree in trees if round_ % 2 == 0 else trees[::-1]:
                timings[tree, name].append(measure(COMMANDS[name], tree))
        print(f"round {round_ + 1}/{options.rounds} done", file=sys.stderr, flush=True)
    for tree in trees:
        lines = [
            f"{tree}:",
            "| command | median wall s | range | median CPU s | longest silence s | load avg "
            "| rounds | exit |",
            "|---|---|---|---|---|---|---|---|",
        ]
        lines += [report(name, timings[tree, name]) for name in names if options.rounds > 0]
        if options.cross_validate and tree == ROOT:
            with tempfile.TemporaryDirectory() as empty:
                once = measure(CROSS_VALIDATION, tree, Path(empty))
            lines.append(report("cross-validate seed000–seed004", [once]))
            lines.append("each seed, wall s: " + ", ".join(f"{w:.1f}" for w in once.parts_s))
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
