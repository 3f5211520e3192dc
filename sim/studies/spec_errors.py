"""Validation errors of an experiment file as its readers see them: one line per problem,
`FILE: field.path = value: what is allowed (the fix)`, in a model file's style
(sim.model.load): list items as `figures[0]`, the field's description as the fix, a near
spelling for an unknown key."""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from sim.studies.spec import ExperimentSpec


def line(source: Path, location: str, value: Any, message: str) -> str:
    """`FILE: field.path = value: message` (no `= value` for None)."""
    shown = "" if value is None else f" = {shown_value(value)}"
    return f"{source}: {location}{shown}: {message}"


def format_experiment_error(exc: ValidationError, source: Path) -> str:
    """One line per problem: `FILE: field.path = value: what is allowed (the fix)`."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        loc = [part for part in error["loc"] if not _is_member(part)]
        kind, value = error["type"], error.get("input")
        field = _field_at(loc)
        hint = f" ({field.description})" if field is not None and field.description else ""
        if kind == "extra_forbidden":
            message = _unknown_key(loc)
        elif kind == "missing":
            message = f"required{hint}"
        elif kind in {"model_type", "dict_type", "model_attributes_type"}:
            message = f"must be a table ([section] or {{key = value, ...}}){hint}"
        elif kind == "list_type":
            message = f"must be a list{hint}"
        elif kind == "string_type":
            message = f"must be a string (in quotes){hint}"
        elif kind == "finite_number":
            message = "must be a finite number (inf and nan are not values of an experiment)"
        elif kind == "value_error":
            message = error["msg"].removeprefix("Value error, ")
        else:
            message = re.sub(r"^\w+ should (be|have)", r"must \1", error["msg"]) + hint
        table = isinstance(value, dict) or (
            isinstance(value, list) and any(isinstance(v, dict) for v in value)
        )
        shown = None if kind == "missing" or table else value
        text = line(source, _location(loc) or "(top level)", shown, message)
        if text not in lines:
            lines.append(text)
    return "\n".join(lines)


def _is_member(part: Any) -> bool:
    """pydantic puts union members (`str`, `function-plain[...]`, `list[...]`) in locations."""
    return isinstance(part, str) and (
        part in ("str", "int", "float") or "[" in part or part.startswith(("function-", "lax-"))
    )


def _location(loc: list[Any]) -> str:
    """`figures[0].scale`, `models.t300`, `factors.connector."jboss-4.0.4:mod_proxy_ajp"`:
    the internal tables of [models] entries and [[fitted]] selectors are not shown."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        owner = loc[i - 2] if part == "selectors" and i >= 2 else loc[i - 1] if i else None
        if (part, owner) in _HIDDEN:
            continue
        name = part if re.fullmatch(r"[A-Za-z0-9_-]+", str(part)) else json.dumps(str(part))
        out += f".{name}" if out else name
    return out


_HIDDEN = {("files", "models"), ("selectors", "fitted")}


def _field_at(loc: list[Any]) -> Any:
    """The pydantic field the location names (the last named one on the way), if any."""
    annotation: Any = ExperimentSpec
    found = None
    for part in loc:
        if isinstance(part, int):
            annotation = _item(annotation)
            continue
        models = _models(annotation)
        fields = [
            f for m in models for name, f in m.model_fields.items() if (f.alias or name) == part
        ]
        if fields:
            found = fields[0]
            annotation = found.annotation
        else:
            annotation = _item(annotation)
    return found


def _models(annotation: Any) -> list[type[BaseModel]]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, typing.Annotated):
        return [m for arg in get_args(annotation) for m in _models(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _item(annotation: Any) -> Any:
    """The item of a list or the value of a table."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, typing.Annotated):
        items = [_item(arg) for arg in get_args(annotation)]
        return next((i for i in items if i is not None), None)
    if origin is list:
        return get_args(annotation)[0]
    if origin is dict:
        return get_args(annotation)[1]
    return None


SECTIONS = (
    "[experiment], [models], [factors.COLUMN], [[figures]], [[fitted]], [[calibrate]], "
    "[[unknown]], [[choose]], [response_time_law]"
)


def _unknown_key(loc: list[Any]) -> str:
    name, parent = str(loc[-1]), loc[:-1]
    if not parent:
        known = [f for f in ExperimentSpec.model_fields]
        where = f"an experiment file has {SECTIONS}"
    else:
        owner = _field_at(parent)
        annotation = owner.annotation if owner is not None else None
        if parent and isinstance(parent[-1], int):
            annotation = _item(annotation)
        models = _models(annotation)
        known = [f.alias or n for m in models for n, f in m.model_fields.items()]
        known = [k for k in known if k not in ("files", "selectors")]
        where = f"{_location(parent)} takes {', '.join(known)}"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]}? " if close else ""
    return f"unknown key: {guess}({where})"


def shown_value(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
