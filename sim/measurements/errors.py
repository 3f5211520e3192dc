"""The one error the measurement readers raise: which file, which line, what was expected."""

from __future__ import annotations

from pathlib import Path


class MeasurementError(ValueError):
    """A measurement file that cannot be read as the format it was given as.

    `str()` is one line: ``FILE:LINE: what was found; expected what``. The CLI prints it and
    exits with code 3, like an invalid model file.
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def shorten(text: str, limit: int = 60) -> str:
    """A value as an error message quotes it: repr, cut to `limit` characters."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"
