"""What every command of `tiersim` shares: the consoles, failing with an exit code, progress,
the checks before a run, output files, executors."""

from __future__ import annotations

import csv
import errno
import functools
import io
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from sim.exit_codes import ExitCode
from sim.files import FileProblem

err = Console(stderr=True, highlight=False, soft_wrap=True)


class Stdout(Console):
    """Standard output.  rich exits 1 (the code of a bug) when the reader closes the pipe;
    this one exits 0 quietly, as the commands' own output does (`Commands`)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        silence_stdout()
        raise SystemExit(ExitCode.OK)


def console() -> Console:
    """Standard output; wide enough for the result tables when piped (rich assumes 80)."""
    out = Stdout(highlight=False)
    return out if out.is_terminal else Stdout(highlight=False, width=120)


def fail(message: str, code: int) -> NoReturn:
    from rich.markup import escape

    # escaped: messages quote TOML ("[[fitted]]", "[0.2, 0.1]") that rich would read as markup
    err.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True)
    sys.exit(code)


def echo_json(document, why: str = "not a number", default=None) -> None:
    """A `--json` document on standard output as strict JSON: a value that is not a number
    (NaN, infinity) is written as null and named on standard error, never a traceback."""
    from sim.present.json_text import json_text, unknown_note

    text, unknown = json_text(document, default=default)
    note = unknown_note(unknown, why)
    if note is not None:
        err.print(f"note: {note}", markup=False, highlight=False)
    click.echo(text)


def load_calibration_or_fail(path: str):
    """`--calibration FILE` (run, capacity): a bad file ends in one line naming the field."""
    from sim.studies.calibration.saved import CalibrationFileError, load_calibration

    try:
        return load_calibration(path)
    except CalibrationFileError as exc:
        fail(str(exc), ExitCode.USAGE)


def load_measured_level_or_fail(path: str, run: str | None):
    """`--measured TABLE [--measured-run RUN]` (run): a level that is not one measured window,
    or a table that cannot be read, ends in one line naming the file and the fix."""
    from sim.measurements.errors import MeasurementError
    from sim.studies.measured_level import MeasuredLevelError, level_from_table

    try:
        return level_from_table(path, run)
    except (MeasurementError, MeasuredLevelError) as exc:
        fail(str(exc), ExitCode.MODEL)


def load_or_fail(path: str, overrides: tuple[str, ...]):
    from sim.model.load import ModelError, load_model  # here: `tiersim --help` needs no schema

    try:
        model = load_model(path, overrides)
    except ModelError as exc:
        fail(str(exc), ExitCode.MODEL)
    refuse_placeholders(path, overrides)
    return model


def refuse_placeholders(
    path: str | Path, overrides: tuple[str, ...], filled: tuple[str, ...] = (), setting="--set"
) -> None:
    """Exit 3 naming every placeholder of a `from-config` model that nothing has filled
    (`filled`: the paths a sweep's factors or capacity's --vary give values)."""
    from sim.configs.placeholders import refusal, unfilled

    left = unfilled(path, overrides, filled)
    if left:
        context = click.get_current_context(silent=True)
        command = context.command_path if context is not None else "this command"
        fail(refusal(path, left, command, setting), ExitCode.MODEL)


class Commands(click.Group):
    """The command group; a reader that closes the pipe early (`tiersim schema | head -1`) ends
    the command quietly with exit 0: nothing went wrong that the user did not choose.

    Ctrl-C, and SIGTERM (a scheduler's or `kill`'s polite stop, made an interrupt here), end
    every command in one line with 130 (143 for SIGTERM), whichever command it is: one that
    keeps finished work says where before it exits; click's own "Aborted!" and exit 1 (the code
    of a bug) are never reached."""

    def invoke(self, ctx: click.Context):
        previous = catch_termination()
        try:
            return self._invoke(ctx)
        finally:
            if previous is not None:  # a command run inside another program (a test's runner)
                import signal

                signal.signal(signal.SIGTERM, previous)

    def _invoke(self, ctx: click.Context):
        try:
            try:
                try:
                    return super().invoke(ctx)
                finally:
                    sys.stdout.flush()  # here, where a closed pipe can still be told apart
            except OSError as exc:
                if exc.errno != errno.EPIPE:
                    raise
                silence_stdout()
                sys.exit(ExitCode.OK)
        except KeyboardInterrupt:
            err.print("interrupted", markup=False, highlight=False)
            sys.exit(ExitCode.TERMINATED if _terminated else ExitCode.INTERRUPTED)
        except FileProblem as exc:  # a file, or a limit's setting (TIERSIM_MAX_...), named
            fail(str(exc), ExitCode.USAGE)
        except SystemExit as exc:
            if exc.code == ExitCode.INTERRUPTED and _terminated:
                sys.exit(ExitCode.TERMINATED)
            raise


_terminated = False  # set by SIGTERM's handler: the interrupt exits 143, not 130


def catch_termination():
    """SIGTERM raises KeyboardInterrupt, so that it ends a command as Ctrl-C does (finished
    work kept, one line) and the exit code is 143 rather than Python's silent death.  The
    handler it replaces is returned (None off the main thread, where none can be set)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None  # a signal handler can only be set in the main thread

    installed_by = os.getpid()

    def terminate(signum, frame) -> None:
        global _terminated
        if os.getpid() != installed_by:  # a forked worker: it ends as a worker should
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        _terminated = True
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, terminate)


def silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass  # not a real file (a test's buffer): nothing will be flushed to a pipe


def refuse_unstable(model_file, model, plan=None) -> None:
    """Exit 4 naming every station the open workload overloads (for run and solve alike)."""
    from sim.model.stability import overloads

    problems = overloads(model, plan)
    if not problems:
        return
    lines = [
        f"{model_file}: unstable configuration: the offered load exceeds capacity, queues would grow forever"
    ]
    lines += [f"  {p.path}: {p.detail} (utilization {p.utilization:.3g} >= 1)" for p in problems]
    lines.append(
        "  fix: lower the arrival rate, add capacity at the named parameter, or bound a queue "
        "(proxy.listen_backlog with proxy.workers)"
    )
    fail("\n".join(lines), ExitCode.UNSTABLE)


def announce_work(model_file, model, replications, timeseries: bool) -> None:
    """Refuse a run that would take hours (exit 3), and say before a long one starts how long."""
    from sim.model.workload import check, estimate, warning

    work = estimate(model, replications=replications, timeseries=timeseries)
    refusal = check(work, model.run.max_events)
    if refusal is not None:
        fail(f"{model_file}: {refusal}", ExitCode.MODEL)
    note = warning(work)
    if note is not None:
        err.print(f"warning: {model_file}: {note}", markup=False)


