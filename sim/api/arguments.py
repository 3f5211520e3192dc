"""The package face's checks of its arguments: what a call cannot mean is refused before any
work, with one `ArgumentError` naming the parameter, the value and what is allowed -- never a
traceback from deep inside, never a value silently replaced (`replications=0` is not "the
model's default", `seed=-1` is not a seed)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from sim.model.schema import Model

# The model file's own ranges (`run.replications`, `run.seed` in sim/model/schema.py).
MAX_REPLICATIONS = 10_000
SEED_LIMIT = 2**63


class ArgumentError(ValueError, TypeError):
    """An argument of a `sim.*` function that it cannot use: the wrong type, or a value out of
    its range.  `parameter` names the argument; the message says what is allowed.  Both a
    ValueError and a TypeError, so either `except` catches it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _type_name(value: Any) -> str:
    return type(value).__name__


def model_source(value: Any, parameter: str = "model") -> Model | Path:
    """A `Model`, or a model file's path (a str or a `Path`)."""
    from sim.model.schema import Model

    if isinstance(value, Model):
        return value
    if isinstance(value, (str, Path)) and str(value):
        return Path(value)
    raise ArgumentError(
        parameter,
        f"expected a sim.Model or a model file's path, not {_type_name(value)} {_shown(value)}",
    )


def path(value: Any, parameter: str, what: str = "file") -> Path:
    if isinstance(value, (str, Path)) and str(value):
        return Path(value)
    raise ArgumentError(
        parameter,
        f"expected a {what}'s path (str or Path), not {_type_name(value)} {_shown(value)}",
    )


def optional_path(value: Any, parameter: str, what: str = "file") -> Path | None:
    return None if value is None else path(value, parameter, what)


def paths(value: Any, parameter: str, what: str = "file") -> list[Path]:
    """One path or a sequence of them (a bare string is one path, not its letters)."""
    if isinstance(value, (str, Path)):
        return [path(value, parameter, what)]
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return [path(item, parameter, what) for item in value]
    raise ArgumentError(
        parameter,
        f"expected a list of {what} paths, not {_type_name(value)} {_shown(value)}",
    )


def strings(value: Any, parameter: str, example: str) -> tuple[str, ...]:
    """A sequence of strings; one string alone is refused (it would be read letter by letter)."""
    if isinstance(value, str):
        raise ArgumentError(
            parameter, f"expected a list of strings, e.g. [{example!r}], not a string"
        )
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ArgumentError(
        parameter, f"expected a list of strings, e.g. [{example!r}], not {_shown(value)}"
    )


def overrides(value: Any, parameter: str = "overrides") -> tuple[str, ...]:
    return strings(value, parameter, "backends.0.threads=30")


def _integer(value: Any, parameter: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(
            parameter, f"expected a whole number, not {_type_name(value)} {_shown(value)}"
        )
    return value


def integer(value: Any, parameter: str, low: int, high: int | None = None, fix: str = "") -> int:
    """A whole number in [low, high] (high: no limit when None)."""
    number = _integer(value, parameter)
    if number < low or (high is not None and number > high):
        allowed = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ArgumentError(parameter, f"{number} is out of range: expected {allowed}{fix}")
    return number


def optional_integer(
    value: Any, parameter: str, low: int, high: int | None = None, fix: str = ""
) -> int | None:
    return None if value is None else integer(value, parameter, low, high, fix)


def replications(value: Any, parameter: str = "replications", low: int = 1) -> int | None:
    """None (the model's `run.replications`) or a count the model file would accept."""
    fix = "; None runs the model's run.replications" if low == 1 else ""
    return optional_integer(value, parameter, low, MAX_REPLICATIONS, fix)


def seed(value: Any, parameter: str = "seed") -> int | None:
    """None (the model's `run.seed`) or a root seed the model file would accept."""
    return optional_integer(
        value, parameter, 0, SEED_LIMIT - 1, " (a root seed is not negative; None: run.seed)"
    )


def number(
    value: Any,
    parameter: str,
    *,
    above: float | None = None,
    at_least: float | None = None,
    below: float | None = None,
    unit: str = "",
) -> float:
    """A finite real number with the given bounds (`above`/`below` exclusive)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ArgumentError(
            parameter, f"expected a finite number{unit}, not {_type_name(value)} {_shown(value)}"
        )
    x = float(value)
    if (
        (above is not None and not x > above)
        or (at_least is not None and not x >= at_least)
        or (below is not None and not x < below)
    ):
        parts = [
            f"> {above:g}" if above is not None else "",
            f">= {at_least:g}" if at_least is not None else "",
            f"< {below:g}" if below is not None else "",
        ]
        raise ArgumentError(
            parameter,
            f"{x:g} is out of range: expected {' and '.join(p for p in parts if p)}{unit}",
        )
    return x


def optional_number(value: Any, parameter: str, **bounds: Any) -> float | None:
    return None if value is None else number(value, parameter, **bounds)


def flag(value: Any, parameter: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(parameter, f"expected True or False, not {_shown(value)}")
    return value


def choice(value: Any, parameter: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ArgumentError(
            parameter,
            f"{_shown(value)} is not one of {', '.join(repr(a) for a in allowed)}",
        )
    return value


def optional_choice(value: Any, parameter: str, allowed: Sequence[str]) -> str | None:
    return None if value is None else choice(value, parameter, allowed)


def text(value: Any, parameter: str, example: str) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ArgumentError(parameter, f"expected a string, e.g. {example!r}, not {_shown(value)}")


def optional_text(value: Any, parameter: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ArgumentError(parameter, f"expected a string or None, not {_shown(value)}")


def callback(value: Any, parameter: str) -> Callable | None:
    if value is None or callable(value):
        return value
    raise ArgumentError(parameter, f"expected a function or None, not {_shown(value)}")


def workers(value: Any, parameter: str = "workers") -> int | None:
    """1: in this process; None: one process per core; n: n processes."""
    return optional_integer(value, parameter, 1, None, " (None: one process per core)")


def optional_limit(value: Any, parameter: str) -> int | Literal["none"] | None:
    """None, a whole number >= 1, or "none": no limit (as a pool's negative size says)."""
    if value is None or value == "none":
        return value
    if isinstance(value, str):
        raise ArgumentError(
            parameter, f'expected a whole number >= 1 or "none" (no limit), not {_shown(value)}'
        )
    return integer(value, parameter, 1, None, ' or "none" (no limit)')


def counts(value: Any, parameter: str, low: int = 1) -> tuple[int, ...]:
    """One whole number or a sequence of them, each >= low."""
    items = (value,) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ArgumentError(
            parameter, f"expected a whole number or a list of them, not {_shown(value)}"
        )
    return tuple(integer(item, parameter, low) for item in items)
