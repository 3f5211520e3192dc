"""The sweep's progress bar: points done, failures, elapsed time and ETA, on stderr when it
is a terminal; nothing at all when it is not (a log file or a CI job gets the summary only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class SweepProgress:
    def __init__(self, console: Console, label: str = "points") -> None:
        self.console = console
        self.label = label
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> SweepProgress:
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn(self.label),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self.bar.start()
        return self

    def start(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task(self.label, total=total, completed=done, failed=0)

    def point(self, record: dict, done: int, total: int, failed: int) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=done, total=total, failed=failed)

    def __exit__(self, *exc) -> Literal[False]:
        if self.bar is not None:
            self.bar.stop()
        return False
