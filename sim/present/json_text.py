"""The JSON every `--json` output and saved document is written as: strict JSON (RFC 8259 has
no NaN or Infinity, and `jq`, JavaScript and most readers refuse Python's `NaN`), with each
value that is not a number written as `null` and named, so that the command can say which
values are unknown and why instead of failing on them."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any


def finite_document(document: Any, path: str = "") -> tuple[Any, list[str]]:
    """`document` with every NaN and infinity replaced by None, and the dotted paths of those
    replaced (`rows.0.ci_low`).  numpy's floats are floats; other values are left as they are."""
    if isinstance(document, float) and not math.isfinite(document):
        return None, [path or "(the document)"]
    if isinstance(document, dict):
        out: dict[Any, Any] = {}
        unknown: list[str] = []
        for key, value in document.items():
            out[key], found = finite_document(value, f"{path}.{key}" if path else str(key))
            unknown += found
        return out, unknown
    if isinstance(document, (list, tuple)):
        items, unknown = [], []
        for index, value in enumerate(document):
            item, found = finite_document(value, f"{path}.{index}" if path else str(index))
            items.append(item)
            unknown += found
        return items, unknown
    return document, []


def json_text(
    document: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None
) -> tuple[str, list[str]]:
    """The document as strict JSON text, and the paths of the values written as null because
    they were not numbers (NaN: an interval of one replication, a mean of no request)."""
    finite, unknown = finite_document(document)
    return json.dumps(finite, indent=indent, allow_nan=False, default=default), unknown


def unknown_note(unknown: list[str], why: str, shown: int = 4) -> str | None:
    """One line naming the values written as null (the first few) and why; None when none."""
    if not unknown:
        return None
    listed = ", ".join(unknown[:shown]) + (
        f" and {len(unknown) - shown} more" if len(unknown) > shown else ""
    )
    count = len(unknown)
    return f"{count} value{'s' if count != 1 else ''} not known, written as null ({listed}): {why}"
