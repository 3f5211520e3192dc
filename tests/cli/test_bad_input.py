"""Bad input through the command line: no wrong answer without a warning, and no traceback.

Every case feeds one kind of bad input to a `tiersim` command (click's CliRunner; a
subprocess for pipes and devices, whose reading never ends) under a deadline, and asserts:

* no internal error (exit code 1, or an exception that is not an exit);
* no hang (the deadline);
* no silent answer (exit 0 where the input is wrong);
* the documented exit code, and a message naming the file or option, the field, the value
  and the fix (`parts`: each must appear in standard error).

`CASES` is data, so that a script can replay it against another version and count what
each version does (`outcome(case, folder)`).  Every case is refused before any simulation
but for the few that run a model of a fraction of a second.  The hypothesis tests at the
end feed garbage: random bytes, random TOML, random `--set` strings.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from sim.cli import main

DEADLINE_S = 15.0  # a case that has not answered by then hangs (a refused one takes < 0.1 s)

# A model of a fraction of a second: 20 users, 20 simulated seconds, 2 replications.
FAST = """\
[meta]
name = "bad input"
[clients]
kind = "closed"
users = 20
think = { dist = "exponential", mean = 1.0 }
[[backends]]
name = "app"
threads = 50
cores = 2
demand = { dist = "exponential", mean = 0.02 }
[run]
duration_s = 20
replications = 2
seed = 5
"""


# --------------------------------------------------------------------------- the harness
class Hang(BaseException):
    """The command did not answer before the deadline (a BaseException: code that catches
    every Exception, as simulate() does for bugs, must not swallow it)."""


@contextlib.contextmanager
def deadline(seconds: float):
    def expired(signum, frame):
        raise Hang(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Answer:
    kind: str  # "answered", "hang" or "internal"
    code: int | None
    stdout: str
    stderr: str
    seconds: float


def cli(args: Sequence[object], seconds: float = DEADLINE_S) -> Answer:
    started = time.perf_counter()
    try:
        with deadline(seconds):
            result = CliRunner().invoke(main, [str(a) for a in args])
    except Hang:
        return Answer("hang", None, "", "", time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    if isinstance(result.exception, Hang):
        return Answer("hang", None, result.stdout, result.stderr, elapsed)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    internal = (
        crashed
        or result.exit_code == 1
        or "Traceback" in result.output
        or "internal error" in result.stderr
    )
    return Answer(
        "internal" if internal else "answered",
        result.exit_code,
        result.stdout,
        result.stderr + (repr(result.exception) if crashed else ""),
        elapsed,
    )


def _limits() -> None:  # in the child: a runaway read ends in MemoryError, not in swap
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))


def shell(
    args: Sequence[object], seconds: float = 30.0, pipe_to: Sequence[str] | None = None
) -> Answer:
    """`tiersim ARGS` in its own process (pipes, devices), under a deadline and a memory
    limit; `pipe_to` reads its output (e.g. head -1) and may close the pipe early."""
    root = Path(sim.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("TIERSIM_DEBUG", None)
    command = [sys.executable, "-m", "sim", *map(str, args)]
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_limits,
    )
    reader = None
    if pipe_to is not None:
        assert process.stdout is not None
        reader = subprocess.Popen(pipe_to, stdin=process.stdout, stdout=subprocess.PIPE)
        process.stdout.close()  # the reader holds the pipe now: when it exits, it closes
    try:
        out, err = process.communicate(timeout=seconds)
        if reader is not None:
            out = reader.communicate(timeout=seconds)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return Answer("hang", None, "", "", time.perf_counter() - started)
    text = err.decode("utf-8", "replace")
    internal = process.returncode == 1 or "Traceback" in text or "internal error" in text
    return Answer(
        "internal" if internal else "answered",
        process.returncode,
        (out or b"").decode("utf-8", "replace"),
        text,
        time.perf_counter() - started,
    )


# --------------------------------------------------------------------------- the cases
Parts = Sequence[str | Callable[[Path], str]]


@dataclass
class Case:
    id: str
    klass: str
    build: Callable[[Path], list]  # folder -> the command line
    code: int  # the documented exit code expected
    parts: Parts = ()  # what the message must name (a callable gets the folder)
    process: bool = False  # run in a subprocess (pipes, devices)
    pipe_to: tuple[str, ...] | None = None
    within_s: float | None = None  # answered this fast (refused before any simulation)
    absent: Sequence[str] = field(default_factory=tuple)  # must not appear in stderr


def outcome(case: Case, folder: Path) -> Answer:
    args = case.build(folder)
    if case.process:
        return shell(args, pipe_to=case.pipe_to)
    return cli(args)


def verdict(case: Case, answer: Answer) -> str:
    """internal, hang, silent (exit 0 where the input is wrong), or ok."""
    if answer.kind != "answered":
        return answer.kind
    if answer.code == 0 and case.code != 0:
        return "silent"
    return "ok"


# ---- files the cases read
def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def model(folder: Path, text: str = FAST, name: str = "m.toml") -> Path:
    return write(folder, name, text)


def fast(folder: Path) -> Path:
    return model(folder, FAST, "fast.toml")


def with_lines(*lines: str, drop: Sequence[str] = ()) -> str:
    """FAST with some lines dropped and others added at the end of a table (`[run]` lines
    go last already)."""
    kept = [line for line in FAST.splitlines() if not any(line.startswith(d) for d in drop)]
    return "\n".join([*kept, *lines]) + "\n"


def latin1(folder: Path) -> Path:
    return write(folder, "m.toml", FAST.replace('"bad input"', '"café"').encode("latin-1"))


def fifo(folder: Path, name: str = "pipe.toml") -> Path:
    path = folder / name
    if not path.exists():
        os.mkfifo(path)
    return path


def P(name: str) -> Callable[[Path], str]:
    """A part of the message that is a path inside the case's folder."""
    return lambda folder: str(folder / name)


def cmd(*words: object) -> Callable[[Path], list]:
    """A command line whose callables get the folder (file builders)."""

    def build(folder: Path) -> list:
        return [w(folder) if callable(w) else w for w in words]

    return build


def settings_model(*sets: str, command: str = "validate") -> Callable[[Path], list]:
    def build(folder: Path) -> list:
        args: list = [command, fast(folder)]
        for s in sets:
            args += ["--set", s]
        return args

    return build


