"""The measurements a planner could run next, as `capacity --what-next` weighs them: a run (its
`--set` settings: a load level, a node count) and the figures read from it.

Given on the command line (`--candidate "clients.users=80,backends.0.count=2:response.p95"`),
or by default from the question and the calibration:

* another level at the calibration's node count: the load the question is about, per node,
  at the node count the fitted runs had (the load test the planner already knows how to run);
* the same level at one node more, when the model has a backend count (`backends.0.count`):
  what a second Tomcat behind the same database does is what a one-node fit knows least;
* at the heaviest fitted level, each figure the stack parts declare a load test can measure
  of what they hold, which pins how long it is held (`sim.model.features.Hold.measured`: the
  database's lock wait, from the database's own statistics).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from sim.model.load import ModelError
from sim.studies.calibration.saved import Calibrated
from sim.studies.capacity.search import LOADS, CapacityError, SearchBase
from sim.studies.metrics import holds, metric_name, metric_names
from sim.studies.sweep.design import toml_literal

# what every run of a load test measures (JMeter's aggregate report: throughput, the mean and
# the 95th percentile of the response time)
RUN_FIGURES = ("throughput", "response.mean", "response.p95")
NODES = "backends.0.count"


class CandidateError(ValueError):
    """A `--candidate` that cannot be run; the message names it and the fix."""


@dataclass(frozen=True)
class Candidate:
    """A run and the figures read from it; `why` says where a default one came from."""

    settings: tuple[str, ...]  # PATH=VALUE, after the draw's and the user's overrides
    figures: tuple[str, ...]  # metric names
    why: str = ""

    @property
    def label(self) -> str:
        return ", ".join(self.settings) or "the question's own run"


def parse_candidate(text: str, base: SearchBase) -> Candidate:
    """`PATH=VALUE[,PATH=VALUE...][:FIGURE[,FIGURE...]]`, checked on the model: every setting
    loads, and the run reports every figure (default: the throughput, the mean and the p95)."""
    option = f"--candidate {text!r}"
    settings_text, figures_text = _split_last(text, ":")
    settings = tuple(s.strip() for s in _split(settings_text) if s.strip())
    if not settings:
        raise CandidateError(
            f"{option}: no setting; give the run as PATH=VALUE pairs, e.g. "
            '"clients.users=80,backends.0.count=2:response.p95"'
        )
    for setting in settings:
        if "=" not in setting:
            raise CandidateError(
                f"{option}: {setting!r} is not PATH=VALUE (e.g. clients.users=80); separate "
                "settings with ',' and the figure with ':'"
            )
    try:
        model = base.model(settings)
    except ModelError as exc:
        raise CandidateError(f"{option}: {exc.args[0].splitlines()[0]}") from None
    produced = metric_names(model)
    wanted = [metric_name(f.strip()) for f in _split(figures_text) if f.strip()]
    for figure in wanted:
        if figure not in produced:
            close = difflib.get_close_matches(figure, sorted(produced), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise CandidateError(
                f"{option}: the model reports no figure {figure!r}{hint} "
                "(`tiersim run MODEL --json` lists them)"
            )
    figures = tuple(wanted) or tuple(f for f in RUN_FIGURES if f in produced)
    return Candidate(settings, tuple(dict.fromkeys(figures)), "given")


def default_candidates(
    base: SearchBase,
    path: str,
    nominal: float | None,
    calibrated: Calibrated,
    slo_metrics: Sequence[str],
) -> tuple[list[Candidate], list[str]]:
    """The default measurements for a question on `base` varying `path` (answered `nominal`
    at the fitted values), and what could not be proposed, with why."""
    notes: list[str] = []
    model = base.model()
    load = _load_path(base, path, calibrated)
    if load is None:
        return [], [
            "no load level to propose (the model's load is neither clients.users nor a rate): "
            "give --candidate PATH=VALUE:FIGURE"
        ]
    dumped = model.model_dump()
    has_nodes = bool(dumped.get("backends"))
    asked_load = nominal if path == load and nominal is not None else _value(dumped, load)
    if asked_load is None:
        return [], [
            f"the model has no {load} to take a level of: give --candidate PATH=VALUE:FIGURE"
        ]
    asked_nodes = (
        (nominal if path == NODES and nominal is not None else _value(dumped, NODES))
        if has_nodes
        else None
    )
    fitted_nodes = _fitted_nodes(base, calibrated) if has_nodes else None
    integer = isinstance(_value(dumped, load), int)
    # the load per node the question is about, on the node count the planner already tests:
    # 200 users on the 2 nodes answered is 100 users on the fitted one node, where a one-node
    # fit at 10 and 40 users knows least what saturation looks like
    per_node = asked_load
    if asked_nodes and fitted_nodes and asked_nodes != fitted_nodes:
        per_node = asked_load * fitted_nodes / asked_nodes
    level = _literal(per_node, integer)
    figures = tuple(dict.fromkeys([*RUN_FIGURES, *slo_metrics]))
    produced = metric_names(model)
    figures = tuple(f for f in figures if f in produced)
    fitted_levels = _fitted_levels(calibrated, load)
    again = " (a level the calibration was fitted at)" if float(level) in fitted_levels else ""
    out: list[Candidate] = []
    nodes = () if fitted_nodes is None else (f"{NODES}={fitted_nodes}",)
    out.append(
        Candidate(
            (f"{load}={level}", *nodes),
            figures,
            f"another level at the calibration's {_nodes(fitted_nodes)}{again}",
        )
    )
    if fitted_nodes is not None:
        out.append(
            Candidate(
                (f"{load}={level}", f"{NODES}={fitted_nodes + 1}"),
                figures,
                f"the same level at {fitted_nodes + 1} nodes",
            )
        )
    else:
        notes.append("the model has no backend count: no run at one node more is proposed")
    if fitted_levels:
        heaviest = _literal(max(fitted_levels), integer)
        where = "the heaviest fitted level"
    else:
        heaviest, where = level, "the level above (the calibration names no fitted level)"
    for hold in holds(model):
        if hold.measured and hold.measured in produced:
            out.append(
                Candidate(
                    (f"{load}={heaviest}", *nodes),
                    (hold.measured,),
                    f"{hold.measured_title} at {where}",
                )
            )
    return out, notes


def _load_path(base: SearchBase, path: str, calibrated: Calibrated) -> str | None:
    """The load the levels are of: the varied one when it is a load, else the one the fitted
    runs set, else the model's user count."""
    if path in LOADS:
        return path
    for figure in calibrated.fitted:
        for setting in figure.overrides:
            name = setting.split("=", 1)[0].strip()
            if name in LOADS:
                return name
    dumped = base.model().model_dump()
    for name in ("clients.users", "clients.rate_per_s"):
        if _value(dumped, name) is not None:
            return name
    return None


