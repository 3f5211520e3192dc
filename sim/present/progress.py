"""Progress of a long command on standard error: a live bar on a terminal, plain lines
anywhere else.

A live bar redraws itself with cursor movements, which only a terminal understands: in a CI
log, a file of `nohup` or a notebook's `!tiersim ...` output (a pseudo-terminal with
FORCE_COLOR set, whose cursor movements show up as raw escapes) it would be garbage.  There
the reporter writes plain lines instead, without any escape, and only as often as they say
something: after the first few seconds (a short command stays quiet), then every 5 % of the
work or every 10 s, and once at the end if it said anything before.  A step that takes long
without an update (a fit's evaluation, a slow row) is covered by a heartbeat: a line whenever
nothing was said for HEARTBEAT_S, so that a log never goes 10 s without one.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Literal

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

QUIET_S = 5.0  # no plain line before this much time: a short command prints nothing
EVERY_S = 10.0  # at most this long between plain lines while updates come
STEP = 0.05  # and a line at every further 5 % of the work
HEARTBEAT_S = 7.0  # a plain line when nothing was said for this long: never 10 s of silence


def in_notebook() -> bool:
    """Inside a Jupyter kernel, or a command it started (`!tiersim ...`)."""
    return "JPY_PARENT_PID" in os.environ or "ipykernel" in sys.modules


def live_terminal(console: Console) -> bool:
    """Whether `console` can show a live bar: a real terminal, not a notebook, not TERM=dumb."""
    if not console.is_terminal or in_notebook() or os.environ.get("TERM") == "dumb":
        return False
    try:
        descriptor = console.file.fileno()
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return True  # a console told it is a terminal (force_terminal): believe it
    return os.isatty(descriptor)


class Reporter:
    """`update(done, total)` for counted work, `say(text)` for events (an evaluation).

    On a terminal: a rich progress bar (`columns` make it; `fields` are its task fields; none
    with `bar=False`), and events printed as they come.  Elsewhere: rate-limited plain lines
    on `stream`."""

    def __init__(
        self,
        console: Console,
        label: str,
        *,
        live: bool | None = None,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        columns: tuple | None = None,
        fields: dict | None = None,
        transient: bool = True,
        bar: bool = True,
        heartbeat: bool | None = None,
    ) -> None:
        self.console = console
        self.label = label
        self.live = live_terminal(console) if live is None else live
        self.stream = stream
        self.clock = clock
        self.columns = columns
        self.fields = dict(fields or {})
        self.transient = transient
        self.wants_bar = bar
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.started = clock()
        self.last_line: float | None = None
        self.next_mark = STEP
        self.said = False
        # the heartbeat runs on the real clock only (a test's clock stands still between calls)
        self.heartbeat = clock is time.monotonic if heartbeat is None else heartbeat
        self.lock = threading.Lock()  # the heartbeat's lines and the command's never interleave
        self.latest: tuple[int, int | None] | None = None  # the last update's (done, total)
        self.written = 0  # plain lines so far
        self.stopped = threading.Event()
        self.beater: threading.Thread | None = None

    # ------------------------------------------------------------------ context
    def __enter__(self) -> Reporter:
        self.started = self.clock()
        if self.live and self.wants_bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            columns = self.columns or (
                self.label,
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
            )
            self.bar = Progress(*columns, console=self.console, transient=self.transient)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=None, **self.fields)
        elif not self.live and self.heartbeat:
            self.stopped.clear()
            self.beater = threading.Thread(target=self._beat, daemon=True)
            self.beater.start()
        return self

    def __exit__(self, *exc) -> Literal[False]:
        if self.bar is not None:
            self.bar.stop()
        if self.beater is not None:
            self.stopped.set()
            self.beater.join()
            self.beater = None
        return False

    def _beat(self) -> None:
        """While the command works: a line when nothing was said for HEARTBEAT_S (and the
        quiet start is over).  It gets its turn even during a compiled run, whose loop comes
        back to Python for every block of random numbers."""
        while not self.stopped.wait(0.5):
            now, written = self.clock(), self.written
            since = now - (self.started if self.last_line is None else self.last_line)
            if since < HEARTBEAT_S or now - self.started < QUIET_S:
                continue
            if self.latest is None:
                text = f"{self.label}: working, {_duration(now - self.started)} elapsed"
            else:
                done, total = self.latest
                fraction = done / total if total else None
                text = self._progress_text(done, total, fraction, now)
            self._line(text, unless_more_than=written)

    # ------------------------------------------------------------------ reports
    def update(self, done: int, total: int | None, **fields) -> None:
        self.fields.update(fields)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=done, total=total, **fields)
            return
        if self.live:
            return
        self.latest = (done, total)
        now = self.clock()
        fraction = done / total if total else None
        finished = total is not None and done >= total
        due = (
            (finished and self.said)
            or (self.last_line is None and now - self.started >= QUIET_S)
            or (self.last_line is not None and now - self.last_line >= EVERY_S)
            or (
                fraction is not None
                and fraction >= self.next_mark
                and now - self.started >= QUIET_S
            )
        )
        if not due:
            return
        if fraction is not None:
            while self.next_mark <= fraction:
                self.next_mark += STEP
        self._line(self._progress_text(done, total, fraction, now))

    def say(self, text: str) -> None:
        """An event: printed on a terminal, a plain line elsewhere when one is due."""
        if self.live:
            (self.bar.console if self.bar is not None else self.console).print(text, markup=False)
            return
        now = self.clock()
        if (self.last_line is None and now - self.started >= QUIET_S) or (
            self.last_line is not None and now - self.last_line >= EVERY_S
        ):
            self._line(f"{text} ({_duration(now - self.started)} elapsed)")

    def milestone(self, text: str) -> None:
        """A rare event that starts a long stretch of work (a cross-validation fold): printed
        off a terminal too, where `say` keeps to its rate, once the command has run past its
        first quiet seconds (a command of a few seconds says nothing)."""
        if self.live:
            self.say(text)
            return
        now = self.clock()
        if self.last_line is None and now - self.started < QUIET_S:
            return
        self._line(f"{text} ({_duration(now - self.started)} elapsed)")

    # ------------------------------------------------------------------ plain lines
    def _progress_text(self, done: int, total: int | None, fraction, now: float) -> str:
        elapsed = now - self.started
        text = f"{self.label}: {done}" + (f"/{total}" if total is not None else "")
        if fraction is not None:
            text += f" ({fraction:.0%})"
        extra = ", ".join(f"{v} {k}" for k, v in self.fields.items() if v)
        if extra:
            text += f", {extra}"
        text += f", {_duration(elapsed)} elapsed"
        if fraction and fraction < 1:
            text += f", about {_duration(elapsed * (1 - fraction) / fraction)} left"
        return text

    def _line(self, text: str, unless_more_than: int | None = None) -> None:
        stream = self.stream or sys.stderr
        with self.lock:
            if unless_more_than is not None and self.written > unless_more_than:
                return  # the command said something meanwhile: no heartbeat needed
            try:
                stream.write(text + "\n")
                stream.flush()
            except (OSError, ValueError):
                return  # stderr closed: progress is not worth failing the command for
            self.last_line = self.clock()
            self.said = True
            self.written += 1


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
