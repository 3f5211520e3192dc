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
    (`"backends.0.threads=30"`); raises `ModelError`, one line per problem.  A `tiersim
    from-config` model carries the placeholders the overrides left unfilled: the calls that
    run, solve or search it refuse it as they refuse the file (`sim.api.placeholders`)."""
    from sim.api.placeholders import carry
    from sim.files import read_toml
    from sim.model.load import load_model as load

    where, extra = arguments.path(path, "path", "model file"), arguments.overrides(overrides)
    model = load(where, extra)
    return carry(model, read_toml(where, "model file"), str(where), extra)


def parse_model(
    data: Mapping[str, Any],
    source: str = "<model>",
    overrides: Sequence[str] = (),
    base_dir: str | Path | None = None,
) -> Model:
    """A model from a dict (e.g. `tomllib.loads(text)`), validated as a file would be and named
    `source` in messages; `base_dir` resolves relative file names in it (default: the current
    directory).  A `tiersim from-config` model's unfilled placeholders go with it, as
    `load_model`'s do."""
    from sim.model.load import parse_model as parse

    if not isinstance(data, Mapping):
        raise ArgumentError(
            "data", f"expected a dict of the model file's tables, not {type(data).__name__}"
        )
    if not isinstance(source, str):
        raise ArgumentError("source", f"expected a name for messages (str), not {source!r}")
    from sim.api.placeholders import carry

    folder = arguments.optional_path(base_dir, "base_dir", "folder")
    extra = arguments.overrides(overrides)
    return carry(parse(dict(data), source, extra, folder), data, source, extra)