CASES: list[Case] = []


def case(id: str, klass: str, build, code: int, *parts, **options) -> None:
    CASES.append(Case(id, klass, build, code, parts, **options))


# ---- 1. the bytes of a model file: encodings and binary files
ENCODINGS: list[tuple[str, Callable[[Path], Path], Parts]] = [
    (
        "utf16-le",
        lambda f: write(f, "m.toml", b"\xff\xfe" + FAST.encode("utf-16-le")),
        ("UTF-16", "save it as UTF-8"),
    ),
    (
        "utf16-be",
        lambda f: write(f, "m.toml", b"\xfe\xff" + FAST.encode("utf-16-be")),
        ("UTF-16", "save it as UTF-8"),
    ),
    ("latin-1", latin1, ("line 2", "byte 0xe9", "Latin-1", "save it as UTF-8")),
    (
        "cp1252-quotes",
        lambda f: write(
            f, "m.toml", FAST.replace('"bad input"', '"\u201cx\u201d"').encode("cp1252")
        ),
        ("line 2", "0x93", "save it as UTF-8"),
    ),
    (
        "binary",
        lambda f: write(f, "m.toml", bytes(range(256)) * 4),
        ("binary file", "give the model file itself"),
    ),
    (
        "png",
        lambda f: write(f, "m.toml", b"\x89PNG\r\n\x1a\n" + bytes(64)),
        ("binary file", "give the model file itself"),
    ),
    (
        "gzip",
        lambda f: write(f, "m.toml", gzip.compress(FAST.encode(), mtime=0)),
        ("binary file", "give the model file itself"),
    ),
    (
        "nul-inside",
        lambda f: write(f, "m.toml", FAST + "\x00\n"),
        ("binary file", "NUL byte at line 16", "give the model file itself"),
    ),
    (
        "cut-utf8",
        lambda f: write(f, "m.toml", FAST.encode() + "# é".encode()[:-1]),
        ("line 16", "not UTF-8", "save it as UTF-8"),
    ),
    (
        "empty",
        lambda f: write(f, "m.toml", ""),
        ("clients", "required", "tiersim schema"),
    ),
    (
        "comments-only",
        lambda f: write(f, "m.toml", "# nothing here\n\n"),
        ("clients", "required"),
    ),
    (
        "not-toml",
        lambda f: write(f, "m.toml", "clients = \n"),
        ("not valid TOML", "line 1"),
    ),
]
for name, build_file, parts in ENCODINGS:
    case(f"validate-{name}", "encoding", cmd("validate", build_file), 3, P("m.toml"), *parts)
for name, build_file, parts in ENCODINGS[:6]:
    for command in ("run", "solve"):
        case(f"{command}-{name}", "encoding", cmd(command, build_file), 3, P("m.toml"), *parts)
case(
    "validate-a-sweep-file",
    "encoding",
    cmd("validate", lambda f: write(f, "s.toml", '[sweep]\nbase = "m.toml"\n[factors]\n')),
    3,
    P("s.toml"),
    "this is a sweep file, not a model file",
    "tiersim sweep",
)
case(
    "run-an-experiment-file",
    "encoding",
    cmd("run", lambda f: _experiment(f) / "experiment.toml"),
    3,
    P("exp/experiment.toml"),
    "this is an experiment file",
    "tiersim reproduce",
)
case(
    "validate-utf8-bom",
    "encoding",
    cmd("validate", lambda f: write(f, "m.toml", b"\xef\xbb\xbf" + FAST.encode())),
    0,
    absent=("error",),
)
case(
    "sweep-latin-1",
    "encoding",
    cmd("sweep", latin1, "--serial"),
    3,
    P("m.toml"),
    "byte 0xe9",
    "the sweep file",
    "save it as UTF-8",
)
case(
    "sweep-binary",
    "encoding",
    cmd("sweep", lambda f: write(f, "m.toml", bytes(range(256))), "--serial"),
    3,
    P("m.toml"),
    "binary file",
    "give the sweep file itself",
)

# ---- 2. nesting and size
DEEP_ARRAY = "a = " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_TABLE = "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n"
NESTED_100 = "[meta]\nname = " + "[" * 100 + "1" + "]" * 100 + "\n"
for name, text, parts in (
    ("deep-array", DEEP_ARRAY, ("nested more than 32 levels", "near line 1", "close the brackets")),
    ("deep-table", DEEP_TABLE, ("nested more than 32 levels", "close the brackets")),
    ("nested-100", NESTED_100, ("nested more than 32 levels", "at meta.name.0.0", "near line 2")),
):
    for command in ("validate", "run"):
        case(
            f"{command}-{name}",
            "nesting",
            cmd(command, lambda f, text=text: model(f, text)),
            3,
            P("m.toml"),
            *parts,
        )
    case(
        f"sweep-{name}",
        "nesting",
        cmd("sweep", lambda f, text=text: model(f, text), "--serial"),
        3,
        P("m.toml"),
        "nested more than 32 levels",
        "a sweep file nests a few levels",
    )
case(
    "set-deep-unclosed",
    "nesting",
    settings_model("clients.users=" + "[" * 3000),
    3,
    P("fast.toml"),
    "clients.users = '[[[[",
    "valid integer",
)
case(
    "set-deep-closed",
    "nesting",
    settings_model("clients.users=" + "[" * 40 + "]" * 40),
    3,
    "--set 'clients.users=[[[",
    "too deeply",
)
case(
    "huge-file",
    "nesting",
    cmd("validate", lambda f: _sparse(f / "m.toml", 17 * 2**20)),
    3,
    P("m.toml"),
    "17825792 bytes is too large",
    "at most 16 MiB",
)
case(
    "huge-integer",
    "nesting",
    cmd("validate", lambda f: model(f, FAST.replace("users = 20", "users = " + "9" * 5000))),
    3,
    P("m.toml"),
    "not valid TOML",
    "4300",
)
case(
    "report-deep-json",
    "nesting",
    cmd("report", lambda f: write(f, "r.json", "[" * 100_000 + "]" * 100_000), "-o", P("r.html")),
    3,
    P("r.json"),
    "nested too deeply",
    "tiersim reproduce NAME --json > FILE.json",
)


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


