"""Error kinds shared by the formats: an HTTP status class, or what the client saw."""

from __future__ import annotations


def status_kind(code: int) -> str:
    """`5xx`, `4xx`, ... for an HTTP status code."""
    return f"{code // 100}xx"


def exception_kind(text: str) -> str:
    """The kind of a client-side failure from its Java exception or message.

    A connect timeout is a failure to connect (`connect`); a read timeout is `timeout`.
    """
    lowered = text.lower()
    if "connect" in lowered or "noroutetohost" in lowered or "unknownhost" in lowered:
        return "connect"
    if "timeout" in lowered or "timed out" in lowered:
        return "timeout"
    return "other"
