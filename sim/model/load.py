"""Read a model file, apply `--set path=value` overrides, validate, and explain failures.

Every failure becomes a `ModelError` whose message names the file, the dotted field path,
the offending value and what is allowed: users see that, never a traceback.
"""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from sim.model.schema import Model


class ModelError(ValueError):
    """A model file or an override that cannot be used, explained for a person."""


def load_model(path: str | Path, overrides: Iterable[str] = ()) -> Model:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{path}: not valid TOML: {exc}") from None
    return parse_model(raw, source=str(path), overrides=overrides, base_dir=path.parent)


def parse_model(raw: dict[str, Any], source: str = "<model>", overrides: Iterable[str] = (),
                base_dir: Path | None = None) -> Model:
    data = copy.deepcopy(raw)
    for override in overrides:
        apply_override(data, override, source)
    try:
        return Model.model_validate(data, context={"base_dir": base_dir or Path.cwd()})
    except ValidationError as exc:
        raise ModelError(format_validation_error(exc, source)) from None


def apply_override(data: dict[str, Any], override: str, source: str = "<model>") -> None:
    """`backends.0.threads=30`: the same dotted path as in the file (list items by index)."""
    if "=" not in override:
        raise ModelError(f"--set {override!r}: expected PATH=VALUE, e.g. backends.0.threads=30")
    path, text = override.split("=", 1)
    path = path.strip()
    keys = [k for k in path.split(".") if k]
    if not keys:
        raise ModelError(f"--set {override!r}: empty parameter path")
    value = parse_value(text.strip())
    node: Any = data
    for depth, key in enumerate(keys[:-1]):
        node = _child(node, key, keys[: depth + 1], override, create=True)
    last = keys[-1]
    if isinstance(node, list):
        index = _index(last, node, keys, override)
        node[index] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ModelError(f"--set {override!r}: {'.'.join(keys[:-1])} is a value, not a table")


def parse_value(text: str) -> Any:
    """A TOML value (`30`, `1.5`, `true`, `"x"`, `{dist="exponential", mean=0.03}`), else a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _child(node: Any, key: str, path: list[str], override: str, create: bool) -> Any:
    if isinstance(node, list):
        return node[_index(key, node, path, override)]
    if not isinstance(node, dict):
        raise ModelError(f"--set {override!r}: {'.'.join(path[:-1])} is a value, not a table")
    if key not in node:
        if not create:
            raise ModelError(f"--set {override!r}: no {'.'.join(path)}")
        node[key] = {}
    return node[key]


def _index(key: str, node: list, path: list[str], override: str) -> int:
    try:
        index = int(key)
    except ValueError:
        raise ModelError(f"--set {override!r}: {'.'.join(path)}: {key!r} must be a list index 0..{len(node) - 1}") from None
    if not 0 <= index < len(node):
        raise ModelError(f"--set {override!r}: {'.'.join(path)}: index {index} out of range 0..{len(node) - 1}")
    return index


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid model ({exc.error_count()} problem{'s' if exc.error_count() > 1 else ''})"]
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"] if not _is_union_tag(part))
        message = error["msg"].removeprefix("Value error, ")
        value = error.get("input")
        shown = "" if isinstance(value, dict) or error["type"] == "missing" else f" = {value!r}"
        where = location or "(top level)"
        if error["type"] == "extra_forbidden":
            message = "unknown parameter (misspelt? `tiersim schema` lists the parameters)"
        elif error["type"] == "union_tag_invalid" or error["type"] == "union_tag_not_found":
            message = f"{message}"
        lines.append(f"  {where}{shown}: {message}")
    return "\n".join(lines)


def _is_union_tag(part: Any) -> bool:
    # pydantic puts the discriminator value or member type in the location of union errors.
    return isinstance(part, str) and (part in {"closed", "open", "sessions", "ab"} or part.startswith("function-") or part in {
        "exponential", "deterministic", "uniform", "gamma", "lognormal", "empirical", "hyperexponential", "float", "int"})
