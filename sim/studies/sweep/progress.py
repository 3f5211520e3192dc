"""The sweep's progress: points done, failures, elapsed time and ETA, on stderr: a live bar
on a terminal, plain lines elsewhere (a log file or a CI job: every 5 % or 10 s, nothing for
a sweep of a few seconds; `sim.present.progress`)."""

from __future__ import annotations

from typing import Literal

from rich.console import Console

from sim.present.progress import Reporter


class SweepProgress:
    def __init__(self, console: Console, label: str = "points") -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.reporter = Reporter(
            console,
            label,
            columns=(
                TextColumn(label),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            ),
            fields={"failed": 0},
            transient=False,
        )

    def __enter__(self) -> SweepProgress:
        self.reporter.__enter__()
        return self

    def start(self, done: int, total: int) -> None:
        self.reporter.update(done, total, failed=0)

    def point(self, record: dict, done: int, total: int, failed: int) -> None:
        self.reporter.update(done, total, failed=failed)

    def __exit__(self, *exc) -> Literal[False]:
        return self.reporter.__exit__(*exc)
