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
    python bench/process_times.py --planner [--rounds 3] [--tree ../before]

`--cross-validate` adds `tiersim reproduce seed00N --cross-validate` for N = 0..4, run once (it
takes many minutes) in an empty working directory, so that no calibration cache of an earlier
run is reused: a user's first cross-validation.  Calibration runs with `--no-cache` so that
every round does the fit.

`--planner` times the planner's path on the shipped load test `notebooks/data/planning-pool/`
(README "From your load test to a capacity answer", the notebook's fit): `import` of its ten
JTLs, `plan` (fit users10 and users40), `calibrate` (saving the calibration), `run
--calibration` at 110 users and `capacity --calibration` for p95 < 0.3 s, one after the other
in a fresh folder per checkout, each as the planner types it (the defaults: where the
simulations run included).  For these and for the cross-validation, every process runs under
`bench/engine_clock.py`, which counts the simulated requests and the compiled engine's own time
(its kernel's `run_events`), so each command is reported with the requests it simulated and the
share of its wall time the engine took; and the machine's CPU pressure
(`/proc/pressure/cpu`: the share of the command's wall time in which some task waited for a
core) beside each figure, since the machine is shared.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shlex
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

# The planner's path on the shipped load test, in order: each step reads what the one before
# wrote in the checkout's own folder ({work}); {data} is the test's folder.  The notebook's
# choices (notebooks/capacity_planning_pool.ipynb): levels cut at 2 s and 58 s, users10 and
# users40 fitted, the test plan's uniform timer, 8 Tomcat threads on 2 cores, 110 users asked.
LEVELS = (5, 10, 20, 40, 60, 80, 90, 100, 120, 160)
MODEL = "models/planner-apache-tomcat.toml"
JTLS = " ".join(f"{{data}}/users{n}.jtl" for n in LEVELS)
PLANNER: dict[str, list[list[str]]] = {
    name: [shlex.split(line)]
    for name, line in {
        "import": f"import jtl {JTLS} --utilisation {{data}}/sar.sadf.csv --warmup 2 --until 58 "
        "-o {work}/measured.csv",
        "plan": "plan {work}/measured.csv --fit users10 --fit users40 -o {work}/experiment "
        "--shape {data}/users10.jtl --warmup 2 --threads 8 --cores 2 --predict 110 "
        "--think '{{dist=\"uniform\", low=0.4, high=0.6}}'",
        "calibrate": "calibrate {work}/experiment --no-cache --save {work}/cal.json",
        "run-calibration": f"run {MODEL} --calibration {{work}}/cal.json --set clients.users=110",
        # --no-cache: the untimed first run would otherwise leave every evaluation for the
        # timed rounds to replay (as calibrate's)
        "capacity-calibration": f"capacity {MODEL} --slo p95\\<0.3 --vary clients.users "
        "--calibration {work}/cal.json --draws 8 --min 20 --max 200 --no-cache",
    }.items()
}


@dataclass
class Engine:
    """What `bench/engine_clock.py` counted in a command's processes (summed over them): CPU
    seconds of the calling thread, and the kernel's wall seconds too."""

    kernel_s: float = 0.0  # the compiled kernel's run_events, CPU
    kernel_wall_s: float = 0.0  # the same calls' wall time (with the waits for a core)
    compiled_s: float = 0.0  # compiled replications' run_trace (kernel, tables, trace), CPU
    reference_s: float = 0.0  # reference replications' run_trace, CPU
    finish_s: float = 0.0  # every replication's windowing, CPU
    replications: int = 0
    requests: float = 0.0

    def add(self, other: Engine) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Timing:
    wall_s: float
    cpu_s: float
    silent_s: float  # the longest gap without a line of output (start and end included)
    load: float  # the 1-minute load average at the start
    codes: list[int] = field(default_factory=list)
    parts_s: list[float] = field(default_factory=list)  # each process's wall time
    engine: Engine | None = None  # counted with --planner and --cross-validate
    pressure: float = math.nan  # the share of the wall time some task waited for a core


def _watch(stream, stamps: list[float]) -> None:
    for _ in iter(stream.readline, b""):
        stamps.append(time.perf_counter())


def cpu_pressure_us() -> float:
    """The kernel's count of microseconds in which some runnable task waited for a CPU (PSI
    `some total`); NaN where the kernel does not keep it."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return math.nan
    return float(dict(part.split("=") for part in first.split()[1:])["total"])


def engine_counts(clock: Path) -> Engine:
    """Sum the lines `bench/engine_clock.py` wrote."""
    out = Engine()
    if not clock.exists():
        return out
    for line in clock.read_text().splitlines():
        kind, wall, cpu, requests, _events = line.split()
        if kind == "kernel":
            out.kernel_s += float(cpu)
            out.kernel_wall_s += float(wall)
        elif kind == "finish":
            out.finish_s += float(cpu)
        else:  # a replication on either engine
            setattr(out, f"{kind}_s", getattr(out, f"{kind}_s") + float(cpu))
            out.replications += 1
            out.requests += float(requests)
    return out


def run_process(
    args: list[str], root: Path = ROOT, cwd: Path | None = None, clock: Path | None = None
) -> tuple[float, float, list[float], int]:
    """One `python -m sim ARGS` of checkout `root` (run in `cwd`, default `root`): wall time,
    CPU time (user + system), the times its lines of output came.  With `clock`, the process
    runs under `bench/engine_clock.py`, which writes its engines' times to that file."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "sim"]
    if clock is not None:
        env["ENGINE_CLOCK"] = str(clock)
        command = [sys.executable, str(Path(__file__).resolve().parent / "engine_clock.py")]
    before = os.times()
    start = time.perf_counter()
    process = subprocess.Popen(
        [*command, *args],
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


def measure(
    commands: list[list[str]], root: Path = ROOT, cwd: Path | None = None, counted: bool = False
) -> Timing:
    """A command made of one or more processes run one after the other (their sum); `counted`:
    with the engines' times (`bench/engine_clock.py`)."""
    load = os.getloadavg()[0]
    pressure = cpu_pressure_us()
    wall = cpu = silent = 0.0
    codes, parts = [], []
    engine = Engine() if counted else None
    for args in commands:
        with tempfile.TemporaryDirectory() as folder:
            clock = Path(folder) / "clock" if counted else None
            w, c, stamps, code = run_process(args, root, cwd, clock)
            if engine is not None and clock is not None:
                engine.add(engine_counts(clock))
        wall, cpu = wall + w, cpu + c
        parts.append(w)
        silent = max(silent, max(b - a for a, b in itertools.pairwise(stamps)))
        codes.append(code)
    waited = (cpu_pressure_us() - pressure) / 1e6 / wall
    return Timing(wall, cpu, silent, load, codes, parts, engine, waited)


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


ENGINE_HEADER = (
    "| command | median wall s | range | median CPU s | kernel CPU s | kernel wall s "
    "| compiled replications CPU s | reference replications CPU s | windowing CPU s "
    "| replications | requests | wall / kernel CPU | CPU / kernel CPU | CPU pressure | load avg "
    "| rounds | exit |\n" + "|---" * 17 + "|"
)


def report_engine(name: str, timings: list[Timing]) -> str:
    """A counted command: beside its wall and CPU time, the engines' CPU times summed over its
    processes (medians over rounds), its replications and simulated requests, how many times
    the kernel's CPU time its wall time and its whole CPU time are, and the CPU pressure during
    it (the range over rounds)."""
    walls = [t.wall_s for t in timings]
    engines = [t.engine or Engine() for t in timings]
    codes = sorted({code for t in timings for code in t.codes})

    def median(values) -> float:
        return statistics.median(list(values))

    def times(total: float, part: float) -> str:
        return f"{total / part:.1f}×" if part > 0 else "–"

    kernel, cpu = median(e.kernel_s for e in engines), median(t.cpu_s for t in timings)
    pressures = [t.pressure for t in timings]
    return (
        f"| {name} | {median(walls):.2f} | {min(walls):.2f}–{max(walls):.2f} | {cpu:.2f} "
        f"| {kernel:.2f} | {median(e.kernel_wall_s for e in engines):.2f} "
        f"| {median(e.compiled_s for e in engines):.2f} "
        f"| {median(e.reference_s for e in engines):.2f} "
        f"| {median(e.finish_s for e in engines):.2f} "
        f"| {median(e.replications for e in engines):.0f} "
        f"| {median(e.requests for e in engines):,.0f} "
        f"| {times(median(walls), kernel)} | {times(cpu, kernel)} "
        f"| {min(pressures):.0%}–{max(pressures):.0%} "
        f"| {min(t.load for t in timings):.1f}–{max(t.load for t in timings):.1f} "
        f"| {len(timings)} | {','.join(map(str, codes))} |"
    )


def planner_commands(tree: Path, work: Path) -> dict[str, list[list[str]]]:
    """The planner's commands for `tree`, writing into `work`."""
    data = str(ROOT / "notebooks" / "data" / "planning-pool")
    # a checkout from before capacity kept its evaluations has no --no-cache (and keeps none)
    keeps = (tree / "sim" / "studies" / "capacity" / "kept.py").exists()
    return {
        name: [
            [arg.format(data=data, work=work) for arg in args if keeps or arg != "--no-cache"]
            if name.startswith("capacity")
            else [arg.format(data=data, work=work) for arg in args]
            for args in commands
        ]
        for name, commands in PLANNER.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", action="append", choices=sorted([*COMMANDS, *PLANNER]), default=None
    )
    parser.add_argument(
        "--tree", action="append", type=Path, default=[], help="another checkout to time alike"
    )
    parser.add_argument(
        "--cross-validate",
        action="store_true",
        help="also cross-validate seed000..seed004, once, with this checkout (--rounds 0: that alone)",
    )
    parser.add_argument(
        "--planner",
        action="store_true",
        help="the planner's commands on notebooks/data/planning-pool instead, with the engines' "
        "times (--only picks among them)",
    )
    options = parser.parse_args()
    trees = [ROOT, *(tree.resolve() for tree in options.tree)]
    if options.planner:
        planner(options, trees)
        return
    names = options.only or list(COMMANDS)
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
            lines += cross_validation(tree)
        print("\n".join(lines), flush=True)


def cross_validation(tree: Path) -> list[str]:
    """`reproduce seed00N --cross-validate` for every seed, once, in an empty folder."""
    with tempfile.TemporaryDirectory() as empty:
        once = measure(CROSS_VALIDATION, tree, Path(empty), counted=True)
    return [
        ENGINE_HEADER,
        report_engine("cross-validate seed000–seed004", [once]),
        "each seed, wall s: " + ", ".join(f"{w:.1f}" for w in once.parts_s),
    ]


def planner(options, trees: list[Path]) -> None:
    """The planner's path in every checkout, its steps in order each round (a step reads what
    the one before it wrote), the checkouts in turn per step."""
    names = [n for n in PLANNER if n in options.only] if options.only else list(PLANNER)
    with tempfile.TemporaryDirectory() as scratch:
        works = {tree: Path(scratch) / f"tree{i}" for i, tree in enumerate(trees)}
        commands = {tree: planner_commands(tree, works[tree]) for tree in trees}
        for tree in trees:  # the untimed run writes every step's files and warms the caches
            works[tree].mkdir()
            for name in PLANNER:
                for args in commands[tree][name]:
                    run_process(args, tree)
        timings: dict[tuple[Path, str], list[Timing]] = {(t, n): [] for t in trees for n in names}
        for round_ in range(options.rounds):
            for name in names:
                for tree in trees if round_ % 2 == 0 else trees[::-1]:
                    timings[tree, name].append(measure(commands[tree][name], tree, counted=True))
                    print(
                        f"round {round_ + 1}: {name} ({tree.name}) "
                        f"{timings[tree, name][-1].wall_s:.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    for tree in trees:
        lines = [f"{tree}:", ENGINE_HEADER]
        lines += [report_engine(name, timings[tree, name]) for name in names if options.rounds]
        if options.cross_validate and tree == ROOT:
            lines += cross_validation(tree)[1:]
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
