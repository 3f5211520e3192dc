"""Placeholders are not zeros, on the package's face too: a `tiersim from-config` model whose
placeholders nothing filled (`sim.configs.placeholders`) is refused by every call that would
answer for them -- given as a path, or as the `Model` `sim.load_model` returned, alike.

A loaded `Model` carries its file and the placeholders its load left unfilled (`carry`);
`refuse` reads them again from the Model's own data, so that an override given later (to
`sim.capacity`, `sim.predict`), or a value changed with `model_copy(update=...)`, fills them
as it fills a file's.  A placeholder filled when the model was loaded (`sim.load_model(path,
["proxy.cores=1"])`, even with the placeholder's own value) stays filled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sim.configs.placeholders import refusal, refusal_in, unfilled, unfilled_in
from sim.model.load import ModelError
from sim.model.schema import Model


def carry(model: Model, document: Mapping[str, Any], source: str, overrides: Iterable[str]):
    """`model`, marked with the placeholders of `document` (its file's data) that `overrides`
    left unfilled, and the file's name."""
    left = unfilled_in(dict(document), list(overrides))
    if left:
        model._placeholders = (source, tuple(left))
    return model


def refuse(
    source: Model | Path,
    overrides: Iterable[str],
    call: str,
    filled: Iterable[str] = (),
    takes_overrides: bool = True,
) -> None:
    """Raise `ModelError` naming every placeholder of `source` that neither its load nor
    `overrides` nor `filled` (the path a study gives values of its own) has filled, the file,
    and what fills each: the `overrides` to give, or, for a call that takes none beside a
    Model (`takes_overrides` False: simulate, solve), the `sim.load_model` that loads it
    filled."""
    given, filled = list(overrides), list(filled)
    if not isinstance(source, Model):
        left = unfilled(source, given, filled)
        if left:
            raise ModelError(refusal(source, left, call, setting="overrides"))
        return
    carried = source._placeholders
    if carried is None:
        return
    name, at_load = carried
    data = source.model_dump(exclude_unset=True)
    left = [path for path in unfilled_in(data, given, filled) if path in at_load]
    if left:
        setting = "overrides" if takes_overrides else "sim.load_model"
        raise ModelError(refusal_in(data, name, left, call, setting))
