"""`tiersim import otel` against the OTLP JSON trace of a real instrumented run on loopback
(tests/fixtures/measurements/otel: make_trace.py, OpenTelemetry Python SDK 1.45.1): a front
proxy (service "front") before an application (service "shop") that calls SQLite.

The run's design is known: 600 requests, 200 each of /catalog (1 query), /search (3 queries)
and /order (an insert and a query; the shop answers 500 to about one in eight)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.measurements.classes import ClassMap
from sim.measurements.errors import MeasurementError
from sim.measurements.importer import ImportOptions, ImportUsageError, import_runs
from sim.measurements.windows import Cut

pytest.importorskip("pandas")

OTEL = Path(__file__).resolve().parents[1] / "fixtures" / "measurements" / "otel"
TRACE = OTEL / "trace.jsonl.gz"


def raw_spans():
    """(service, span) of every span, read with json alone."""
    found = []
    with gzip.open(TRACE, "rt") as handle:
        lines = handle.read().splitlines()
    for line in lines:
        for resource in json.loads(line)["resourceSpans"]:
            service = next(
                a["value"]["stringValue"]
                for a in resource["resource"]["attributes"]
                if a["key"] == "service.name"
            )
            for scope in resource["scopeSpans"]:
                found += [(service, span) for span in scope["spans"]]
    return found


def attribute(span, key):
    return next((a["value"] for a in span.get("attributes", []) if a["key"] == key), None)


def tier_rows(breakdowns, group="total"):
    return {r["tier"]: r for b in breakdowns for r in b.rows if r["class"] == group}


def test_each_root_server_span_is_a_request_and_a_5xx_is_a_failure():
    roots = [s for service, s in raw_spans() if service == "front" and s["kind"] == 2]
    statuses = Counter(attribute(s, "http.status_code")["intValue"] for s in roots)
    rows, _ = import_runs("otel", [str(TRACE)], ImportOptions())
    total = next(r for r in rows if r["class"] == "total")
    assert len(roots) == 600
    assert (
        total["count.completed"] == statuses["200"] and total["count.errors"] == statuses["500"] > 0
    )
    assert total["count.error.5xx"] == statuses["500"]
    ok = [s for s in roots if attribute(s, "http.status_code")["intValue"] == "200"]
    elapsed = np.array([int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"]) for s in ok]) / 1e9
    assert total["response.mean"] == pytest.approx(elapsed.mean())
    assert total["response.p95"] == pytest.approx(np.percentile(elapsed, 95))
    assert {r["class"] for r in rows} == {"GET /catalog", "GET /search", "GET /order", "total"}


def test_database_calls_per_request_are_the_services_queries():
    _, breakdowns = import_runs("otel", [str(TRACE)], ImportOptions())
    calls = {
        name: tier_rows(breakdowns, name)["database"]["calls_per_request"]
        for name in ("GET /catalog", "GET /search", "GET /order")
    }
    assert calls == {"GET /catalog": 1.0, "GET /search": 3.0, "GET /order": 2.0}


def test_the_tiers_add_up_to_the_response_time_and_the_app_is_its_span_less_its_queries():
    rows, breakdowns = import_runs("otel", [str(TRACE)], ImportOptions())
    for group in ("GET /catalog", "GET /search", "GET /order", "total"):
        tiers = tier_rows(breakdowns, group)
        assert set(tiers) == {"front", "app", "database"}
        mean = next(r for r in rows if r["class"] == group)["response.mean"]
        assert sum(t["time_per_request_s"] for t in tiers.values()) == pytest.approx(mean, rel=1e-9)
        assert sum(t["share_of_response"] for t in tiers.values()) == pytest.approx(1.0)
    # by hand: the shop's SERVER spans less their SQLite spans, over the successful requests
    spans = raw_spans()
    shop = {s["spanId"]: s for service, s in spans if service == "shop" and s["kind"] == 2}
    queries = Counter()
    for _service, s in spans:
        if attribute(s, "db.system") is not None:
            queries[s["parentSpanId"]] += int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])
    app = [
        (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"]) - queries[i]) / 1e9
        for i, s in shop.items()
        if attribute(s, "http.status_code")["intValue"] == "200"
    ]
    assert tier_rows(breakdowns)["app"]["time_per_request_s"] == pytest.approx(
        np.mean(app), rel=1e-9
    )


def test_tier_rules_come_before_the_defaults():
    options = ImportOptions(tier_rules=["tomcat=service.name:^shop$", "reads=name:^select$"])
    _, breakdowns = import_runs("otel", [str(TRACE)], options)
    search = tier_rows(breakdowns, "GET /search")
    assert set(search) == {"front", "tomcat"}  # the first rule takes every shop span
    options = ImportOptions(tier_rules=["reads=name:^select$"])
    order = tier_rows(import_runs("otel", [str(TRACE)], options)[1], "GET /order")
    assert (
        order["reads"]["calls_per_request"] == 1.0 and order["database"]["calls_per_request"] == 1.0
    )
    with pytest.raises(ImportUsageError, match="--tier maps trace spans"):
        import_runs("jtl", ["x.jtl"], ImportOptions(tier_rules=["a=name:b"]))


def _write_spans(path, keep):
    """The fixture's export requests with only the spans `keep(service, span)` accepts."""
    with open(path, "w") as out, gzip.open(TRACE, "rt") as lines:
        for line in lines:
            document = json.loads(line)
            for resource in document["resourceSpans"]:
                service = next(
                    a["value"]["stringValue"]
                    for a in resource["resource"]["attributes"]
                    if a["key"] == "service.name"
                )
                for scope in resource["scopeSpans"]:
                    scope["spans"] = [s for s in scope["spans"] if keep(service, s)]
            out.write(json.dumps(document) + "\n")


