"""Read a model file, apply `--set path=value` overrides, validate, and explain failures.

Every failure becomes a `ModelError` whose message names the file, the dotted field path,
the offending value and what is allowed: users see that, never a traceback.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import tomllib
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from sim.files import FileProblem, parse_toml, read_text, too_deep
from sim.model.autoscale import refuse_autoscale
from sim.model.schema import Model


class ModelError(ValueError):
    """A model file or an override that cannot be used, explained for a person."""


def load_model(path: str | Path, overrides: Iterable[str] = ()) -> Model:
    path = Path(path)
    try:
        raw = _model_file(path)
    except FileProblem as exc:
        raise ModelError(str(exc)) from None
    if "clients" not in raw and "sweep" in raw:
        raise ModelError(
            f"{path}: this is a sweep file, not a model file; run it with `tiersim sweep {path}`"
        )
    if "clients" not in raw and "experiment" in raw:
        raise ModelError(
            f"{path}: this is an experiment file, not a model file; run it with "
            f"`tiersim reproduce {path.parent}`"
        )
    return parse_model(raw, source=str(path), overrides=overrides, base_dir=path.parent)


# A study loads the same model file for each of its hundreds of runs (a calibration's rows, a
# prediction's draws): the same text is parsed once in a process (read each time: the file may
# change).  `parse_model` copies the data before any override touches it.
_PARSED: dict[tuple[str, str], dict[str, Any]] = {}


def _model_file(path: Path) -> dict[str, Any]:
    text = read_text(path, "model file")
    raw = _PARSED.get((str(path), text))
    if raw is None:
        raw = parse_toml(text, path, "model file")
        if len(_PARSED) >= 32:
            _PARSED.clear()
        _PARSED[str(path), text] = raw
    return raw


def parse_model(
    raw: dict[str, Any],
    source: str = "<model>",
    overrides: Iterable[str] = (),
    base_dir: Path | None = None,
    check_only: bool = False,
) -> Model:
    """The model, validated; `check_only` also returns one with a table no engine simulates
    yet (`tiersim from-config` checks what it writes), which is otherwise refused."""
    data = copy.deepcopy(raw)
    given: list[str] = []
    for override in overrides:
        apply_override(data, override, source, given)
    renamed = renamed_parameters(data)
    if renamed:
        raise ModelError(
            f"{source}: renamed parameter{'s' if len(renamed) > 1 else ''} (one word for one "
            "thing from model file to result column):\n"
            + "\n".join(f"  {old} is now {new}{why}: rename it" for old, new, why in renamed)
        )
    try:
        model = Model.model_validate(data, context={"base_dir": base_dir or Path.cwd()})
    except ValidationError as exc:
        notes = [str(_provenance(data).get(path, "")) for path in given]
        switched = [
            f"  ({note})" for note in notes if note.startswith("--set ") and "left out" in note
        ]
        raise ModelError("\n".join([format_validation_error(exc, source), *switched])) from None
    except RecursionError:  # data built in code, not read by parse_toml's depth check
        raise ModelError(f"{source}: values nested too deeply to be a model") from None
    refused = None if check_only else refuse_autoscale(model, source)
    if refused is not None:  # a parameter that silently did nothing would be a defect
        raise ModelError(refused)
    return model


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


def apply_override(
    data: dict[str, Any], override: str, source: str = "<model>", given: list[str] | None = None
) -> None:
    """`backends.0.threads=30`: the same dotted path as in the file (list items by index).

    `given` holds the paths set by the overrides before this one (this one's is appended).
    Setting a table's tag to another kind (`clients.kind=closed` over a file's `ab` clients)
    leaves out the fields only the old kind has (ab's `concurrency`, `requests`), as writing
    the file anew with that kind would, and says so in `meta.provenance`; a field an override
    gave stays, so that validation names it rather than have it silently do nothing."""
    if "=" not in override:
        raise ModelError(
            f"--set {_short(override)}: expected PATH=VALUE, e.g. backends.0.threads=30"
        )
    path, text = override.split("=", 1)
    path = path.strip()
    keys = [k for k in path.split(".") if k]
    if not keys:
        raise ModelError(f"--set {_short(override)}: empty parameter path")
    value = parse_value(text.strip())
    if too_deep(value) is not None:
        raise ModelError(
            f"--set {_short(override)}: the value nests arrays or tables too deeply; a model "
            "parameter nests a few levels"
        )
    node: Any = data
    for depth, key in enumerate(keys[:-1]):
        node = _child(node, key, keys[: depth + 1], override, create=True)
    last = keys[-1]
    if isinstance(node, list):
        index = _index(last, node, keys, override)
        _keeps_its_family(node[index], value, ".".join(keys), source)
        node[index] = value
    elif isinstance(node, dict):
        _keeps_its_family(node.get(last), value, ".".join(keys), source)
        if last in ("kind", "dist") and node.get(last) != value:
            _switch_kind(data, node, keys, value, given or [])
        node[last] = value
    else:
        raise ModelError(
            f"--set {_short(override)}: {'.'.join(keys[:-1])} is a value, not a table; "
            f"set {'.'.join(keys[:-1])} itself"
        )
    if given is not None:
        given.append(".".join(keys))


def _switch_kind(
    data: dict[str, Any], table: dict[str, Any], keys: list[str], tag: Any, given: list[str]
) -> None:
    """Drop the fields of `table` that its new kind `tag` does not have (and their
    provenance), except those an earlier override gave; record what was left out."""
    members: dict[Any, type[BaseModel]] = {}
    for annotation in _annotations_at(keys[:-1]):
        members.update(_union_members(annotation).get(keys[-1], {}))
    where, old = ".".join(keys[:-1]), table.get(keys[-1])
    if not (isinstance(tag, str) and isinstance(old, str) and tag in members and old in members):
        return  # an unknown kind: validation names the allowed ones
    # only the old kind's own fields: a misspelt one stays, for validation to name
    own = set(members[old].model_fields) - set(members[tag].model_fields)
    dropped = [name for name in list(table) if name in own and f"{where}.{name}" not in given]
    provenance = _provenance(data)
    shown = []
    for name in dropped:
        value = table.pop(name)
        path = f"{where}.{name}"
        shown.append(path if isinstance(value, (dict, list)) else f"{path} = {_shown(value, 30)}")
        for key in [p for p in provenance if p == path or p.startswith(f"{path}.")]:
            del provenance[key]
    switch = f"--set {'.'.join(keys)}={tag}"
    provenance[".".join(keys)] = (
        f"{switch} left out {', '.join(shown)}: parameters of {keys[-1]} = {old!r} that "
        f"{keys[-1]} = {tag!r} does not have"
        if shown
        else switch
    )


def _provenance(data: dict[str, Any]) -> dict[str, Any]:
    """The model's `meta.provenance` table (made when absent), for notes on overrides."""
    meta = data.setdefault("meta", {})
    if not isinstance(meta, dict):
        return {}
    provenance = meta.setdefault("provenance", {})
    return provenance if isinstance(provenance, dict) else {}


def _keeps_its_family(current: Any, value: Any, path: str, source: str) -> None:
    """Refuse a bare number over a random distribution: in a model file a bare number is a
    deterministic time, so `--set backends.0.demand=0.01` over `{dist = "exponential", ...}`
    would silently drop the randomness that `backends.0.demand.mean=0.01` keeps (a different
    queue: every replication the same).  Zero is no time in any family, so it stays allowed;
    a non-finite or negative number is left to validation, which names it."""
    if not (isinstance(current, dict) and isinstance(current.get("dist"), str)):
        return
    family = current["dist"]
    if family == "deterministic" or isinstance(value, bool):
        return
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return
    table = f'{path}={{dist="deterministic", value={value!r}}}'
    keep = (
        f"write {path}.mean={value!r} to keep its {family} shape, or {table}"
        if "mean" in current
        else f"give its {family} table, or {table} for a constant"
    )
    article = "an" if family[0] in "aeiou" else "a"
    raise ModelError(
        f"{source}: --set {path}={value!r}: {path} is {article} {family} distribution and a bare number would make "
        f"it deterministic; {keep}"
    )


def constant_times(model: BaseModel, path: str = "") -> list[tuple[str, float]]:
    """(dotted path, value) of every distribution the model file (or an override) gives as a
    bare number above zero: a constant, as documented, which `tiersim validate` names so that
    nobody reads `demand = 0.01` as an exponential demand of that mean.  Defaults are not
    named: nobody wrote them."""
    found: list[tuple[str, float]] = []
    for name, field in type(model).model_fields.items():
        if name not in model.model_fields_set:
            continue
        value = getattr(model, name)
        where = f"{path}.{name}" if path else name
        distribution = any(m.__name__ == "DeterministicSpec" for m in _flatten(field.annotation))
        if distribution and isinstance(value, (int, float)) and not isinstance(value, bool):
            if value > 0:
                found.append((where, float(value)))
        else:
            found += _constant_times_in(value, where)
    return found


def _constant_times_in(value: Any, where: str) -> list[tuple[str, float]]:
    if isinstance(value, BaseModel):
        return constant_times(value, where)
    if isinstance(value, (list, tuple)):
        return [t for i, item in enumerate(value) for t in _constant_times_in(item, f"{where}.{i}")]
    if isinstance(value, dict):
        return [
            t for key, item in value.items() for t in _constant_times_in(item, f"{where}.{key}")
        ]
    return []


def parse_value(text: str) -> Any:
    """A TOML value (`30`, `1.5`, `true`, `"x"`, `{dist="exponential", mean=0.03}`), else a bare string.
    A table or array is a fresh copy: the overrides after it may set its fields."""
    value = _parsed_value(text)
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


@functools.lru_cache(maxsize=4096)
def _parsed_value(text: str) -> Any:
    # remembered: a study's runs repeat the same overrides (its settings, a calibration's
    # fitted values) hundreds of times, each parsed as a TOML document
    try:
        document = tomllib.loads(f"v = {text}")
    except (ValueError, RecursionError):  # TOMLDecodeError, or an integer of 5 000 digits
        return text
    # one value, not `30\n[run]\nx = 1`: anything more is a string, which validation names
    return document["v"] if list(document) == ["v"] else text


def _short(text: str, limit: int = 80) -> str:
    """An override as quoted in a message: whole when short, else its start."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def _child(node: Any, key: str, path: list[str], override: str, create: bool) -> Any:
    if isinstance(node, list):
        return node[_index(key, node, path, override)]
    if not isinstance(node, dict):
        raise ModelError(
            f"--set {_short(override)}: {'.'.join(path[:-1])} is a value, not a table; "
            f"set {'.'.join(path[:-1])} itself"
        )
    if key not in node:
        if not create:
            raise ModelError(f"--set {_short(override)}: no {'.'.join(path)}")
        node[key] = {}
    return node[key]


def _index(key: str, node: list, path: list[str], override: str) -> int:
    if not node:
        raise ModelError(
            f"--set {_short(override)}: {'.'.join(path[:-1])} is an empty list; give its items "
            "in the model file"
        )
    try:
        index = int(key)
    except ValueError:
        raise ModelError(
            f"--set {_short(override)}: {'.'.join(path)}: {key!r} must be a list index 0..{len(node) - 1}"
        ) from None
    if not 0 <= index < len(node):
        raise ModelError(
            f"--set {_short(override)}: {'.'.join(path)}: index {index} out of range 0..{len(node) - 1}"
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
        if isinstance(value, dict) and kind in {
            "float_type",
            "float_parsing",
            "int_type",
            "finite_number",
        }:
            continue
        if (
            not isinstance(value, dict)
            and kind in {"model_type", "dict_type", "model_attributes_type"}
            and any(_is_union_tag(part) for part in raw_loc)
        ):
            continue
        location = ".".join(part for part in raw_loc if not _is_union_tag(part))
        message = error["msg"].removeprefix("Value error, ")
        shown = "" if isinstance(value, dict) or kind == "missing" else f" = {_shown(value)}"
        if kind == "extra_forbidden":
            message = _unknown_parameter(raw_loc)
        elif kind in ("union_tag_not_found", "union_tag_invalid"):
            location, shown, message = _tag_problem(error, location)
        elif kind == "finite_number":
            message = "must be a finite number (inf and nan are not values of a model)"
        elif kind in {"model_type", "dict_type", "model_attributes_type"}:
            message = "must be a table ([section] or {key = value, ...}), not a single value"
        elif kind == "missing":
            message = f"required: give {raw_loc[-1]} (`tiersim schema` says what it means)"
        line = f"  {location or '(top level)'}{shown}: {message}"
        if line not in problems:
            problems.append(line)
    count = len(problems)
    return "\n".join(
        [f"{source}: invalid model ({count} problem{'s' if count != 1 else ''})", *problems]
    )


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# The model's tagged unions: the tag's field and, per tag value, the table it selects.
def _union_members(annotation: Any) -> dict[str, dict[str, type[BaseModel]]]:
    """{tag field: {tag value: model}} of the tagged unions directly in `annotation`."""
    out: dict[str, dict[str, type[BaseModel]]] = {}
    for member in _flatten(annotation):
        for field_name in ("kind", "dist"):
            field = member.model_fields.get(field_name)
            if field is not None and get_origin(field.annotation) is Literal:
                for tag in get_args(field.annotation):
                    out.setdefault(field_name, {})[tag] = member
    return out


def _flatten(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation may hold directly (through Annotated, unions and None)."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _flatten(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _flatten(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _models_at(raw_loc: list[str]) -> list[type[BaseModel]]:
    """The model tables that a pydantic error location (tags included) points into."""
    return [m for annotation in _annotations_at(raw_loc) for m in _flatten(annotation)]


def _containers(annotation: Any) -> list[Any]:
    """The item type of a list or the value type of a table held by `annotation`."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _containers(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [c for arg in get_args(annotation) for c in _containers(arg)]
    if origin in (list, tuple):
        return list(get_args(annotation)[:1])
    if origin is dict:
        return list(get_args(annotation)[1:2])
    return []


def _unknown_parameter(raw_loc: list[str]) -> str:
    """Why a parameter is unknown where it is, and the fix: a parameter of another kind of
    the table (clients.kind changed), or a near spelling of a known one."""
    name = raw_loc[-1]
    parent = raw_loc[:-1]
    tags = [part for part in parent if part in _TAGS]
    if tags:
        tag = tags[-1]
        before = parent[: len(parent) - parent[::-1].index(tag) - 1]
        for annotation in _annotations_at(before):
            for field_name, members in _union_members(annotation).items():
                if tag not in members:
                    continue
                owners = [t for t, m in members.items() if name in m.model_fields and t != tag]
                if owners:
                    others = " or ".join(f"{t!r}" for t in owners)
                    return (
                        f"a parameter of {field_name} = {others}, not of {field_name} = {tag!r}: "
                        f"drop {name}, or set {field_name} = {others}"
                    )
    known = sorted({f for m in _models_at(parent) for f in m.model_fields})
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.75)
    if close:
        return (
            f"unknown parameter: did you mean {' or '.join(close)}? (`tiersim schema` lists them)"
        )
    if known:
        listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        return f"unknown parameter here (known: {listed}; `tiersim schema` lists them)"
    return "unknown parameter (misspelt? `tiersim schema` lists the parameters)"


