"""Walk the schema to list every parameter: the table printed by `tiersim schema`."""
from __future__ import annotations

import types
import typing
from typing import Any, Iterator, Union, get_args, get_origin

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


def parameter_rows(model: type[BaseModel] = Model, prefix: str = "") -> Iterator[tuple[str, str, str, str, str]]:
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        yield path, _type_name(field.annotation), _default(field), _allowed(field), field.description or ""
        for member in _members(field.annotation):
            inner = get_args(member)[0] if get_origin(member) is list else member
            if isinstance(inner, type) and issubclass(inner, BaseModel) and not name == "connect" and "Distribution" not in inner.__name__ and "Spec" not in inner.__name__:
                kind = getattr(inner.model_fields.get("kind"), "annotation", None)
                label = f"{path}[kind={get_args(kind)[0]!r}]." if kind is not None and get_origin(kind) is typing.Literal else f"{path}{'.N' if get_origin(member) is list else ''}."
                yield from parameter_rows(inner, label)
