"""The pictures a reader is shown: `tiersim plot`'s time series and the reproduction report.
Every trace of a plot has a colour of its own (a run has more traces than Plotly's 10-colour
cycle), grouped by tier; every numeric axis names its quantity, not just a unit."""

from __future__ import annotations

import json

from sim.present.plots import timeseries_figure, trace_colours
from sim.present.report import build_report

# the *_now columns of a two-node mod_proxy run: 14 traces, where the default cycle repeated
# a green on proxy.workers.in_use and tomcat2.threads.in_use
NAMES = [
    "proxy.workers.in_use_now",
    "proxy.workers.waiting_now",
    "proxy.backend_pool.open_now",
    "proxy.backend_pool.idle_now",
    "proxy.listen.queue_now",
    "tomcat1.threads.in_use_now",
    "tomcat1.threads.waiting_now",
    "tomcat1.connections.open_now",
    "tomcat1.serving_now",
    "tomcat2.threads.in_use_now",
    "tomcat2.threads.waiting_now",
    "tomcat2.connections.open_now",
    "tomcat2.serving_now",
    "database.connections.in_use_now",
]


def test_every_trace_of_a_timeseries_plot_has_its_own_colour_grouped_by_tier():
    columns = {"replication": [0, 0], "time": [1.0, 2.0], **{n: [1.0, 2.0] for n in NAMES}}
    figure = timeseries_figure(columns)
    colours = [trace.line.color for trace in figure.data]
    assert len(figure.data) == 14 and len(set(colours)) == 14, colours
    assert [trace.legendgroup for trace in figure.data] == [n.split(".")[0] for n in sorted(NAMES)]
    # one hue per tier: within a tier, the shades of one scale (red channel ordering aside,
    # the tiers' colour sets do not meet)
    by_tier: dict[str, set[str]] = {}
    for name, colour in trace_colours(NAMES).items():
        by_tier.setdefault(name.split(".")[0], set()).add(colour)
    assert sum(len(c) for c in by_tier.values()) == len(set().union(*by_tier.values())) == 14


def test_a_timeseries_plot_names_each_axis_quantity_and_unit():
    figure = timeseries_figure({"replication": [0], "time": [1.0], "app1.serving_now": [2.0]})
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        title = axis.title.text
        assert "[" in title and len(title.split("[")[0].strip()) > 3, title


def test_the_reproduction_report_names_each_numeric_axis(tmp_path):
    rows = [
        {
            "experiment": "seed001",
            "figure": f"max_clients={m} response",
            "unit": "s",
            "published": p,
            "simulated": p * 1.05,
            "ci_low": p,
            "ci_high": p * 1.1,
            "fitted": False,
            "overrides": [],
        }
        for m, p in ((150, 2.0), (250, 1.5))
    ]
    source = tmp_path / "seed001.json"
    source.write_text(json.dumps(rows), encoding="utf-8")
    _, figures, _ = build_report(source)
    assert figures
    for figure in figures:
        for name in ("xaxis", "yaxis"):
            axis = figure.layout[name]
            values = [getattr(trace, name[0]) for trace in figure.data]
            if any(v is not None and isinstance(v[0], str) for v in values):
                continue  # an axis of row names is labelled by its ticks
            title = axis.title.text or ""
            assert "[s]" in title and title.split("[s]")[0].strip(), (name, title)