def need_sweep_extra() -> None:
    """Sweeps, reports and capacity searches need the `sweep` extra (pandas, pyarrow, dask)."""
    import importlib.util

    missing = [name for name in ("pandas", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        fail(
            f"this command needs {', '.join(missing)}: pip install 'tiersim[sweep]'", ExitCode.USAGE
        )


# --connect-timeout's default: with the command's start-up, a scheduler that is not there is
# said within the 10 s a user waits for an answer (a slow network: raise it)
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RunOn:
    """Where a command's simulations run, as `executor_options` read it: `--serial`,
    `--workers N` (local processes), `--scheduler ADDRESS` (a Dask cluster) or
    `--local-cluster N` (a Dask LocalCluster here); at most one of them."""

    serial: bool = False
    workers: int | None = None
    scheduler: str | None = None
    local_cluster: int | None = None
    default_workers: int | None = None  # without any option: 1 runs serially, None one per core
    connect_timeout_s: float = CONNECT_TIMEOUT_S

    def given(self) -> list[str]:
        return [
            name
            for name, value in (
                ("--serial", self.serial),
                ("--workers", self.workers),
                ("--scheduler", self.scheduler),
                ("--local-cluster", self.local_cluster),
            )
            if value
        ]

    def check(self) -> None:
        """Exit 2 when two ways to run were given (before any work)."""
        chosen = self.given()
        if len(chosen) > 1:
            fail(f"choose one way to run: {' and '.join(chosen)} were both given", ExitCode.USAGE)

    def executor(self):
        """The executor (a context manager); a Dask cluster is started or reached here."""
        self.check()
        workers = self.workers or self.default_workers
        # where serial is the default, `--workers 1` is the default; elsewhere it is one
        # process apart from this one (a sweep's point that crashes it is recorded as failed)
        serial = self.serial or (
            self.default_workers == 1
            and workers == 1
            and not self.scheduler
            and not self.local_cluster
        )
        if self.scheduler:
            check_scheduler(self.scheduler)
            check_protocol(self.scheduler)
            probe_scheduler(self.scheduler, self.connect_timeout_s)
        return executor_for(
            serial, workers, self.scheduler, self.local_cluster, self.connect_timeout_s
        )


SCHEDULER = re.compile(r"(?:(tcp|tls|ucx|ws|wss)://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def check_scheduler(address: str) -> None:
    """Exit 2 before any work when `--scheduler` is no Dask address (`tcp://host:8786`)."""
    text = address.strip()
    if text.startswith("inproc://"):
        return  # a cluster in this very process (tests, notebooks)
    match = SCHEDULER.fullmatch(text)
    if match is not None and 0 < int(match.group(3)) < 65536:
        return
    if match is not None:
        why = f"port {match.group(3)} is not a TCP port (1 to 65535)"
    elif "://" in text and text.split("://", 1)[0] not in ("tcp", "tls", "ucx", "ws", "wss"):
        why = (
            f"{text.split('://', 1)[0]}:// is not a Dask scheduler's protocol (the dashboard's "
            "http:// page is not the scheduler)"
        )
    else:
        why = "expected PROTOCOL://HOST:PORT"
    fail(
        f"--scheduler {address}: {why}; give the scheduler's address, e.g. tcp://host:8786",
        ExitCode.USAGE,
    )


def check_protocol(address: str) -> None:
    """Exit 2 before any connection when `--scheduler`'s protocol needs what this client lacks:
    tls:// and wss:// Dask's TLS settings (a certificate authority and the client's
    certificate), ucx:// the UCX bindings; Dask itself fails on either with an error of its
    own internals."""
    match = SCHEDULER.fullmatch(address.strip())
    protocol = match.group(1) if match is not None else None
    if protocol in ("tls", "wss"):
        try:
            from distributed.security import Security
        except ImportError:
            return  # said with the executor: --scheduler needs dask.distributed
        if Security().get_connection_args("client").get("ssl_context") is None:
            fail(
                f"--scheduler {address}: {protocol}:// needs Dask's TLS settings, and none are "
                "set; set distributed.comm.tls.ca-file, .client.cert and .client.key in the Dask "
                "configuration (or DASK_DISTRIBUTED__COMM__TLS__CA_FILE, ...), or use tcp://",
                ExitCode.USAGE,
            )
    elif protocol == "ucx":
        import importlib.util

        if not any(importlib.util.find_spec(name) for name in ("ucp", "ucxx")):
            fail(
                f"--scheduler {address}: ucx:// needs the UCX bindings (ucx-py, or "
                "distributed-ucxx), which are not installed; install them, or use tcp://",
                ExitCode.USAGE,
            )


def probe_scheduler(address: str, timeout_s: float) -> None:
    """Exit 2 within `timeout_s` when no Dask scheduler answers at a tcp:// address: nothing
    listens (refused, unreachable), or something accepts and stays silent, where a scheduler
    sends its handshake at once (distributed.comm.tcp).  Dask's own connect retries for
    minutes in the second case."""
    import socket

    match = SCHEDULER.fullmatch(address.strip())
    if match is None or match.group(1) == "ucx":
        return  # inproc://, or UCX's own transport: Dask's own connect says
    host, port = match.group(2).strip("[]"), int(match.group(3))
    speaks_first = match.group(1) in (None, "tcp")  # tls and websockets wait for the client
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            if not speaks_first:
                return  # something listens: the handshake is Dask's (within the timeout)
            connection.settimeout(timeout_s)
            if connection.recv(1):
                return
            problem = "the connection was closed without a word"
    except TimeoutError:
        problem = f"nothing answered within {timeout_s:g} s"
    except OSError as exc:
        problem = exc.strerror or str(exc) or type(exc).__name__
    fail(
        f"--scheduler {address}: no Dask scheduler there ({problem}); check the address and "
        "that the scheduler runs (a slow network: --connect-timeout SECONDS)",
        ExitCode.USAGE,
    )


def executor_options(
    default_workers: int | None = None,
    what: str = "the simulations",
    same: str = "the numbers are the same for any number",
):
    """`--workers`, `--serial`, `--scheduler` and `--local-cluster` for every command that runs
    many simulations (sweep, calibrate, reproduce, capacity, run --calibration), passed to the
    command as one `run_on` (`RunOn`).  `default_workers` = 1: serial unless asked; None: one
    process per core.  Every task carries its own seed: the numbers are the same on each
    (`same` says so in --workers' help, or what else the number changes)."""
    default = "serially" if default_workers == 1 else "one per core"

    def decorate(command):
        @functools.wraps(command)
        def with_run_on(
            *args, serial, workers, scheduler, local_cluster, connect_timeout, **kwargs
        ):
            run_on = RunOn(
                serial, workers, scheduler, local_cluster, default_workers, connect_timeout
            )
            return command(*args, run_on=run_on, **kwargs)

        options = [
            click.option(
                "--workers",
                "-w",
                type=click.IntRange(1, 4096),
                help=f"local worker processes for {what} (default: {default}; {same})",
            ),
            click.option(
                "--serial", is_flag=True, help=f"run {what} one after another in this process"
            ),
            click.option(
                "--scheduler",
                metavar="ADDRESS",
                help=f"run {what} on an existing Dask cluster, e.g. tcp://host:8786",
            ),
            click.option(
                "--connect-timeout",
                "connect_timeout",
                type=click.FloatRange(0.1, 3600),
                default=CONNECT_TIMEOUT_S,
                show_default=True,
                metavar="SECONDS",
                help="how long to wait for --scheduler to answer before saying it does not",
            ),
            click.option(
                "--local-cluster",
                "local_cluster",
                type=click.IntRange(1, 4096),
                metavar="N",
                help=f"run {what} on a Dask LocalCluster of N worker processes",
            ),
        ]
        for option in reversed(options):
            with_run_on = option(with_run_on)
        return with_run_on

    return decorate


def executor_for(
    serial: bool,
    workers: int | None,
    scheduler: str | None,
    local_cluster: int | None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
):
    from sim.studies.executor import DaskExecutor, ProcessExecutor, SerialExecutor

    if serial:
        return SerialExecutor()
    if scheduler or local_cluster:
        try:
            return DaskExecutor(
                address=scheduler, local_workers=local_cluster, connect_timeout_s=connect_timeout_s
            )
        except ImportError:
            fail(
                "--scheduler / --local-cluster need dask.distributed: pip install 'tiersim[sweep]'",
                ExitCode.USAGE,
            )
        except (OSError, TimeoutError) as exc:
            first = " ".join(str(exc).split())[:200] or type(exc).__name__
            fail(
                f"--scheduler {scheduler}: no Dask scheduler answered within "
                f"{connect_timeout_s:g} s ({first}); check the address and that the scheduler "
                "runs, or wait longer with --connect-timeout SECONDS",
                ExitCode.USAGE,
            )
    return ProcessExecutor(workers)


def writable(path: str, option: str) -> None:
    """Exit 2 before any work when an output file cannot be written (a missing folder)."""
    from sim.files import FileProblem, check_output

    try:
        check_output(path, option)
    except FileProblem as exc:
        fail(str(exc), ExitCode.USAGE)


def kept_file(cache: str | None, no_cache: bool, default: Path | None) -> Path | None:
    """Where a study keeps its finished evaluations (calibrate's, capacity's): `--cache FILE`,
    else `default` (in `.tiersim-cache/` of the current folder, made here; None: none), None
    with `--no-cache`; exit 2 for both options, an empty name, or a file that cannot be
    written."""
    import contextlib

    if no_cache and cache is not None:
        fail("--cache and --no-cache: give one", ExitCode.USAGE)
    if cache is not None and not cache.strip():
        fail("--cache '': give a file name (or --no-cache for none)", ExitCode.USAGE)
    path = None if no_cache else Path(cache) if cache else default
    if path is None:
        return None
    if not cache:
        with contextlib.suppress(OSError):  # the default folder; else said just below
            path.parent.mkdir(parents=True, exist_ok=True)
    writable(str(path), "--cache")
    return path


def resumable_file(default: Path | None, what: str) -> Path | None:
    """The default file of a command that keeps its finished work only to resume it after an
    interrupt (run's replications, import's files): its folder made; None, with a warning
    naming why, where it cannot be written (the command runs as it did before it kept any)."""
    from sim.files import FileProblem, check_output

    if default is None:
        return None
    try:
        default.parent.mkdir(parents=True, exist_ok=True)
        check_output(default, "--cache")
    except (OSError, FileProblem) as exc:
        err.print(
            f"warning: {what} are not kept ({exc}); --cache FILE keeps them elsewhere",
            markup=False,
        )
        return None
    return default


def where_kept(path: Path | None) -> str:
    """What an interrupted study says of its finished evaluations (`kept_file`)."""
    if path is None:
        return "no evaluation was kept (--no-cache): a rerun starts again"
    return f"finished evaluations are kept in {path}; rerun the same command to go on"


def timeseries_writer(path: str):
    # stays open for the whole run: the sink writes each sample as it comes
    try:
        handle = open(Path(path), "w", newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        fail(f"--timeseries {path}: cannot write ({exc.strerror}); write elsewhere", ExitCode.USAGE)
    state: dict = {"writer": None, "columns": None}

    def sink(replication: int, time: float, metrics: dict[str, float]) -> None:
        if state["writer"] is None:
            state["columns"] = ["replication", "time", *sorted(metrics)]
            state["writer"] = writer = csv.writer(handle)
            writer.writerow(state["columns"])
        row = {"replication": replication, "time": time, **metrics}
        state["writer"].writerow([csv_cell(row.get(c)) for c in state["columns"]])

    return sink, handle.close


def csv_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if value != value else f"{value:.9g}"
    return str(value)


def progress_reporter(label: str, bar: bool = True, fields: tuple[str, ...] = ()):
    """Progress on stderr: a live bar on a terminal, rate-limited plain lines elsewhere (a CI
    log, nohup, a notebook), nothing for a command of a few seconds.  `fields` are said beside
    the count (`update(done, total, name=value)`), on the bar as in the lines."""
    from sim.present.progress import Reporter

    if not fields:
        return Reporter(err, label, bar=bar)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    columns = (
        label,
        BarColumn(),
        MofNCompleteColumn(),
        *(TextColumn(f"{{task.fields[{name}]}}") for name in fields),
        TimeRemainingColumn(),
    )
    return Reporter(err, label, bar=bar, columns=columns, fields=dict.fromkeys(fields, ""))