def test_a_trace_split_over_files_joins_with_run_and_an_untraced_backend_is_listed(tmp_path):
    front, shop = tmp_path / "front.jsonl", tmp_path / "shop.jsonl"
    _write_spans(front, lambda service, span: service == "front")
    _write_spans(shop, lambda service, span: service == "shop")
    _, whole = import_runs("otel", [str(TRACE)], ImportOptions())
    _, joined = import_runs("otel", [str(front), str(shop)], ImportOptions(run="split"))
    assert [(r["class"], r["tier"], r["time_per_request_s"]) for r in joined[0].rows] == [
        (r["class"], r["tier"], r["time_per_request_s"]) for r in whole[0].rows
    ]
    # the front alone: its call to the shop reaches no traced server
    _, alone = import_runs("otel", [str(front)], ImportOptions())
    # with nothing traced below it, the proxy is the only server: the default rules call it app
    assert set(tier_rows(alone)) == {"app", "unmapped"}
    # listed: the call of every request the tier table counts (the successful ones)
    ok = next(
        r for r in import_runs("otel", [str(front)], ImportOptions())[0] if r["class"] == "total"
    )
    assert sum(alone[0].unmapped.values()) == ok["count.completed"]


def test_cuts_apply_to_the_tier_table_as_to_the_measurement_table():
    rows, breakdowns = import_runs(
        "otel", [str(TRACE)], ImportOptions(cut=Cut(warmup_s=2.0, until_s=8.0))
    )
    total = next(r for r in rows if r["class"] == "total")
    assert tier_rows(breakdowns)["app"]["requests"] == total["count.completed"] < 574


def test_malformed_traces_are_named_with_their_line(tmp_path):
    with gzip.open(TRACE, "rt") as handle:
        lines = handle.read().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(lines[0] + "\n" + lines[1][:100] + "\n")
    with pytest.raises(MeasurementError, match=r"cut.jsonl:2: not a JSON line"):
        import_runs("otel", [str(cut)], ImportOptions())
    no_server = tmp_path / "client.jsonl"
    _write_spans(no_server, lambda service, span: span["kind"] == 3 and service == "shop")
    with pytest.raises(MeasurementError, match="no root SERVER span"):
        import_runs("otel", [str(no_server)], ImportOptions())