def _annotations_at(raw_loc: list[str]) -> list[Any]:
    """The annotations of the field at `raw_loc` (before any union tag is chosen)."""
    annotations: list[Any] = [Model]
    for part in raw_loc:
        if _is_union_tag(part) and part not in _TAGS:
            continue
        following: list[Any] = []
        for annotation in annotations:
            chosen = [m[part] for m in _union_members(annotation).values() if part in m]
            if chosen:
                following += chosen
                continue
            for model in _flatten(annotation):
                field = model.model_fields.get(part)
                if field is not None:
                    following.append(field.annotation)
            following += _containers(annotation)
        annotations = following
    return annotations


def _tag_problem(error: Any, location: str) -> tuple[str, str, str]:
    """(location, shown value, message) of a table whose `kind` / `dist` tag is missing or
    unknown: name the allowed values, and the one the table's fields fit."""
    ctx = error.get("ctx") or {}
    field_name = str(ctx.get("discriminator", "kind")).strip("'")
    value = error.get("input")
    members: dict[str, type[BaseModel]] = {}
    for annotation in _annotations_at([str(p) for p in error["loc"]]):
        members.update(_union_members(annotation).get(field_name, {}))
    allowed = ", ".join(f"{t!r}" for t in members) or str(ctx.get("expected_tags", ""))
    where = f"{location}.{field_name}" if location else field_name
    if not isinstance(value, dict):
        return (
            location,
            f" = {_shown(value)}",
            f"expected a table with {field_name} = one of {allowed}",
        )
    given = [k for k in value if k != field_name]
    fits = [t for t, m in members.items() if given and all(k in m.model_fields for k in given)]
    options = " or ".join(f"{t!r}" for t in fits)
    hint = f" (its fields {', '.join(given)} fit {field_name} = {options})" if fits else ""
    if error["type"] == "union_tag_not_found":
        return where, "", f"missing: say which, one of {allowed}{hint}"
    tag = value.get(field_name)
    close = difflib.get_close_matches(str(tag), list(members), n=1, cutoff=0.6)
    if close:
        hint = f" (did you mean {close[0]!r}?)"
    return where, f" = {_shown(tag)}", f"unknown: one of {allowed}{hint}"


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
