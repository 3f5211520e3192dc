"""Models on the package's face (`import sim`; docs/api.md): a model file or a dict,
validated, with `--set`-style overrides -- the checks of `sim.model.load`, behind the face's
own checks of its arguments (a list of overrides is not one string read letter by letter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.api import arguments
from sim.api.arguments import ArgumentError
from sim.model.schema import Model


def load_model(path: str | Path, overrides: Sequence[str] = ()) -> Model:
    """A model file (TOML), validated, with `--set`-style overrides
    (`"backends.0.threads=30"`); raises `ModelError`, one line per problem."""
    from sim.model.load import load_model as load

    return load(arguments.path(path, "path", "model file"), arguments.overrides(overrides))


def parse_model(
    data: Mapping[str, Any],
    source: str = "<model>",
    overrides: Sequence[str] = (),
    base_dir: str | Path | None = None,
) -> Model:
    """A model from a dict (e.g. `tomllib.loads(text)`), validated as a file would be and named
    `source` in messages; `base_dir` resolves relative file names in it (default: the current
    directory)."""
    from sim.model.load import parse_model as parse

    if not isinstance(data, Mapping):
        raise ArgumentError(
            "data", f"expected a dict of the model file's tables, not {type(data).__name__}"
        )
    if not isinstance(source, str):
        raise ArgumentError("source", f"expected a name for messages (str), not {source!r}")
    folder = arguments.optional_path(base_dir, "base_dir", "folder")
    return parse(dict(data), source, arguments.overrides(overrides), folder)