def _fitted_levels(calibrated: Calibrated, load: str) -> set[float]:
    levels = set()
    for figure in calibrated.fitted:
        value = _setting(figure.overrides, load)
        if value is not None:
            levels.add(value)
    return levels


def _fitted_nodes(base: SearchBase, calibrated: Calibrated) -> int:
    """The node count the fitted runs had: their own setting, else the model's with the
    calibration's settings (and not the user's own `--set`)."""
    for figure in calibrated.fitted:
        value = _setting(figure.overrides, NODES)
        if value is not None:
            return int(value)
    saw = tuple(calibrated.overrides())
    try:
        model = SearchBase(base.raw_model, base.source, base.base_dir, saw, 0, 0).model()
    except ModelError as exc:
        raise CapacityError(f"the model as the calibration saw it: {exc}") from None
    return int(model.backends[0].count)


def _setting(overrides: Sequence[str], path: str) -> float | None:
    """The last value `overrides` set `path` to, when a number."""
    found = None
    for setting in overrides:
        name, _, value = setting.partition("=")
        if name.strip() == path:
            try:
                found = float(value)
            except ValueError:
                found = None
    return found


def _value(dumped: dict, path: str):
    node = dumped
    for key in path.split("."):
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                return None
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return None
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def _literal(value: float, integer: bool) -> str:
    return toml_literal(max(1, round(value)) if integer else float(f"{value:.4g}"))


def _nodes(count: int | None) -> str:
    if count is None:
        return "setting"
    return f"{count} node" + ("" if count == 1 else "s")


def _top_level(text: str, separator: str) -> list[int]:
    """Where `separator` stands in `text` outside braces, brackets and quotes (a distribution's
    table `{dist = "exponential", mean = 0.1}` is one value)."""
    found, depth, quote = [], 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == separator and depth == 0:
            found.append(i)
    return found


def _split(text: str) -> list[str]:
    """`text` split at its commas outside braces, brackets and quotes."""
    bounds = [-1, *_top_level(text, ","), len(text)]
    return [text[start + 1 : end] for start, end in itertools.pairwise(bounds)]


def _split_last(text: str, separator: str) -> tuple[str, str]:
    """`text` parted at its last `separator` outside braces, brackets and quotes (none: all
    of it is the first part)."""
    at = _top_level(text, separator)
    return (text, "") if not at else (text[: at[-1]], text[at[-1] + 1 :])
