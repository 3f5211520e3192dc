"""Walk the schema to list every parameter: the table printed by `tiersim schema`."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from sim.model.schema import Model


def _members(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        out = []
        for arg in get_args(annotation):
            out += _members(arg)
        return out
    return [annotation]


def _type_name(annotation: Any) -> str:
    names = []
    for member in _members(annotation):
        if member is type(None):
            names.append("none")
        elif isinstance(member, type) and issubclass(member, BaseModel):
            names.append("table")
        elif get_origin(member) is list:
            names.append("list")
        elif get_origin(member) is typing.Literal:
            names.append(" | ".join(repr(a) for a in get_args(member)))
        else:
            names.append(getattr(member, "__name__", str(member)))
    return " | ".join(dict.fromkeys(names))


def _allowed(field) -> str:
    parts = []
    for meta in field.metadata:
        if isinstance(meta, Ge):
            parts.append(f">= {meta.ge}")
        elif isinstance(meta, Gt):
            parts.append(f"> {meta.gt}")
        elif isinstance(meta, Le):
            parts.append(f"<= {meta.le}")
        elif isinstance(meta, Lt):
            parts.append(f"< {meta.lt}")
    return ", ".join(parts)


def _default(field) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return "(table)"
    value = field.default
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        return "(table)"
    return "none" if value is None else repr(value)


_UNIT = re.compile(r"\s*\[([^\]]+)\]")


def _unit_and_meaning(description: str) -> tuple[str, str]:
    """Descriptions carry their unit in brackets, e.g. "client timeout [s]"."""
    found = _UNIT.search(description)
    if not found:
        return "", description
    return found.group(1), _UNIT.sub("", description, count=1)


Row = tuple[str, str, str, str, str, str]  # parameter, type, default, unit, allowed, meaning


def parameter_rows(model: type[BaseModel] = Model) -> list[Row]:
    """Every parameter once, by dotted path (`N` stands for a list index); a parameter that
    only one client kind has says so in its meaning."""
    rows: dict[str, Row] = {}
    _walk(model, "", "", rows)
    return list(rows.values())


def _walk(model: type[BaseModel], prefix: str, applies: str, rows: dict[str, Row]) -> None:
    for name, field in model.model_fields.items():
        name = field.alias or name  # the model file's key (a step's `class`)
        path = f"{prefix}{name}"
        unit, meaning = _unit_and_meaning(field.description or "")
        if name == "kind" and applies:
            meaning = (
                meaning
                or "selects the client population; the parameters marked (kind = ...) belong to it"
            )
        elif applies and path not in rows:
            meaning = f"({applies}) {meaning}"
        if path not in rows:
            rows[path] = (
                path,
                _type_name(field.annotation),
                _default(field),
                unit,
                _allowed(field),
                meaning,
            )
        elif name != "kind" and rows[path][5] != meaning:
            # met again under another kind: it belongs to every kind that has it, say nothing
            rows[path] = (*rows[path][:5], _unit_and_meaning(field.description or "")[1])
        elif name == "kind":
            old = rows[path]
            rows[path] = (old[0], f"{old[1]} | {_type_name(field.annotation)}", *old[2:])
        for member in _members(field.annotation):
            inner = get_args(member)[0] if get_origin(member) is list else member
            if (
                not (isinstance(inner, type) and issubclass(inner, BaseModel))
                or "Spec" in inner.__name__
            ):
                continue
            kind = getattr(inner.model_fields.get("kind"), "annotation", None)
            # a one-value `kind` tags a member of a discriminated union (the client kinds)
            tagged = kind is not None and get_origin(kind) is Literal and len(get_args(kind)) == 1
            tag = f"kind = {get_args(kind)[0]!r}" if tagged else applies
            _walk(inner, f"{path}{'.N' if get_origin(member) is list else ''}.", tag, rows)


def distribution_rows() -> list[Row]:
    """The forms a time distribution takes (a bare number is a deterministic time)."""
    from sim.random import distributions as d

    rows: list[Row] = [("<number>", "float", "", "s", ">= 0", "shorthand for a deterministic time")]
    specs: list[type[BaseModel]] = [
        d.ExponentialSpec,
        d.DeterministicSpec,
        d.UniformSpec,
        d.GammaSpec,
        d.LognormalSpec,
        d.HyperExponentialSpec,
        d.EmpiricalSpec,
    ]
    for spec in specs:
        tag = get_args(spec.model_fields["dist"].annotation)[0]
        for name, field in spec.model_fields.items():
            if name == "dist":
                continue
            unit, meaning = _unit_and_meaning(field.description or "")
            rows.append(
                (
                    f"{{dist = {tag!r}}}.{name}",
                    _type_name(field.annotation),
                    _default(field),
                    unit,
                    _allowed(field),
                    meaning,
                )
            )
    return rows


def parameter_unit(path: str) -> str:
    """The unit of the parameter at a dotted path (`backends.0.demand.mean` -> "s"), from the
    brackets of its description; "" when it has none or the path names no parameter."""
    annotations: list[Any] = [Model]
    found: list[Any] = []
    for part in path.split("."):
        following: list[Any] = []
        found = []
        for annotation in annotations:
            for member in _members(annotation):
                if isinstance(member, type) and issubclass(member, BaseModel):
                    field = member.model_fields.get(part)
                    if field is not None:
                        found.append(field)
                        following.append(field.annotation)
                elif get_origin(member) is list and part.isdigit():
                    following.append(get_args(member)[0])
                elif get_origin(member) is dict:
                    following.append(get_args(member)[-1])
        annotations = following
    for field in found:
        unit, _ = _unit_and_meaning(field.description or "")
        if unit:
            return unit
    return ""