# ---- 3. pipes and devices (subprocess: reading one of them never ends)
for command in ("run", "validate", "solve"):
    case(
        f"{command}-fifo",
        "non-regular",
        cmd(command, fifo),
        3,
        P("pipe.toml"),
        "not a regular file",
        "save the model file to a file",
        process=True,
    )
for command in ("run", "validate"):
    case(
        f"{command}-dev-zero",
        "non-regular",
        cmd(command, "/dev/zero"),
        3,
        "/dev/zero",
        "not a regular file",
        "save the model file to a file",
        process=True,
    )
case(
    "validate-dev-urandom",
    "non-regular",
    cmd("validate", "/dev/urandom"),
    3,
    "/dev/urandom",
    "not a regular file",
    process=True,
)
case(
    "sweep-fifo",
    "non-regular",
    cmd("sweep", fifo, "--serial"),
    3,
    P("pipe.toml"),
    "not a regular file",
    "save the sweep file to a file",
    process=True,
)
case(
    "plot-fifo",
    "non-regular",
    cmd("plot", lambda f: fifo(f, "pipe.csv"), "-o", P("x.html")),
    3,
    P("pipe.csv"),
    "not a regular file",
    process=True,
)
case(
    "import-fifo",
    "non-regular",
    cmd("import", "jtl", lambda f: fifo(f, "pipe.jtl"), "-o", P("t.csv")),
    3,
    P("pipe.jtl"),
    "not a regular file",
    process=True,
)
case(
    "estimate-dev-zero",
    "non-regular",
    cmd("estimate", "/dev/zero"),
    3,
    "/dev/zero",
    "not a regular file",
    process=True,
)
case(
    "validate-directory",
    "non-regular",
    cmd("validate", lambda f: f),
    2,
    "is a directory",
)

# ---- 4. work: runs that would not end for hours (or ever)
case(
    "run-duration-1e9",
    "work",
    settings_model("run.duration_s=1e9", command="run"),
    3,
    P("fast.toml"),
    "run.duration_s = 1e9",
    "lower run.duration_s",
    "raise run.max_events",
    within_s=3,
)
case(
    "validate-duration-1e9",
    "work",
    settings_model("run.duration_s=1e9"),
    3,
    "run.duration_s = 1e9",
    "lower run.duration_s",
)
case(
    "run-requests-1e12",
    "work",
    settings_model("run.duration_s=none", "run.requests=1e12", command="run"),
    3,
    P("fast.toml"),
    "run.requests = 1e12",
    "lower run.requests",
    within_s=3,
)
case(
    "run-zero-time",
    "work",
    settings_model("clients.think=0", "backends.0.demand=0", command="run"),
    3,
    "clients.users = 20",
    "never end",
    "give clients.think or a demand a value above zero",
    within_s=3,
)
case(
    "run-zero-interarrival",
    "work",
    settings_model('clients={kind="open", interarrival=0}', "backends.0.demand=0", command="run"),
    3,
    "arrivals 0 s apart",
    "give clients.interarrival a mean above zero",
    within_s=3,
)
case(
    "run-timeseries-interval",
    "work",
    lambda f: [
        "run",
        fast(f),
        "--set",
        "run.timeseries_interval_s=1e-9",
        "--timeseries",
        f / "ts.csv",
    ],
    3,
    "run.timeseries_interval_s = 1e-9",
    "raise run.timeseries_interval_s",
    within_s=3,
)
case(
    "run-report-interval",
    "work",
    settings_model("balancer.report_interval_s=1e-9", "backends.0.count=2", command="run"),
    3,
    "balancer.report_interval_s = 1e-9",
    "raise balancer.report_interval_s",
)
case(
    "run-report-interval-one-node",
    "work",
    settings_model("balancer.report_interval_s=1e-9", "run.duration_s=2", command="run"),
    0,
    absent=("error", "warning"),
)
case(
    "run-schedule-steps",
    "work",
    settings_model(
        'clients={kind="open", schedule=[{rate_per_s=1, duration_s=1e-9}]}', command="run"
    ),
    3,
    "clients.schedule",
    "raise clients.schedule",
)
case(
    "run-schedule-silent",
    "work",
    settings_model(
        'clients={kind="open", schedule=[{rate_per_s=0, duration_s=10}]}', command="run"
    ),
    3,
    "clients",
    "no request ever arrives",
    "give a step a positive rate_per_s",
    within_s=3,
)
case(
    "run-ab-requests",
    "work",
    settings_model('clients={kind="ab", concurrency=10, requests=1000000000000}', command="run"),
    3,
    "clients.requests = 1000000000000",
    "lower clients.requests",
)
case(
    "run-requests-per-user",
    "work",
    settings_model("clients.requests_per_user=1000000000", command="run"),
    3,
    "clients.requests_per_user = 1000000000",
    "lower clients.requests_per_user",
)
case(
    "run-total-requests",
    "work",
    settings_model(
        'clients={kind="open", rate_per_s=5, total_requests=1000000000000}', command="run"
    ),
    3,
    "clients.total_requests = 1000000000000",
    "lower clients.total_requests",
)
case(
    "run-total-sessions",
    "work",
    settings_model(
        'clients={kind="sessions", session_rate_per_s=1, requests_per_session=5, '
        "total_sessions=100000000000}",
        command="run",
    ),
    3,
    "clients.total_sessions = 100000000000",
)
case(
    "run-replications",
    "work",
    lambda f: ["run", fast(f), "--set", "run.duration_s=100000", "-r", "10000"],
    3,
    "10000 replication(s)",
    "or the replications",
)
case(
    "validate-warns-minutes",
    "work",
    settings_model("run.duration_s=2e5"),
    0,
    "warning",
    "run.duration_s = 2e5",
    "lower run.duration_s for a quicker answer",
)
case(
    "validate-no-limit-warns",
    "work",
    settings_model("run.duration_s=1e9", "run.max_events=none"),
    0,
    "warning",
    "run.duration_s = 1e9",
)
case(
    "sweep-point-too-long",
    "work",
    cmd(
        "sweep",
        lambda f: (
            fast(f),
            write(
                f,
                "s.toml",
                '[sweep]\nbase = "fast.toml"\nset = ["run.duration_s=1e9"]\n'
                '[factors]\n"clients.users" = [5]\n',
            ),
        )[1],
        "--serial",
        "-o",
        P("results"),
    ),
    3,
    "run.duration_s = 1e9",
    "run.max_events",
    within_s=5,
)

