"""The compiled loop's state: one struct (`State`) of the tables `layout` declares, passed to
every compiled function by reference, and its borrowed view (`borrowed`), which numba does not
reference-count, for the loop itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numba import njit
from numba.core import types
from numba.core.datamodel import models
from numba.core.datamodel.registry import register_default
from numba.experimental import structref
from numba.experimental.structref import _Utils
from numba.extending import intrinsic, register_model

from sim.engines.compiled.kernel.tables import TABLES


class BorrowedArray(types.Array):
    """An array the compiled loop borrows from the driver, which holds it for the whole call:
    numba keeps no reference count on it (see `BorrowedArrayModel`)."""

    def __init__(self, dtype, ndim, layout):
        super().__init__(dtype, ndim, layout, name=f"borrowed({dtype}, {ndim}d, {layout})")

    @property
    def key(self):
        return (*super().key, "borrowed")

    def __repr__(self) -> str:
        # the state's type is named (and interned) by its fields' reprs: an array's repr
        # would make the borrowed state the same type as the driver's
        return f"BorrowedArray({self.dtype!r}, {self.ndim}, {self.layout!r})"


@register_model(BorrowedArray)
class BorrowedArrayModel(models.ArrayModel):
    """An array's layout without its memory manager among the members numba traverses for
    reference counting: loading a table from the state or passing it to a function costs no
    atomic increment and decrement (about half of the loop's time before)."""

    def traverse(self, builder):
        return [
            (member, getter)
            for member, getter in super().traverse(builder)
            if not isinstance(member, types.MemInfoPointer)
        ]


@structref.register
class StateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class BorrowedStateType(types.StructRef):
    """The state as the loop and every function it calls see it: the driver's struct, with no
    reference counting (see `BorrowedStateModel`)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@register_default(BorrowedStateType)
class BorrowedStateModel(models.StructRefModel):
    """A struct reference whose memory manager numba does not traverse: passing the state to
    a function costs no atomic increment and decrement (a third of the loop's time before,
    once the arrays were borrowed).  `loop.run_events` holds the struct for the whole call."""

    def traverse(self, builder):
        return [
            (member, getter)
            for member, getter in super().traverse(builder)
            if not isinstance(member, types.MemInfoPointer)
        ]


structref.define_attributes(BorrowedStateType)


class State(structref.StructRefProxy):
    """The tables of one replication, passed to the compiled functions by reference (a tuple
    of 32 arrays would be flattened into some 300 arguments at every call)."""


STATE_FIELDS = tuple(table.name for table in TABLES)  # declared in `tables`
structref.define_proxy(State, StateType, list(STATE_FIELDS))


@njit(cache=True)
def _new_state(*tables):
    """A `State` of these tables (in `STATE_FIELDS` order), built by cached machine code:
    calling `State(...)` from Python compiles numba's constructor afresh in every process
    (about a second, longer than the whole of a small run)."""
    return State(*tables)


def new_state(tables: Mapping[str, Any]) -> State:
    """The `State` of these tables, by their names (every table of `tables.TABLES`)."""
    missing = set(STATE_FIELDS) - set(tables)
    assert not missing and len(tables) == len(STATE_FIELDS), sorted(missing)
    return _new_state(*(tables[name] for name in STATE_FIELDS))


def _view(context, builder, array, borrowed, value):
    """The array `value` as a `BorrowedArray`: the same data, shape and strides, a null
    meminfo (views taken of it count no references either)."""
    source = context.make_array(array)(context, builder, value=value)
    view = context.make_array(borrowed)(context, builder)
    context.populate_array(
        view,
        data=source.data,
        shape=source.shape,
        strides=source.strides,
        itemsize=source.itemsize,
        meminfo=None,
    )
    return view._getvalue()


def _borrow_all_typer(typingctx, state):
    """Every field of `state` in its order, each table as a `BorrowedArray` (`_view`) and
    anything else (TOKEN) as it is.  No reference is taken: valid while the caller holds
    `state`."""
    fields = list(state.field_dict.items())
    kinds = [
        BorrowedArray(typ.dtype, typ.ndim, typ.layout) if isinstance(typ, types.Array) else typ
        for _, typ in fields
    ]
    result = types.Tuple(kinds)

    def codegen(context, builder, signature, args):
        data = _Utils(context, builder, state).get_data_struct(args[0])
        values = []
        for (name, typ), kind in zip(fields, kinds):
            value = getattr(data, name)
            if isinstance(typ, types.Array):
                value = _view(context, builder, typ, kind, value)
            values.append(value)
        return context.make_tuple(builder, result, values)

    return result(state), codegen


_borrow_all: Any = intrinsic(_borrow_all_typer)  # called with the state alone


@njit(cache=True)
def borrowed(S):
    """The state with every table borrowed (`_borrow_all`)."""
    return State(*_borrow_all(S))


def _unref_typer(typingctx, state):
    """The same struct as a `BorrowedStateType` (no new reference: valid while the caller
    holds `state`)."""
    borrowed = BorrowedStateType(list(state.field_dict.items()))

    def codegen(context, builder, signature, args):
        return args[0]

    return borrowed(state), codegen


unref: Any = intrinsic(_unref_typer)  # called with the state alone


@njit(cache=True)
def hold(state):
    """A use of `state` after the loop: numba keeps a variable alive until its last use."""
    return state.TOKEN
