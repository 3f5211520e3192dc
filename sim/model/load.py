"""Read a model file, apply `--set path=value` overrides, validate, and explain failures.

Every failure becomes a `ModelError` whose message names the file, the dotted field path,
the offending value and what is allowed: users see that, never a traceback.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


def parse_model(
    raw: dict[str, Any],
    source: str = "<model>",
    overrides: Iterable[str] = (),
    base_dir: Path | None = None,
) -> Model:
    data = copy.deepcopy(raw)
    for override in overrides:
        apply_override(data, override, source)
    renamed = renamed_parameters(data)
    if renamed:
        raise ModelError(
            f"{source}: renamed parameter{'s' if len(renamed) > 1 else ''} (one word for one "
            "thing from model file to result column):\n"
            + "\n".join(f"  {old} is now {new}{why}: rename it" for old, new, why in renamed)
        )
    try:
        return Model.model_validate(data, context={"base_dir": base_dir or Path.cwd()})
    except ValidationError as exc:
        raise ModelError(format_validation_error(exc, source)) from None


def renamed_parameters(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(old path, new path, note) of every parameter given under a name it no longer has."""
    found: list[tuple[str, str, str]] = []
    backends = data.get("backends")
    if isinstance(backends, list):
        for i, group in enumerate(backends):
            if isinstance(group, dict) and "cpu" in group:
                found.append(
                    (
                        f"backends.{i}.cpu",
                        f"backends.{i}.demand",
                        " (as proxy.demand and database.demand)",
                    )
                )
    database = data.get("database")
    if isinstance(database, dict) and "disk" in database:
        found.append(
            ("database.disk", "database.disk_demand", " (database.disks stays the spindle count)")
        )
    proxy = data.get("proxy")
    pool = proxy.get("backend_pool") if isinstance(proxy, dict) else None
    if isinstance(pool, dict) and "max_connections" in pool:
        found.append(
            (
                "proxy.backend_pool.max_connections",
                "proxy.backend_pool.max",
                " (mod_proxy's max; backends.N.max_connections is Tomcat's maxConnections)",
            )
        )
    return found


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
        raise ModelError(
            f"--set {override!r}: {'.'.join(path)}: {key!r} must be a list index 0..{len(node) - 1}"
        ) from None
    if not 0 <= index < len(node):
        raise ModelError(
            f"--set {override!r}: {'.'.join(path)}: index {index} out of range 0..{len(node) - 1}"
        )
    return index


def format_validation_error(exc: ValidationError, source: str) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        value = error.get("input")
        kind = error["type"]
        raw_loc = [str(part) for part in error["loc"]]
        # A distribution is "a number or a {dist = ...} table": report only the branch the
        # user meant (a table's errors for a table, a number's for a number).
        if isinstance(value, dict) and kind in {"float_type", "float_parsing", "int_type"}:
            continue
        if (
            not isinstance(value, dict)
            and kind in {"model_type", "dict_type", "model_attributes_type"}
            and any(_is_union_tag(part) for part in raw_loc)
        ):
            continue
        location = ".".join(part for part in raw_loc if not _is_union_tag(part))
        message = error["msg"].removeprefix("Value error, ")
        shown = "" if isinstance(value, dict) or kind == "missing" else f" = {value!r}"
        if kind == "extra_forbidden":
            message = "unknown parameter (misspelt? `tiersim schema` lists the parameters)"
        line = f"  {location or '(top level)'}{shown}: {message}"
        if line not in problems:
            problems.append(line)
    count = len(problems)
    return "\n".join(
        [f"{source}: invalid model ({count} problem{'s' if count != 1 else ''})", *problems]
    )


_TAGS = {
    "closed",
    "open",
    "sessions",
    "ab",
    "exponential",
    "deterministic",
    "uniform",
    "gamma",
    "lognormal",
    "empirical",
    "hyperexponential",
    "float",
    "int",
    "str",
}


def _is_union_tag(part: Any) -> bool:
    """pydantic puts union members (a discriminator value, `constrained-float`,
    `function-after[...]`, `tagged-union[...]`) in error locations; they are not field names."""
    if not isinstance(part, str):
        return False
    return (
        part in _TAGS
        or "[" in part
        or part.startswith(("constrained-", "function-", "tagged-union", "lax-"))
    )