# ---- 5. inf and nan, wherever a number is read
NONFINITE = [
    ("backends.0.demand=inf", "backends.0.demand = inf"),
    ("backends.0.demand=nan", "backends.0.demand = nan"),
    ("backends.0.demand=-inf", "backends.0.demand = -inf"),
    ("backends.0.demand=1e999", "backends.0.demand = inf"),
    ('backends.0.demand={dist="exponential", mean=inf}', "backends.0.demand.mean = inf"),
    ('backends.0.demand={dist="gamma", mean=0.02, cv=nan}', "backends.0.demand.cv = nan"),
    ('backends.0.demand={dist="uniform", low=0, high=inf}', "backends.0.demand.high = inf"),
    ('backends.0.demand={dist="lognormal", mean=nan, cv=1}', "backends.0.demand.mean = nan"),
    (
        'backends.0.demand={dist="hyperexponential", mean=0.02, scv=inf}',
        "backends.0.demand.scv = inf",
    ),
    ('backends.0.demand={dist="empirical", samples=[0.1, inf]}', "backends.0.demand.samples.1"),
    ('backends.0.demand={dist="deterministic", value=nan}', "backends.0.demand.value = nan"),
    ("clients.think=inf", "clients.think = inf"),
    ("clients.timeout_s=inf", "clients.timeout_s = inf"),
    ("run.duration_s=inf", "run.duration_s = inf"),
    ("run.warmup=nan", "run.warmup = nan"),
    ("run.confidence=nan", "run.confidence = nan"),
    ("run.max_duration_s=inf", "run.max_duration_s = inf"),
    ("backends.0.speed=inf", "backends.0.speed = inf"),
    ("backends.0.weight=nan", "backends.0.weight = nan"),
    ('clients={kind="open", rate_per_s=inf}', "clients.rate_per_s = inf"),
]
for override, named in NONFINITE:
    case(
        f"set-{override.split('=')[0]}-{override.split('=', 1)[1][:24]}",
        "nonfinite",
        settings_model(override),
        3,
        P("fast.toml"),
        named,
        "finite number",
    )
case(
    "file-literal-inf",
    "nonfinite",
    cmd("validate", lambda f: model(f, FAST.replace("mean = 0.02", "mean = inf"))),
    3,
    P("m.toml"),
    "backends.0.demand.mean = inf",
    "finite number",
)
case(
    "sweep-range-inf",
    "nonfinite",
    cmd(
        "sweep",
        lambda f: (
            fast(f),
            write(
                f,
                "s.toml",
                '[sweep]\nbase = "fast.toml"\ndesign = "lhs"\npoints = 4\n'
                '[factors]\n"clients.think" = {low = 0.5, high = inf}\n',
            ),
        )[1],
        "--serial",
    ),
    3,
    P("s.toml"),
    "high = inf",
    "finite number",
)
for option, value in (("--max", "inf"), ("--max", "nan"), ("--min", "-inf")):
    case(
        f"capacity{option}-{value}",
        "nonfinite",
        cmd(
            "capacity",
            fast,
            "--vary",
            "clients.users",
            "--slo",
            "p95<1",
            "--serial",
            option,
            value,
        ),
        2,
        f"{option} {value}",
        "give a finite number",
    )
for slo in ("p95<inf", "p95<nan", "p95<1e999"):
    case(
        f"capacity-slo-{slo}",
        "nonfinite",
        cmd("capacity", fast, "--vary", "clients.users", "--slo", slo, "--serial"),
        2,
        f"--slo '{slo}'",
        "not a finite number",
        "give a finite target",
        within_s=5,
    )
# capacity's cache of finished evaluations: refused before any simulation, never a silent
# default for an empty name
CAPACITY = ("capacity", fast, "--vary", "clients.users", "--slo", "p95<1", "--serial")
for id, options, parts in (
    ("empty", ("--cache", ""), ("--cache ''", "give a file name")),
    ("and-no-cache", ("--cache", "c.jsonl", "--no-cache"), ("--cache and --no-cache",)),
    ("device", ("--cache", "/dev/zero"), ("--cache /dev/zero", "not a regular file")),
    ("no-folder", ("--cache", "/nonexistent/c.jsonl"), ("/nonexistent", "does not exist")),
    (
        "binary",
        ("--cache", lambda f: write(f, "c.jsonl", bytes(range(256)) * 4)),
        ("--cache", "c.jsonl", "binary file", "--no-cache"),
    ),
):
    case(f"capacity-cache-{id}", "cache", cmd(*CAPACITY, *options), 2, *parts, within_s=5)
for id, options, parts in (
    ("empty", ("--cache", ""), ("--cache ''", "give a file name")),
    ("and-no-cache", ("--cache", "c.jsonl", "--no-cache"), ("--cache and --no-cache",)),
):
    case(
        f"calibrate-cache-{id}",
        "cache",
        cmd("calibrate", "seed001", "--serial", *options),
        2,
        *parts,
        within_s=5,
    )

# ---- 6. the kind / dist tags of tagged tables
case(
    "missing-kind",
    "tags",
    cmd("validate", lambda f: model(f, with_lines(drop=["kind ="]))),
    3,
    P("m.toml"),
    "clients.kind: missing",
    "'closed', 'open', 'sessions', 'ab'",
    "fit kind = 'closed'",
)
case(
    "missing-dist",
    "tags",
    cmd("validate", lambda f: model(f, FAST.replace('dist = "exponential", ', ""))),
    3,
    "clients.think.dist: missing",
    "backends.0.demand.dist: missing",
    "'exponential', 'deterministic'",
)
# mod_jk's worker properties and Jetty's thread budget: out of range, or on the wrong module
for override, named in [
    ("proxy.backend_pool.retries=0", "proxy.backend_pool.retries = 0"),
    ("proxy.backend_pool.recovery_options=40", "proxy.backend_pool.recovery_options = 40"),
    ("proxy.backend_pool.lb.lb_retries=-1", "proxy.backend_pool.lb.lb_retries = -1"),
]:
    case(
        f"set-jk-{override.split('=')[0].rsplit('.', 1)[1]}",
        "range",
        settings_model("proxy.backend_pool.module=mod_jk", override),
        3,
        P("fast.toml"),
        named,
    )