def test_cli_writes_the_tier_table_beside_the_measurement_table(tmp_path):
    out = tmp_path / "traced.csv"
    result = CliRunner().invoke(main, ["import", "otel", str(TRACE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    tiers = (tmp_path / "traced.tiers.csv").read_text().splitlines()
    assert tiers[0].startswith("run,class,tier,requests,calls_per_request,time_per_request_s")
    assert len(tiers) == 1 + 4 * 3
    result = CliRunner().invoke(
        main, ["import", "otel", str(TRACE), "-o", str(out), "--tier", "front"]
    )
    assert result.exit_code == 2 and "TIER=FIELD:REGEX" in result.output


def test_estimate_shows_the_tier_table_beside_its_measurement_table(tmp_path):
    out = tmp_path / "traced.csv"
    assert CliRunner().invoke(main, ["import", "otel", str(TRACE), "-o", str(out)]).exit_code == 0
    shown = CliRunner().invoke(main, ["estimate", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "per-tier time per request (traces, traced.tiers.csv" in shown.output
    as_json = CliRunner().invoke(main, ["estimate", str(out), "--json"])
    assert as_json.exit_code == 0, as_json.output
    document = json.loads(as_json.stdout)
    database = next(
        t for t in document["tiers"] if t["class"] == "GET /search" and t["tier"] == "database"
    )
    assert database["calls_per_request"] == 3.0
    assert document["runs"][0]["users"] is None  # a trace names no users: null, not NaN
    (tmp_path / "traced.tiers.csv").write_text("run,class,tier\n")
    broken = CliRunner().invoke(main, ["estimate", str(out)])
    assert broken.exit_code == 3 and "traced.tiers.csv:1: header lacks" in broken.output


def test_class_by_url_takes_the_path_of_the_older_conventions_full_url():
    # the WSGI instrumentation writes http.url (the conventions before url.full / url.path)
    rows, breakdowns = import_runs(
        "otel", [str(TRACE)], ImportOptions(classes=ClassMap.parse("url", []))
    )
    assert {r["class"] for r in rows} == {"/catalog", "/search", "/order", "total"}
    assert tier_rows(breakdowns, "/search")["database"]["calls_per_request"] == 3.0


def test_the_trace_agrees_with_the_drivers_own_summary_of_the_run():
    """make_trace.py's client loop recorded each request's path, status and times
    (driver-summary.json): the trace's requests are the same, class by class."""
    driver = json.loads((OTEL / "driver-summary.json").read_text())
    rows, _ = import_runs("otel", [str(TRACE)], ImportOptions(classes=ClassMap.parse("url", [])))
    for path in ("/catalog", "/search", "/order"):
        row = next(r for r in rows if r["class"] == path)
        assert row["count.completed"] == driver["by_path_and_status"].get(f"{path} 200", 0)
        assert row["count.errors"] == driver["by_path_and_status"].get(f"{path} 500", 0)
    total = next(r for r in rows if r["class"] == "total")
    succeeded = sum(n for key, n in driver["by_path_and_status"].items() if key.endswith(" 200"))
    # the driver's span (first send to last answer) holds the servers' (first request span's
    # start to the last one's end) within the client's own few milliseconds
    span = driver["last_answered_s"] - driver["first_sent_s"]
    assert total["throughput"] == pytest.approx(succeeded / span, rel=0.005)


def test_the_tier_table_shows_each_class_s_failed_share_beside_its_times(tmp_path):
    """The per-tier times are of the successful requests; /order failed one time in eight (26
    of its 200 in the trace, as the driver recorded), which the table now shows beside them."""
    driver = json.loads((OTEL / "driver-summary.json").read_text())
    failed = driver["by_path_and_status"]["/order 500"]
    sent = failed + driver["by_path_and_status"]["/order 200"]
    out = tmp_path / "traced.csv"
    assert CliRunner().invoke(main, ["import", "otel", str(TRACE), "-o", str(out)]).exit_code == 0
    shown = CliRunner().invoke(main, ["estimate", str(out)])
    assert shown.exit_code == 0, shown.output
    tiers = shown.output[shown.output.index("per-tier time per request") :].splitlines()
    assert tiers[1].split()[:5] == ["run", "class", "tier", "requests", "failed"]
    order = [line.split() for line in tiers if "GET /order" in line]
    assert len(order) == 3  # app, database, front
    for cells in order:
        assert cells[4] == str(sent - failed) and " ".join(cells[5:7]) == "13.0 %"
    assert all("0 %" in line for line in tiers if "GET /catalog" in line)
    document = json.loads(CliRunner().invoke(main, ["estimate", str(out), "--json"]).stdout)
    for row in document["tiers"]:
        if row["class"] == "GET /order":
            assert row["failed_share"] == pytest.approx(failed / sent)
