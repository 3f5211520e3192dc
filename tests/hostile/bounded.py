"""Run one reader on one hostile input in a child process that cannot take more than
`MEMORY_BYTES` of address space or `TIMEOUT_S` of time: a reader that would exhaust the machine
fails the test instead of the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MEMORY_BYTES = 500 * 2**20  # issue 41's bar: no refused input over 500 MB
TIMEOUT_S = 10.0  # ... and none over 10 s before its one-line refusal
ROOT = Path(__file__).resolve().parents[2]

# The child prints what the reader raised, as `ErrorType: message`, and nothing on success.
CHILD = """
import sys
kind, args = sys.argv[1], sys.argv[2:]
try:
    if kind == "workers":
        from sim.configs.workers_properties import read_workers_properties
        read_workers_properties(args[0])
    elif kind == "httpd":
        from sim.configs.httpd import read_httpd
        read_httpd(args[0])
    elif kind == "tomcat":
        from sim.configs.tomcat import read_tomcat
        read_tomcat(args[0])
    elif kind == "jetty":
        from sim.configs.jetty import read_jetty
        read_jetty(args[0])
    elif kind == "jtl":
        from sim.measurements.formats import jtl
        log = jtl.read(args[0])
        print(f"read {len(log.frame)} samples over {log.frame.start_s.max() - log.frame.start_s.min():.6g} s")
    elif kind == "access-log":
        from sim.measurements.formats import accesslog
        accesslog.read(args[0], '%h %l %u %t "%r" %>s %b %D')
    elif kind == "ab-gnuplot":
        from sim.measurements.formats import ab
        ab.read_gnuplot(args[0])
    elif kind in ("k6", "otel"):
        import importlib
        importlib.import_module(f"sim.measurements.formats.{kind}").read(args[0])
    elif kind == "k6-summary":
        from sim.measurements.formats import k6_summary
        k6_summary.aggregate_rows(args[0], "run")
    elif kind == "gatling-stats":
        from sim.measurements.classes import ClassMap
        from sim.measurements.formats import gatling_stats
        gatling_stats.aggregate_rows(args[0], "run", ClassMap())
    elif kind == "locust":
        from sim.measurements.classes import ClassMap
        from sim.measurements.formats import locust
        locust.aggregate_rows(args[0], "run", ClassMap(), None)
    elif kind == "pg-log":
        from sim.measurements.database import postgres_log
        postgres_log.read(args[0], "run", None)
    elif kind == "jtl-windows":  # the import of a JTL in windows of WINDOW_S seconds
        import os
        from sim.measurements.importer import ImportOptions, import_runs
        import_runs("jtl", [args[0]], ImportOptions(window_s=float(os.environ["WINDOW_S"])))
    elif kind in ("jtl-import", "k6-import"):  # the whole import, to its table's rows
        from sim.measurements.importer import ImportOptions, import_runs
        import_runs(kind.removesuffix("-import"), [args[0]], ImportOptions())
    elif kind == "jmx":
        from sim.measurements.formats import jmeter_plan
        jmeter_plan.read(args[0])
    elif kind == "mysql-slow":
        from sim.measurements.database import mysql
        mysql.read_slow(args[0], "run", None)
    else:
        raise SystemExit(f"unknown reader {kind}")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


@dataclass
class Outcome:
    output: str  # the child's standard output: the error's `type: message`, or nothing
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.output.strip().splitlines()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def read_bounded(kind: str, path: Path, **environment: str) -> Outcome:
    """The reader `kind` on `path`, with the limits of `sim.files` set by `environment`."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **environment}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 3,  # past the bar the test fails below; this ends a hang
        preexec_fn=_limit_memory,
        env=env,
        cwd=ROOT,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"the reader died (exit {done.returncode}): {done.stderr[-500:]}"
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return Outcome(done.stdout, done.stderr, seconds)


def refused(
    kind: str,
    path: Path | str,
    error: str,
    *expected: str,
    at: Path | None = None,
    **environment: str,
) -> str:
    """The one-line refusal of `path`, checked for its error type, the file it names (`at`, if
    not `path`: an included file), the words expected, and the bounds of time."""
    outcome = read_bounded(kind, Path(path), **environment)
    assert len(outcome.lines) == 1, outcome.output
    line = outcome.lines[0]
    assert line.startswith(f"{error}: {at or path}"), line
    for words in expected:
        assert words in line, line
    assert outcome.seconds < TIMEOUT_S, f"{outcome.seconds:.1f} s: {line}"
    return line