case(
    "jk-property-on-mod_proxy",
    "range",
    settings_model("proxy.backend_pool.reply_timeout_s=2"),
    3,
    P("fast.toml"),
    "reply_timeout_s is a mod_jk worker property",
    'set module = "mod_jk"',
)
case(
    "jetty-acceptors-take-every-thread",
    "range",
    settings_model("backends.0.acceptors=40", "backends.0.selectors=10"),
    3,
    P("fast.toml"),
    "threads = 50 leaves no request thread",
    "raise threads above 50",
)
case(
    "unknown-kind",
    "tags",
    settings_model("clients.kind=swarm"),
    3,
    "clients.kind = 'swarm'",
    "unknown: one of 'closed', 'open', 'sessions', 'ab'",
)
case(
    "misspelt-dist",
    "tags",
    settings_model('backends.0.demand={dist="gama", mean=0.02, cv=1}'),
    3,
    "backends.0.demand.dist = 'gama'",
    "did you mean 'gamma'?",
)
case(
    "kind-a-number",
    "tags",
    settings_model("clients.kind=5"),
    3,
    "clients.kind = 5",
    "one of 'closed'",
)
# --set of another kind leaves out the old kind's own fields (as writing the file with that
# kind would) and says which; what the new kind lacks is named, and so is a field an override
# gives that the new kind has not
case(
    "set-kind-open",
    "tags",
    settings_model("clients.kind=open"),
    3,
    "clients: give exactly one of clients.rate_per_s",
    "--set clients.kind=open left out clients.users = 20, clients.think: parameters of "
    "kind = 'closed' that kind = 'open' does not have",
)
case(
    "set-kind-sessions",
    "tags",
    settings_model("clients.kind=sessions"),
    3,
    "clients.session_rate_per_s: required",
    "left out clients.users = 20",
)
case(
    "set-kind-ab",
    "tags",
    settings_model("clients.kind=ab"),
    3,
    "clients.concurrency: required",
    "left out clients.users = 20, clients.think",
)
case(
    "set-kind-open-with-users",
    "tags",
    settings_model("clients.users=30", "clients.kind=open", "clients.rate_per_s=5"),
    3,
    "clients.users = 30: a parameter of kind = 'closed', not of kind = 'open'",
    "drop users, or set kind = 'closed'",
)
case(
    "dist-field-of-other",
    "tags",
    settings_model('backends.0.demand={dist="exponential", mean=0.02, cv=2}'),
    3,
    "backends.0.demand.cv = 2",
    "a parameter of dist = 'gamma' or 'lognormal', not of dist = 'exponential'",
)
case(
    "dist-missing-field",
    "tags",
    settings_model('backends.0.demand={dist="gamma", mean=0.02}'),
    3,
    "backends.0.demand.cv: required",
    "give cv",
)
case(
    "dist-missing-tag-fits",
    "tags",
    settings_model("clients.think={mean=1}"),
    3,
    "clients.think.dist: missing",
    "its fields mean fit dist = 'exponential'",
)
case(
    "table-a-value",
    "tags",
    settings_model("clients=5"),
    3,
    "clients = 5",
    "must be a table",
)

# ---- 7. --set syntax
SETS = [
    ("clients.users", ("--set 'clients.users'", "expected PATH=VALUE", "backends.0.threads=30")),
    ("=5", ("--set '=5'", "empty parameter path")),
    ("backends.9.threads=3", ("backends.9", "index 9 out of range 0..0")),
    ("backends.x.threads=3", ("backends.x", "must be a list index 0..0")),
    ("clients.users.x=1", ("clients.users is a value, not a table", "set clients.users itself")),
    ("clients.userz=3", ("clients.userz = 3", "did you mean users?")),
    ("backends.0.threadz=3", ("backends.0.threadz = 3", "did you mean threads?")),
    ("run.bogus=1", ("run.bogus = 1", "unknown parameter here", "duration_s")),
    ("clients.users=30\n[run]\nduration_s=1", ("clients.users = '30\\n[run]", "valid integer")),
    ("clients.users=", ("clients.users = ''", "valid integer")),
    ("clients.users=abc", ("clients.users = 'abc'", "valid integer")),
    ("clients.users=1.5", ("clients.users = 1.5", "valid integer")),
    ("clients.users=-5", ("clients.users = -5", "greater than or equal to 1")),
    ("clients.users=" + "9" * 5000, ("clients.users", "...")),
    ("clients.üsers=3", ("clients.üsers = 3", "unknown parameter")),
    ("backends.0.demand={mean=", ("backends.0.demand = '{mean='", "valid number")),
]
for text, parts in SETS:
    case(
        f"set-syntax-{text[:20]!r}",
        "set-syntax",
        settings_model(text),
        3,
        *parts,
    )
for command in ("run", "solve"):
    case(
        f"{command}-set-misspelt",
        "set-syntax",
        settings_model("clients.thinkk=1", command=command),
        3,
        P("fast.toml"),
        "clients.thinkk = 1",
        "did you mean think?",
    )

# ---- 8. outputs that cannot be written (checked before the work)
case(
    "timeseries-missing-folder",
    "outputs",
    lambda f: ["run", fast(f), "--timeseries", f / "no" / "ts.csv"],
    2,
    "--timeseries",
    P("no"),
    "does not exist",
    "mkdir -p",
    within_s=3,
)
case(
    "plot-missing-folder",
    "outputs",
    lambda f: [
        "plot",
        write(f, "ts.csv", "replication,time,x_now\n0,1,2\n"),
        "-o",
        f / "no/x.html",
    ],
    2,
    "--output",
    P("no"),
    "mkdir -p",
)
case(
    "report-missing-folder",
    "outputs",
    lambda f: ["report", write(f, "r.json", "[]"), "-o", f / "no" / "r.html"],
    2,
    "--output",
    P("no"),
    "mkdir -p",
)
case(
    "calibrate-cache-missing-folder",
    "outputs",
    lambda f: ["calibrate", _experiment(f), "--cache", f / "no" / "c.jsonl"],
    2,
    "--cache",
    P("no"),
    "mkdir -p",
)
case(
    "timeseries-a-folder",
    "outputs",
    lambda f: ["run", fast(f), "--timeseries", f],
    2,
    "is a directory",
)

