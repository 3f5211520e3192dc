"""OpenTelemetry traces in OTLP JSON: the spans a request left in each tier it crossed.

The file is what the OpenTelemetry Collector's `file` exporter and the SDKs' OTLP JSON file
exporters write: one `ExportTraceServiceRequest` per line (JSON Lines), or one such document.
Its shape is `opentelemetry-proto`'s JSON mapping (trace/v1/trace.proto): `resourceSpans[]`
(with `resource.attributes`, e.g. `service.name`) -> `scopeSpans[]` (`instrumentationLibrarySpans`
before OTLP 0.15) -> `spans[]` with `traceId` and `spanId` (hex, as OTLP JSON requires),
`parentSpanId` (empty for a root), `name`, `kind` (1 internal, 2 server, 3 client, 4 producer,
5 consumer, or the enum's name), `startTimeUnixNano`, `endTimeUnixNano` (decimal strings),
`attributes[]` (`{key, value: {stringValue | intValue | doubleValue | boolValue}}`) and
`status.code` (2, STATUS_CODE_ERROR, for an error).

A request is a root SERVER span: one with no parent among the spans read (the load generator
may have sent a `traceparent` of its own). Its start and end are the request's; its label the
span's name (by the semantic conventions low-cardinality, `GET /orders/{id}`), its URL
`url.path` (`http.target` in the older conventions, else the path of `url.full`, formerly
`http.url`). It failed when its status is an error or its HTTP status
(`http.response.status_code`, formerly `http.status_code`) is 400 or more.
The spans under it split its time between the tiers (`otel_tiers`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sim.measurements.errors import MeasurementError, shorten
from sim.measurements.formats.http import status_kind
from sim.measurements.text import Progress, nested_too_deep, read_lines
from sim.measurements.windows import SampleLog

EXPECTED = (
    "OpenTelemetry traces as OTLP JSON (the Collector's file exporter or an SDK's OTLP JSON "
    "file exporter: resourceSpans/scopeSpans/spans)"
)
KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS_ERROR = 2
HTTP_STATUS = ("http.response.status_code", "http.status_code")
URL_PATH = ("url.path", "http.target")
FULL_URL = ("url.full", "http.url")


@dataclass
class Span:
    span_id: str
    parent_id: str
    trace_id: str
    name: str
    kind: str
    start_ns: int  # nanoseconds since the epoch, as the trace has them: a float of seconds
    end_ns: int  # since the epoch keeps only ~0.2 us, so durations are taken from these
    attributes: dict[str, object]
    error: bool
    line: int  # where it was read, for messages
    children: list[Span] = field(default_factory=list)

    @property
    def start_s(self) -> float:
        return self.start_ns / 1e9

    @property
    def end_s(self) -> float:
        return self.end_ns / 1e9

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def _get(record: dict, *names: str):
    for name in names:
        if name in record:
            return record[name]
    return None


def _value(value: object) -> object:
    """An AnyValue: {"stringValue": "x"} -> "x", {"intValue": "8"} -> 8, arrays as lists."""
    if not isinstance(value, dict) or not value:
        return None
    kind, content = next(iter(value.items()))
    if kind in ("intValue", "int_value"):
        try:
            return int(content)
        except (TypeError, ValueError):
            return None
    if kind in ("doubleValue", "double_value"):
        return float(content) if isinstance(content, (int, float, str)) else None
    if kind in ("arrayValue", "array_value") and isinstance(content, dict):
        return [_value(v) for v in content.get("values", [])]
    return content


def _attributes(items: object) -> dict[str, object]:
    if not isinstance(items, list):
        return {}
    return {
        str(item.get("key")): _value(item.get("value"))
        for item in items
        if isinstance(item, dict) and "key" in item
    }


def _kind(path, line: int, value: object) -> str:
    if isinstance(value, int) and value in KINDS:
        return KINDS[value]
    if isinstance(value, str) and value.upper().startswith("SPAN_KIND_"):
        return value[len("SPAN_KIND_") :].lower()
    if value is None:
        return "unspecified"
    raise MeasurementError(
        path,
        line,
        f"span kind {shorten(str(value))}; expected 0-5 or SPAN_KIND_SERVER and the like",
    )


def _nanoseconds(path, line: int, span: dict, name: str) -> int:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    value = _get(span, name, snake)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MeasurementError(
            path,
            line,
            f"span {shorten(str(span.get('name', '')))}: {name} = {shorten(str(value))}; "
            "expected nanoseconds since the epoch (a decimal string)",
        ) from None


def _error(status: object) -> bool:
    code = status.get("code") if isinstance(status, dict) else None
    return code == STATUS_ERROR or code == "STATUS_CODE_ERROR"


def _documents(path, lines: list[str]) -> list[tuple[int, dict]]:
    """The export requests in the file with the line each starts on."""
    text = "\n".join(lines)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    except RecursionError:
        raise nested_too_deep(path, 1, EXPECTED) from None
    if isinstance(whole, dict):
        return [(1, whole)]
    documents = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except RecursionError:
            raise nested_too_deep(path, number, EXPECTED) from None
        except json.JSONDecodeError as exc:
            raise MeasurementError(
                path,
                number,
                f"not a JSON line ({exc.msg}); expected {EXPECTED}, one export request a line "
                "(a truncated file? the exporter was stopped before it flushed)",
            ) from None
        if not isinstance(document, dict):
            raise MeasurementError(
                path, number, f"a JSON {type(document).__name__}; expected {EXPECTED}"
            )
        documents.append((number, document))
    return documents


def read_spans(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> list[Span]:
    """Every span of the file, each with its resource's attributes (service.name, ...)
    merged under its own."""
    lines = read_lines(path, EXPECTED, encoding)
    spans: list[Span] = []
    documents = _documents(path, lines)
    for line, document in documents:
        if progress is not None:
            progress(line, len(lines))
        resource_spans = _get(document, "resourceSpans", "resource_spans")
        if not isinstance(resource_spans, list):
            raise MeasurementError(
                path,
                line,
                f"no resourceSpans (found {', '.join(list(document)[:4]) or 'nothing'}); expected {EXPECTED}",
            )
        for resource_span in resource_spans:
            resource = _attributes((resource_span.get("resource") or {}).get("attributes"))
            scopes = (
                _get(resource_span, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")
                or []
            )
            for scope in scopes:
                for raw in scope.get("spans") or []:
                    spans.append(_span(path, line, raw, resource))
    if not spans:
        raise MeasurementError(path, None, f"no spans; expected {EXPECTED}")
    return spans


def _span(path, line: int, raw: dict, resource: dict[str, object]) -> Span:
    span_id = _get(raw, "spanId", "span_id")
    if not isinstance(span_id, str) or not span_id:
        raise MeasurementError(path, line, f"a span without spanId; expected {EXPECTED}")
    start = _nanoseconds(path, line, raw, "startTimeUnixNano")
    end = _nanoseconds(path, line, raw, "endTimeUnixNano")
    if end < start:
        raise MeasurementError(
            path,
            line,
            f"span {shorten(str(raw.get('name', '')))} ends before it starts; expected end >= start",
        )
    return Span(
        span_id=span_id,
        parent_id=str(_get(raw, "parentSpanId", "parent_span_id") or ""),
        trace_id=str(_get(raw, "traceId", "trace_id") or ""),
        name=str(raw.get("name", "")),
        kind=_kind(path, line, raw.get("kind")),
        start_ns=start,
        end_ns=end,
        attributes={**resource, **_attributes(raw.get("attributes"))},
        error=_error(raw.get("status")),
        line=line,
    )


def requests_of(spans: list[Span]) -> tuple[list[Span], list[Span]]:
    """The requests (root SERVER spans, each with its tree of children linked) and the other
    roots (INTERNAL or CLIENT spans with no parent read: background work, not requests)."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    roots = []
    for span in spans:
        parent = by_id.get((span.trace_id, span.parent_id)) if span.parent_id else None
        if parent is None:
            roots.append(span)
        else:
            parent.children.append(span)
    requests = [r for r in roots if r.kind in ("server", "consumer")]
    return requests, [r for r in roots if r.kind not in ("server", "consumer")]


