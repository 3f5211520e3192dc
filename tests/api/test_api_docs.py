"""docs/api.md documents the face as it is: each function's heading is its real signature
(names, order, defaults), and each of its options is explained in its section, so that no
option a path needs (the p95 path's `warmup_s`, `until_s`, `shape`, `threads`, `think`) is
left for a reader to find in the source."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import sim

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
FUNCTIONS = sorted(name for name in sim.__all__ if inspect.isfunction(getattr(sim, name)))


def sections() -> dict[str, tuple[str, str]]:
    """name -> (the heading's parameter list, the section's text after its heading), for each
    `### sim.NAME(...)` heading (a heading may name two functions)."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, tuple[str, str]] = {}
    parts = re.split(r"^###? ", text, flags=re.M)
    for part in parts:
        heading, _, body = part.partition("\n")
        for name, params in re.findall(r"`sim\.([a-z_]+)\((.*?)\)(?: -> [^`]+)?`", heading):
            found[name] = (params, body)
    return found


def documented(params: str) -> list[str]:
    """`a, b=1, *, c=None` -> ['a', 'b=1', '*', 'c=None'] (no commas inside the defaults)."""
    return [p.strip() for p in params.split(",") if p.strip()]


def real(function) -> list[str]:
    out: list[str] = []
    star = False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        if parameter.default is parameter.empty:
            out.append(parameter.name)
        else:
            out.append(f"{parameter.name}={parameter.default!r}".replace("'", '"'))
    return out


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_heading_is_the_real_signature(name):
    found = sections()
    assert name in found, f"docs/api.md has no ### `sim.{name}(...)` heading"
    assert documented(found[name][0]) == real(getattr(sim, name))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_option_is_explained_in_its_section(name):
    _, body = sections()[name]
    signature = inspect.signature(getattr(sim, name))
    options = [p.name for p in signature.parameters.values() if p.default is not p.empty]
    unexplained = [p for p in options if not re.search(rf"`{p}(`|=|\()", body)]
    assert unexplained == [], f"sim.{name}: {unexplained} not explained in docs/api.md"