# ---- 9. plot's input: a --timeseries CSV or nothing
PLOT_INPUTS = [
    (
        "other-csv",
        "a,b\n1,2\n",
        ("no column replication or time", "its columns: a, b", "--timeseries FILE.csv"),
    ),
    ("empty", "", ("no column replication or time", "its columns: none")),
    ("header-only", "replication,time,x_now\n", ("no rows for --replication 0", "it has no rows")),
    (
        "other-replication",
        "replication,time,x_now\n1,1,2\n",
        ("--replication 0", "replications 1..1"),
    ),
    (
        "not-a-number",
        "replication,time,x_now\n0,1,abc\n",
        ("row 2", "x_now = 'abc'", "not a number"),
    ),
    (
        "short-row",
        "replication,time,x_now\n0,1\n",
        ("row 2 has 2 cells, the header 3", "--timeseries FILE.csv"),
    ),
    (
        "bad-replication",
        "replication,time,x_now\nzero,1,2\n",
        ("row 2", "replication = 'zero'", "whole number"),
    ),
    ("no-now-column", "replication,time,x\n0,1,2\n", ("no *_now column", "--column", "x")),
]
for name, text, parts in PLOT_INPUTS:
    case(
        f"plot-{name}",
        "plot-input",
        cmd("plot", lambda f, text=text: write(f, "ts.csv", text), "-o", P("x.html")),
        3,
        P("ts.csv"),
        *parts,
    )
case(
    "plot-unknown-column",
    "plot-input",
    cmd(
        "plot",
        lambda f: write(f, "ts.csv", "replication,time,x_now\n0,1,2\n"),
        "-o",
        P("x.html"),
        "-c",
        "nope",
    ),
    3,
    "--column: no column nope",
    "give one of: x_now",
)
case(
    "plot-latin-1",
    "plot-input",
    cmd(
        "plot",
        lambda f: write(f, "ts.csv", "replication,time,café\n".encode("latin-1")),
        "-o",
        P("x.html"),
    ),
    3,
    P("ts.csv"),
    "byte 0xe9",
    "save it as UTF-8",
)

# ---- 10. report's input: a results folder or a reproduce JSON file
REPORT_JSON = [
    ("numbers", "[1, 2, 3]", ("row 0 is not a row",)),
    (
        "strings",
        json.dumps([{"figure": "a", "simulated": "x", "ci_low": 1, "ci_high": 2}]),
        ("row 0: simulated = 'x' is not a number",),
    ),
    ("object", "{}", ("expected a list of rows",)),
    ("empty", "[]", ("no rows",)),
    ("not-json", "{nope", ("Expecting property name",)),
    ("latin-1", '["caf\xe9"]'.encode("latin-1"), ("byte 0xe9",)),
    ("bad-parameters", json.dumps({"parameters": [1], "rows": []}), ("parameters must be a list",)),
]
for name, text, parts in REPORT_JSON:
    case(
        f"report-json-{name}",
        "report-input",
        cmd("report", lambda f, text=text: write(f, "r.json", text), "-o", P("r.html")),
        3,
        P("r.json"),
        *parts,
    )
case(
    "report-folder-without-manifest",
    "report-input",
    cmd("report", lambda f: (f / "res").mkdir() or f / "res", "-o", P("r.html")),
    3,
    P("res"),
    "not a tiersim results directory",
    "run `tiersim sweep` first",
)
case(
    "report-manifest-garbage",
    "report-input",
    cmd("report", lambda f: write(f, "res/sweep.json", "\xff garbage").parent, "-o", P("r.html")),
    3,
    P("res/sweep.json"),
    "unreadable",
)
case(
    "report-manifest-list",
    "report-input",
    cmd("report", lambda f: write(f, "res/sweep.json", "[1]").parent, "-o", P("r.html")),
    3,
    "not a JSON object",
)
case(
    "report-corrupt-point",
    "report-input",
    cmd(
        "report",
        lambda f: (
            (
                write(f, "res/sweep.json", json.dumps({"factors": ["a"], "metrics": ["b"]})),
                write(f, "res/points/p1.parquet", b"not parquet"),
            )[0].parent
        ),
        "-o",
        P("r.html"),
    ),
    3,
    P("res/points/p1.parquet"),
    "not a readable point file",
    "delete it and rerun",
)
case(
    "report-text-file",
    "report-input",
    cmd("report", lambda f: write(f, "r.txt", "hello"), "-o", P("r.html")),
    3,
    P("r.txt"),
    "expected a results directory",
)


# ---- 11. experiments: reproduce and calibrate on a user's own folder
EXPERIMENT = """\
[experiment]
name = "mine"
published = "published.csv"
[[figures]]
column = "throughput"
metric = "throughput"
[[figures]]
column = "response"
metric = "response.mean"
[models]
column = "name"
t100 = "model.toml"
t300 = "model.toml"
[factors.users]
"*" = ["clients.users={value}"]
[[calibrate]]
parameter = "backends.0.demand.mean"
bounds = [0.005, 0.05]
[[fitted]]
name = "t100"
figure = "throughput"
"""
PUBLISHED = "name,users,throughput,response\nt100,100,90,\nt300,300,250,1.5\n"


def _experiment(
    folder: Path,
    published: str | bytes = PUBLISHED,
    spec: str | bytes = EXPERIMENT,
    model_text: str = FAST,
) -> Path:
    where = folder / "exp"
    write(where, "experiment.toml", spec)
    write(where, "published.csv", published)
    write(where, "model.toml", model_text)
    return where


def experiment(command: str, **files) -> Callable[[Path], list]:
    def build(folder: Path) -> list:
        return (
            [command, _experiment(folder, **files), "--no-cache"]
            if command == "calibrate"
            else [
                command,
                _experiment(folder, **files),
            ]
        )

    return build


