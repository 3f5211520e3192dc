"""Per-tier time per request from a trace: how a request's response time splits between the
front (Apache with mod_proxy/mod_jk), the application server (Tomcat, Jetty) and each
database call, the evidence of per-tier demand a load-test file cannot give.

Each span of a request is given a tier by rule, the first that matches:

1. `--tier TIER=FIELD:REGEX` rules, in the order given: FIELD is `name`, `kind` (server,
   client, internal, ...) or an attribute (the span's or its resource's: `service.name`,
   `db.system`, `http.route`, ...), and REGEX is searched in its value;
2. a span with `db.system` (or `db.system.name`, the newer convention) is `database`;
3. a SERVER span with another SERVER span below it is `front` (a proxy that passed the
   request on), any other SERVER span is `app`;
4. a CLIENT or PRODUCER span that no traced server answered (no SERVER or CONSUMER span
   below it) is `unmapped`: a call out to something the rules do not name (listed by name);
5. any other span (INTERNAL, or a CLIENT span whose callee is traced) is its parent's tier.

A span's own time is its duration less the time its children cover (their union, cut to the
span), so a request's tiers add up to its response time. Per request and tier: the own time
summed over the tier's spans and the number of those spans (`calls`: database calls made).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from sim.measurements.classes import TOTAL, ClassMap
from sim.measurements.formats.otel import Span, outcome, url_of

DATABASE, FRONT, APP, UNMAPPED = "database", "front", "app", "unmapped"
DB_SYSTEM = ("db.system", "db.system.name")
COLUMNS = [
    "run",
    "class",
    "tier",
    "requests",
    "calls_per_request",
    "time_per_request_s",
    "time_per_request_s.std_error",
    "time_per_call_s",
    "share_of_response",
]


class TierRuleError(ValueError):
    """A `--tier` option that is not TIER=FIELD:REGEX."""


@dataclass(frozen=True)
class TierRule:
    tier: str
    field: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, option: str) -> TierRule:
        tier, sep, rest = option.partition("=")
        field, colon, pattern = rest.partition(":")
        if not sep or not colon or not tier.strip() or not field.strip():
            raise TierRuleError(
                f"--tier {option!r}: expected TIER=FIELD:REGEX, e.g. --tier 'front=service.name:^apache'"
            )
        try:
            return cls(tier.strip(), field.strip(), re.compile(pattern))
        except re.error as exc:
            raise TierRuleError(
                f"--tier {option!r}: {pattern!r} is not a regular expression ({exc})"
            ) from None

    def matches(self, span: Span) -> bool:
        if self.field == "name":
            value: object = span.name
        elif self.field == "kind":
            value = span.kind
        else:
            value = span.attributes.get(self.field)
        return value is not None and self.pattern.search(str(value)) is not None


def _has_below(span: Span, kinds: tuple[str, ...]) -> bool:
    return any(c.kind in kinds or _has_below(c, kinds) for c in span.children)


def _tier(
    span: Span, parent_tier: str | None, rules: list[TierRule], unmapped: dict[str, int]
) -> str:
    for rule in rules:
        if rule.matches(span):
            return rule.tier
    if any(name in span.attributes for name in DB_SYSTEM):
        return DATABASE
    if span.kind == "server":
        return FRONT if _has_below(span, ("server",)) else APP
    if span.kind in ("client", "producer") and not _has_below(span, ("server", "consumer")):
        unmapped[f"{span.name} ({span.kind})"] = unmapped.get(f"{span.name} ({span.kind})", 0) + 1
        return UNMAPPED
    return parent_tier if parent_tier is not None else APP


def own_time(span: Span) -> float:
    """The span's duration less the union of its children's intervals within it."""
    intervals = sorted(
        (max(c.start_ns, span.start_ns), min(c.end_ns, span.end_ns))
        for c in span.children
        if c.end_ns > span.start_ns and c.start_ns < span.end_ns
    )
    covered, reach = 0, span.start_ns
    for low, high in intervals:
        if high > reach:
            covered += high - max(low, reach)
            reach = high
    return max(0, span.end_ns - span.start_ns - covered) / 1e9


def request_tiers(
    request: Span, rules: list[TierRule], unmapped: dict[str, int]
) -> dict[str, tuple[float, int]]:
    """{tier: (own time in s, spans)} of one request."""
    totals: dict[str, tuple[float, int]] = {}
    stack: list[tuple[Span, str | None]] = [(request, None)]
    while stack:
        span, parent_tier = stack.pop()
        tier = _tier(span, parent_tier, rules, unmapped)
        time, calls = totals.get(tier, (0.0, 0))
        totals[tier] = (time + own_time(span), calls + 1)
        stack.extend((child, tier) for child in span.children)
    return totals


@dataclass
class TierBreakdown:
    rows: list[dict]
    unmapped: dict[str, int]  # "name (kind)" -> spans the rules did not name
    other_roots: int  # roots that are not requests (background work)


def breakdown(
    run: str,
    requests: list[Span],
    classes: ClassMap,
    rules: list[TierRule],
    zero_s: float,
    low_s: float,
    high_s: float,
    other_roots: int = 0,
) -> TierBreakdown:
    """Per class and tier, over the successful requests completing in [low_s, high_s] after
    `zero_s` (the measurement table's observed span): requests, calls and own time per
    request, with the time's standard error over requests."""
    unmapped: dict[str, int] = {}
    per_class: dict[str, list[dict[str, tuple[float, int]]]] = {}
    responses: dict[str, list[float]] = {}
    for request in requests:
        done = (request.start_s - zero_s) + request.duration_s  # as the table counts it
        if not (low_s <= done <= high_s) or outcome(request)[0]:
            continue
        key = url_of(request) if classes.by == "url" else request.name
        name = classes.name(key if key is not None else request.name)
        tiers = request_tiers(request, rules, unmapped)
        for group in (name, TOTAL):
            per_class.setdefault(group, []).append(tiers)
            responses.setdefault(group, []).append(request.duration_s)
    rows = []
    for group in sorted(per_class, key=lambda g: (g == TOTAL, g)):
        members = per_class[group]
        mean_response = float(np.mean(responses[group]))
        for tier in sorted({t for m in members for t in m}):
            times = np.array([m.get(tier, (0.0, 0))[0] for m in members])
            calls = np.array([m.get(tier, (0.0, 0))[1] for m in members])
            n = len(times)
            rows.append(
                {
                    "run": run,
                    "class": group,
                    "tier": tier,
                    "requests": n,
                    "calls_per_request": float(calls.mean()),
                    "time_per_request_s": float(times.mean()),
                    "time_per_request_s.std_error": float(times.std(ddof=1) / math.sqrt(n))
                    if n > 1
                    else math.nan,
                    "time_per_call_s": float(times.sum() / calls.sum())
                    if calls.sum()
                    else math.nan,
                    "share_of_response": float(times.mean() / mean_response)
                    if mean_response > 0
                    else math.nan,
                }
            )
    return TierBreakdown(rows, unmapped, other_roots)