def http_status(span: Span) -> int | None:
    for name in HTTP_STATUS:
        value = span.attributes.get(name)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def outcome(span: Span) -> tuple[bool, str]:
    """(failed, error kind) of a request's root span."""
    status = http_status(span)
    if status is not None and status >= 400:
        return True, status_kind(status)
    if span.error:
        return True, "other"
    return False, ""


def url_of(span: Span) -> str | None:
    """The request's path: `url.path` (`http.target` in the older conventions), else the path
    of the full URL (`url.full`, formerly `http.url`)."""
    for name in URL_PATH:
        if name in span.attributes:
            return str(span.attributes[name])
    for name in FULL_URL:
        if name in span.attributes:
            return urlsplit(str(span.attributes[name])).path or "/"
    return None


def sample_log(path: str, requests: list[Span]) -> SampleLog:
    import pandas as pd

    rows = []
    for span in requests:
        failed, kind = outcome(span)
        url = url_of(span)
        rows.append((span.start_s, span.duration_s, span.name, url, failed, kind, math.nan))
    frame = pd.DataFrame.from_records(
        rows, columns=["start_s", "elapsed_s", "label", "url", "failed", "error_kind", "users"]
    )
    return SampleLog(path, frame, outcomes_known=True, urls_known=frame["url"].notna().all())


def read(path: str | Path, encoding: str = "utf-8", progress: Progress = None) -> SampleLog:
    """The requests of one OTLP JSON file as samples."""
    spans = read_spans(path, encoding, progress)
    requests, _others = requests_of(spans)
    if not requests:
        raise MeasurementError(
            path,
            None,
            f"{len(spans)} spans but no root SERVER span; expected the traces of a service's "
            "requests (a SERVER span with no parent in the file is a request)",
        )
    return sample_log(str(path), requests)