SHORT_ROW = "name,users,throughput,response\nt100,100,90,\nt300,300,\n"
for command in ("reproduce", "calibrate"):
    case(
        f"{command}-short-row",
        "experiment",
        experiment(command, published=SHORT_ROW),
        3,
        P("exp/published.csv"),
        "line 3 (t300)",
        "3 cells, the header has 4",
        "no cell for response",
        "end the row with a comma per missing cell",
        within_s=3,
    )
EXPERIMENT_CASES = [
    (
        "long-row",
        {"published": PUBLISHED + "t100,1,2,3,4\n"},
        ("line 4 (t100)", "5 cells, the header has 4", "remove the surplus cells"),
    ),
    (
        "not-a-number",
        {"published": PUBLISHED.replace("250", "fast")},
        ("line 3 (t300)", "throughput = 'fast' is not a number", "leave the cell empty"),
    ),
    (
        "inf-figure",
        {"published": PUBLISHED.replace("250", "inf")},
        ("throughput = 'inf'", "finite number"),
    ),
    (
        "latin-1-csv",
        {"published": PUBLISHED.replace("name,", "nâme,").encode("latin-1")},
        ("published.csv", "byte 0xe2", "save it as UTF-8"),
    ),
    ("binary-toml", {"spec": bytes(range(256))}, ("experiment.toml", "binary file")),
    (
        "no-models",
        {"spec": EXPERIMENT.replace("[models]", "[modelz]")},
        ("experiment.toml: models: required ([models] with column", "modelz: unknown key"),
    ),
    (
        "model-a-number",
        {"spec": EXPERIMENT.replace('t300 = "model.toml"', "t300 = 5")},
        ("models.t300 = 5", "must be a model file name"),
    ),
    (
        "unknown-metric",
        {"spec": EXPERIMENT.replace('"response.mean"', '"response.meen"')},
        ("metric 'response.meen'", "did you mean response.mean", "tiersim run MODEL --json"),
    ),
    (
        "factor-without-entry",
        {"spec": EXPERIMENT.replace('"*" =', '"100" =')},
        ("factors.users has no entry for '300'",),
    ),
    (
        "missing-model",
        {"spec": EXPERIMENT.replace('t300 = "model.toml"', 't300 = "nope.toml"')},
        ("nope.toml", "no such model file"),
    ),
    (
        "bad-override",
        {"spec": EXPERIMENT.replace("clients.users={value}", "clients.userz={value}")},
        ("clients.userz = 100", "did you mean users?"),
    ),
    (
        "scale-a-string",
        {"spec": EXPERIMENT.replace('metric = "throughput"', 'metric = "throughput"\nscale = "x"')},
        ("figures[0].scale = 'x'", "must be a non-zero number"),
    ),
    (
        "figures-not-a-list",
        {"spec": "figures = 5\n" + EXPERIMENT.replace("[[figures]]", "[[figurez]]")},
        ("experiment.toml: figures = 5: must be a list ([[figures]] tables)",),
    ),
    ("not-toml", {"spec": "[experiment\n"}, ("experiment.toml", "not valid TOML")),
    (
        "unknown-key",
        {"spec": EXPERIMENT.replace('name = "mine"', 'name = "mine"\nwarmup = 10')},
        ("experiment.toml: experiment.warmup = 10: unknown key: did you mean warmup_s?",),
    ),
    (
        "fitted-column-misspelt",
        {"spec": EXPERIMENT.replace('name = "t100"', 'nmae = "t100"')},
        ("fitted[0].nmae: 'nmae' is not a column of published.csv (did you mean 'name'?",),
    ),
]
for name, files, parts in EXPERIMENT_CASES:
    case(f"reproduce-{name}", "experiment", experiment("reproduce", **files), 3, *parts, within_s=5)
CALIBRATE_CASES = [
    (
        "bounds-inf",
        EXPERIMENT.replace("[0.005, 0.05]", "[0.005, inf]"),
        ("bounds", "finite", "[0.005, inf]"),
    ),
    (
        "start-a-string",
        EXPERIMENT.replace("bounds = [0.005, 0.05]", 'bounds = [0.005, 0.05]\nstart = "x"'),
        ("experiment.toml: calibrate[0].start = 'x': must be a valid number",),
    ),
    (
        "fitted-withheld",
        EXPERIMENT.replace('figure = "throughput"', 'figure = "response"'),
        ("withheld", "remove it from [[fitted]]"),
    ),
    (
        "no-calibrate",
        EXPERIMENT.split("[[calibrate]]")[0],
        ("no [[calibrate]] entries", "bounds = [0.001, 0.1]"),
    ),
    (
        "path-not-a-number",
        EXPERIMENT.replace("backends.0.demand.mean", "backends.0.demand.meen"),
        ("backends.0.demand.meen", "did you mean mean?"),
    ),
]
for name, spec, parts in CALIBRATE_CASES:
    case(
        f"calibrate-{name}", "experiment", experiment("calibrate", spec=spec), 3, *parts, within_s=5
    )
case(
    "reproduce-unknown-name",
    "experiment",
    cmd("reproduce", "seed999"),
    3,
    "no experiment 'seed999'",
    "seed001",
)

# ---- 12. sweep files
SWEEPS = [
    (
        "missing-base",
        '[sweep]\nbase = "nope.toml"\n[factors]\n"clients.users" = [5]\n',
        ("nope.toml", "no such model file", "relative to"),
    ),
    (
        "unknown-factor",
        '[sweep]\nbase = "fast.toml"\n[factors]\n"clients.userz" = [5]\n',
        ("factors.'clients.userz'", "no parameter clients.userz", "tiersim schema"),
    ),
    (
        "range-reversed",
        '[sweep]\nbase = "fast.toml"\ndesign = "lhs"\npoints = 4\n[factors]\n"clients.think" = {low = 2, high = 1}\n',
        ("low (2) must be below high (1)",),
    ),
    (
        "points-zero",
        '[sweep]\nbase = "fast.toml"\ndesign = "lhs"\npoints = 0\n[factors]\n"clients.think" = {low = 1, high = 2}\n',
        ("sweep.points = 0", "greater than or equal to 1"),
    ),
    (
        "grid-with-range",
        '[sweep]\nbase = "fast.toml"\n[factors]\n"clients.think" = {low = 1, high = 2}\n',
        ("is a range", "give a list"),
    ),
    ("model-not-sweep", FAST, ("this is a model file, not a sweep file",)),
    (
        "unknown-field",
        '[sweep]\nbase = "fast.toml"\nbogus = 1\n[factors]\n"clients.users" = [5]\n',
        ("sweep.bogus = 1", "unknown field"),
    ),
    (
        "empty-values",
        '[sweep]\nbase = "fast.toml"\n[factors]\n"clients.users" = []\n',
        ("has no values",),
    ),
]
for name, text, parts in SWEEPS:
    case(
        f"sweep-{name}",
        "sweep",
        cmd(
            "sweep",
            lambda f, text=text: (fast(f), write(f, "s.toml", text))[1],
            "--serial",
            "-o",
            P("results"),
        ),
        3,
        P("s.toml"),
        *parts,
    )

