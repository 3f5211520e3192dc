"""Operational-law checks of a published table (Denning & Buzen, "The operational analysis of
queueing network models", Computing Surveys 10(3), 1978).

A closed load generator with N users and think time Z satisfies the interactive response-time
law R = N / X - Z exactly, whatever the system behind it.  So every published row with the same
N and the same emulator implies a think time Z = N / X - R; rows whose implied Z differ by more
than the figures' rounding cannot all be reproduced by one model with one Z: a simulation obeys
the law exactly, so it can match such a row's throughput or its response time, not both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImpliedThink:
    key: str  # the row's identity, e.g. "table=1 config=single-node"
    think_s: float  # N / X - R
    tolerance_s: float  # from rounding: half a unit of the last printed digit of X and of R


def _half_unit(text: str) -> float:
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


def implied_think(
    key: str, users: int, response_text: str, response_unit_s: float, throughput_text: str
) -> ImpliedThink | None:
    """Z implied by one row's published R and X (None if either is withheld)."""
    try:
        response = float(response_text) * response_unit_s
        throughput = float(throughput_text)
    except ValueError:
        return None
    tolerance = (
        users * _half_unit(throughput_text) / throughput**2
        + _half_unit(response_text) * response_unit_s
    )
    return ImpliedThink(key, users / throughput - response, tolerance)


def agrees(a: ImpliedThink, b: ImpliedThink) -> bool:
    return abs(a.think_s - b.think_s) <= a.tolerance_s + b.tolerance_s


def note(row: ImpliedThink, reference: ImpliedThink, users: int) -> str:
    """One line for the reproduction output."""
    text = f"response-time law with N = {users}: N/X - R = {row.think_s * 1000:.0f} ± {row.tolerance_s * 1000:.1f} ms"
    if row.key == reference.key:
        return text + " (the row the model's think time is fitted to)"
    if agrees(row, reference):
        return text + f", consistent with {reference.key}"
    return (
        text
        + f", inconsistent with {reference.key} ({reference.think_s * 1000:.0f} ms): one think time cannot "
        "give this row's R and X together; the model keeps its think time, so R follows X"
    )
