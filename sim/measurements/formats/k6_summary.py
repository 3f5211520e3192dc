"""k6's end-of-test summary as JSON: `k6 run --summary-export=FILE` or the `data` object a
script's `handleSummary(data)` writes with `JSON.stringify` (k6 v0.30 to v1.x).

Both carry `metrics.<name>`: in `--summary-export` the figures themselves (`count`, `rate`,
`avg`, `med`, `p(95)`, ... and `passes`/`fails` of a rate), in `handleSummary` under
`values`. Used:

- `http_reqs`: `count` (every request, failed ones included) and `rate` (count per second
  of the test's run time);
- `http_req_failed`: `passes`, the requests that failed (its value is 1 for a failure), and
  `fails`, those that did not: the successful responses;
- `http_req_duration{expected_response:true}`: the successful responses' times (ms), `avg`,
  `med`, `p(90)`, `p(95)` and `p(99)` when the script's `summaryTrendStats` asks for it. k6
  puts this sub-metric into the summary whenever a request can fail; without it, and with
  failures, the response times mix failures in and are left empty.

The run's length is `state.testRunDurationMs` (handleSummary) or `count / rate`; the row is
one window [0, length]. k6's percentile is numpy's default (linear between order statistics).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from sim.measurements.classes import TOTAL
from sim.measurements.errors import MeasurementError
from sim.measurements.table import Row
from sim.measurements.text import nested_too_deep, read_lines

EXPECTED = "k6's end-of-test summary JSON (k6 run --summary-export=FILE, or handleSummary's data)"
SUCCESSES = "http_req_duration{expected_response:true}"
STATISTICS = {"avg": "response.mean", "med": "response.p50", "p(90)": "response.p90",
              "p(95)": "response.p95", "p(99)": "response.p99"}  # fmt: skip


def _metric(path, metrics: dict, name: str, required: bool = True) -> dict | None:
    metric = metrics.get(name)
    if metric is None:
        if required:
            raise MeasurementError(
                path,
                None,
                f"metrics has no {name!r}; expected {EXPECTED} of a test that made HTTP requests",
            )
        return None
    values = metric.get("values", metric) if isinstance(metric, dict) else None
    if not isinstance(values, dict):
        raise MeasurementError(path, None, f"metrics.{name} is not an object; expected {EXPECTED}")
    return values


def _figure(path, name: str, values: dict, key: str) -> float:
    value = values.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise MeasurementError(
            path, None, f"metrics.{name}.{key} = {value!r}; expected a number >= 0"
        )
    return float(value)


def aggregate_rows(path: str | Path, run: str, encoding: str = "utf-8") -> list[Row]:
    """The one row (class total) of a k6 summary: successful responses only."""
    text = "\n".join(read_lines(path, EXPECTED, encoding))
    try:
        document = json.loads(text)
    except RecursionError:
        raise nested_too_deep(path, 1, EXPECTED) from None
    except json.JSONDecodeError as exc:
        hint = (
            "; this looks like k6 --out json points: import it as k6"
            if text.lstrip().startswith('{"type"') or text.lstrip().startswith('{"metric"')
            else ""
        )
        raise MeasurementError(
            path, exc.lineno, f"not a JSON document ({exc.msg}){hint}; expected {EXPECTED}"
        ) from None
    metrics = document.get("metrics") if isinstance(document, dict) else None
    if not isinstance(metrics, dict):
        raise MeasurementError(path, 1, f"no `metrics` object; expected {EXPECTED}")
    requests = _metric(path, metrics, "http_reqs")
    assert requests is not None
    count = _figure(path, "http_reqs", requests, "count")
    rate = _figure(path, "http_reqs", requests, "rate")
    state = document.get("state") if isinstance(document.get("state"), dict) else {}
    if "testRunDurationMs" in state:
        duration = _figure(path, "state", state, "testRunDurationMs") / 1000.0
    elif rate > 0:
        duration = count / rate
    else:
        raise MeasurementError(path, None, "http_reqs.rate = 0; expected a run with requests")
    failed = _metric(path, metrics, "http_req_failed", required=False)
    failures = (
        _figure(path, "http_req_failed", failed, "passes") if failed is not None else math.nan
    )
    successes = count - failures if failed is not None else math.nan
    row: Row = {
        "run": run,
        "window_start_s": 0.0,
        "window_end_s": duration,
        "class": TOTAL,
        "users": math.nan,
        "arrival_rate_per_s": math.nan,
        "throughput": successes / duration if duration > 0 else math.nan,
        "count.completed": successes,
        "count.errors": failures,
    }
    times = _metric(path, metrics, SUCCESSES, required=False)
    if times is None and failures == 0:
        times = _metric(path, metrics, "http_req_duration")  # no failure: all are successes
    for key, column in STATISTICS.items():
        row[column] = (
            _figure(path, SUCCESSES, times, key) / 1000.0
            if times is not None and key in times
            else math.nan
        )
    return [row]
