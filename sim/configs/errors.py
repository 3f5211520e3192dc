"""One-line errors for configuration files: `file:line: what was expected; the fix`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Where:
    """A place in a configuration file, as provenance and in messages (`file:line`)."""

    file: Path
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class ConfigError(ValueError):
    """A configuration file that cannot be read as its server reads it.

    The message is one line: where (`file:line`, or the file alone), what was expected
    there, and the fix."""

    def __init__(self, where: Where | Path | str, expected: str, fix: str) -> None:
        self.where = where
        super().__init__(f"{where}: {expected}; {fix}")