# ---- 13. pipes closed early, and the command line itself
case(
    "schema-head",
    "pipes",
    cmd("schema"),
    0,
    process=True,
    pipe_to=("head", "-1"),
    absent=("Traceback", "error", "Exception"),
)
case(
    "schema-json-head",
    "pipes",
    cmd("schema", "--json"),
    0,
    process=True,
    pipe_to=("head", "-c", "10"),
    absent=("Traceback", "error", "Exception"),
)
case(
    "missing-model-file",
    "command-line",
    cmd("validate", P("nope.toml")),
    3,
    P("nope.toml"),
    "no such model file",
)
case("replications-zero", "command-line", cmd("run", fast, "-r", "0"), 2, "--replications", "0")
case("seed-negative", "command-line", cmd("run", fast, "--seed", "-1"), 2, "--seed")
case(
    "capacity-unknown-path",
    "command-line",
    cmd("capacity", fast, "--vary", "clients.userz", "--slo", "p95<1", "--serial"),
    3,
    "clients.userz",
)
case(
    "capacity-slo-garbage",
    "command-line",
    cmd("capacity", fast, "--vary", "clients.users", "--slo", "p95<abc", "--serial"),
    2,
    "--slo 'p95<abc'",
    "'abc' is not a number",
    "e.g. p95<1.0",
)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_with_a_message(case: Case, tmp_path: Path) -> None:
    answer = outcome(case, tmp_path)
    assert verdict(case, answer) == "ok", (answer.kind, answer.code, answer.stderr[-2000:])
    assert answer.code == case.code, (answer.code, answer.stderr[-2000:])
    for part in case.parts:
        text = part(tmp_path) if callable(part) else part
        assert text in answer.stderr, (text, answer.stderr[-2000:])
    for text in case.absent:
        assert text not in answer.stderr, (text, answer.stderr[-2000:])
    if case.within_s is not None:
        assert answer.seconds < case.within_s, answer.seconds


def test_the_suite_covers_every_class_with_150_cases() -> None:
    classes = {c.klass for c in CASES}
    assert len(CASES) >= 150, len(CASES)
    assert {"encoding", "nesting", "non-regular", "work", "nonfinite", "tags"} <= classes
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


# --------------------------------------------------------------------------- garbage
def _answered(answer: Answer, *named: str) -> None:
    """A command fed garbage answers: no bug, no hang; a refusal names the input."""
    assert answer.kind == "answered", (answer.kind, answer.stderr[-2000:])
    assert answer.code in (0, 2, 3, 4), (answer.code, answer.stderr[-2000:])
    if answer.code != 0:
        assert any(n in answer.stderr for n in named), answer.stderr[-2000:]


GARBAGE = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@GARBAGE
@given(st.binary(max_size=400))
def test_random_bytes_as_model_sweep_and_series(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("bytes")
    path = write(folder, "garbage.toml", data)
    _answered(cli(["validate", path], seconds=5), str(path))
    _answered(cli(["sweep", path, "--serial", "-o", folder / "r"], seconds=5), str(path))
    _answered(cli(["plot", path, "-o", folder / "x.html"], seconds=5), str(path))


KEYS = st.sampled_from(
    [
        "clients", "kind", "users", "think", "dist", "mean", "cv", "backends", "name",
        "threads", "cores", "demand", "run", "duration_s", "requests", "replications",
        "proxy", "workers", "balancer", "policy", "database", "db_calls", "classes", "mix",
        "rate_per_s", "interarrival", "schedule", "samples", "low", "high", "value", "scv",
        "warmup", "meta", "count", "weight", "jvm", "heap_mb", "timeout_s", "ramp",
    ]
) | st.text(min_size=1, max_size=6)  # fmt: skip
SCALARS = (
    st.integers(-(10**6), 10**6)
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.text(max_size=8)
    | st.sampled_from(["closed", "open", "sessions", "ab", "exponential", "gamma", "none"])
    | st.sampled_from([0, 1, 0.5, 1e308, 5e-324, -0.0, 10**30])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return (
        "{"
        + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}" for k, v in value.items())
        + "}"
    )  # fmt: skip


def toml_document(document: dict) -> str:
    return "".join(
        f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}\n" for k, v in document.items()
    )


@GARBAGE
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_random_toml_models(tmp_path_factory, document: dict) -> None:
    path = write(tmp_path_factory.mktemp("toml"), "m.toml", toml_document(document))
    _answered(cli(["validate", path], seconds=5), str(path))


BASE_PATHS = [
    "clients.kind", "clients.users", "clients.think", "clients.think.mean", "clients.think.dist",
    "backends.0.threads", "backends.0.cores", "backends.0.demand", "backends.0.demand.mean",
    "backends.0.name", "run.duration_s", "run.replications", "run.seed", "run", "clients",
    "backends", "backends.0", "meta.name", "balancer.policy", "run.warmup",
]  # fmt: skip


@GARBAGE
@given(
    st.lists(
        st.text(max_size=30)
        | st.builds(lambda p, v: f"{p}={v}", st.sampled_from(BASE_PATHS), st.text(max_size=20))
        | st.builds(lambda p, v: f"{p}={toml_value(v)}", st.sampled_from(BASE_PATHS), VALUES),
        min_size=1,
        max_size=3,
    )
)
def test_random_set_strings(tmp_path_factory, overrides: list[str]) -> None:
    path = fast(tmp_path_factory.mktemp("set"))
    args: list = ["validate", path]
    for override in overrides:
        args += ["--set", override]
    _answered(cli(args, seconds=5), str(path), "--set")
