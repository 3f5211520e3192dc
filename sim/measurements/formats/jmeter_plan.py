"""A JMeter test plan (`.jmx`): its thread groups (users, ramp-up, loops or duration) and the
timers before each sampler, read for `tiersim plan --jmx` (the users' think time, as JMeter
runs it: `jmeter_timers`).

A `.jmx` is XML: a `<hashTree>` holds elements, each followed by the `<hashTree>` of its
children. A timer applies to every sampler in the tree it stands in (its siblings and their
descendants), and a timer inside a sampler's own tree to that sampler alone; disabled elements
(`enabled="false"`) and their trees are left out, as JMeter leaves them. The XML is read with
the standard library's expat with a DOCTYPE refused: a test plan has none, and refusing it
refuses every entity declaration (no "billion laughs", no external file).

A value written as a property, `${__P(users,10)}` or `${__property(users,,10)}`, is read as its
default (the run's `-Jusers=` may have changed it: the plan says so); any other `${...}` is a
value the plan does not hold.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from sim.measurements.errors import MeasurementError
from sim.measurements.formats.jmeter_timers import KINDS, Think, Timer, think

THREAD_GROUPS = ("ThreadGroup",)  # JMeter's own closed-loop group
SETUP_GROUPS = ("SetupThreadGroup", "PostThreadGroup")  # run once before/after: no load
MAX_BYTES = 64 * 2**20
MAX_TIMER_MS = 86_400_000
_PROPERTY = re.compile(r"^\$\{__(?:P|property)\(\s*([^,)]+?)\s*(?:,\s*,?\s*([^)]*?)\s*)?\)\}$")


@dataclass
class _Node:
    tag: str
    attributes: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)
    text: str = ""

    def prop(self, name: str) -> _Node | None:
        """The direct or nested `*Prop` child named `name` (elementProp's included)."""
        for child in self.children:
            if child.attributes.get("name") == name:
                return child
        for child in self.children:
            if child.tag == "elementProp":
                found = child.prop(name)
                if found is not None:
                    return found
        return None


@dataclass
class Value:
    """A numeric setting of the plan: its number (None where the plan does not hold it)."""

    number: float | None
    written: str  # as the plan writes it
    note: str = ""  # a property's default, or why there is no number


@dataclass
class ThreadGroup:
    name: str
    line: int
    threads: Value
    ramp_up_s: Value
    loops: Value  # -1: forever (with the scheduler's duration)
    duration_s: Value | None  # the scheduler's, when it is on
    samplers: list[str] = field(default_factory=list)
    timers: list[list[Timer]] = field(default_factory=list)  # before each sampler
    unknown: list[str] = field(default_factory=list)  # timers and values it cannot say

    def think(self, path: str | Path) -> Think:
        if not self.samplers:
            raise MeasurementError(
                path, self.line, f"thread group {self.name!r} has no enabled sampler; expected one"
            )
        names = sorted({t.describe() for timers in self.timers for t in timers}) or ["no timer"]
        said = (
            f"{Path(path).name}:{self.line} thread group {self.name!r}: "
            f"{', '.join(names)} before {'each of ' if len(self.samplers) > 1 else ''}"
            f"{len(self.samplers)} sampler{'s' if len(self.samplers) > 1 else ''}"
        )
        return think(self.timers, said)


@dataclass
class TestPlan:
    path: str
    groups: list[ThreadGroup]
    unknown: list[str]  # thread groups of plugins, and other elements that shape the load


# JMeter writes each element and its <hashTree> of children: a plan's controllers, a dozen
# deep at most, are a few dozen elements deep
MAX_DEPTH = 200
# a plan of a hundred samplers, each with its properties, is some ten thousand elements
MAX_ELEMENTS = 500_000


def _parse(path: str | Path) -> _Node:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # /dev/zero, a FIFO: read forever
            raise MeasurementError(
                path,
                None,
                "not a regular file (a folder, pipe or device); give the .jmx JMeter saved",
            )
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise MeasurementError(path, None, f"cannot read the test plan ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise MeasurementError(path, None, "too large for a JMeter test plan (over 64 MiB)")
    parser = expat.ParserCreate()
    stack: list[_Node] = []
    roots: list[_Node] = []
    texts: list[list[str]] = []  # each open element's text, in pieces (joined at its end)
    elements = 0

    def doctype(*_args) -> None:
        raise MeasurementError(
            path,
            parser.CurrentLineNumber,
            "a DOCTYPE (entity declarations are refused); a JMeter test plan has none: is it "
            "the .jmx JMeter saved?",
        )

    def start(tag: str, attributes: dict[str, str]) -> None:
        if len(stack) >= MAX_DEPTH:  # the plan is walked recursively (`_walk`)
            raise MeasurementError(
                path,
                parser.CurrentLineNumber,
                f"elements nested more than {MAX_DEPTH} deep (<{tag}>); expected a JMeter test "
                "plan, whose controllers nest a few levels: is it the .jmx JMeter saved?",
            )
        nonlocal elements
        elements += 1
        if elements > MAX_ELEMENTS:  # each is kept, some hundreds of bytes
            raise MeasurementError(
                path,
                parser.CurrentLineNumber,
                f"more than {MAX_ELEMENTS:,} elements; a JMeter test plan has some thousands: is "
                "it the .jmx JMeter saved?",
            )
        node = _Node(tag, attributes, parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
        texts.append([])

    def end(_tag: str) -> None:
        stack.pop().text = "".join(texts.pop())

    def text(content: str) -> None:
        # expat hands a character reference (&#65;) over alone: ten million of them, added
        # to one string each, took quadratic time
        if texts:
            texts[-1].append(content)

    parser.StartDoctypeDeclHandler = doctype
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise MeasurementError(
            path,
            exc.lineno,
            f"not well-formed XML ({expat.ErrorString(exc.code)}); expected a JMeter test plan",
        ) from None
    root = roots[0]
    if root.tag != "jmeterTestPlan":
        raise MeasurementError(
            path, root.line, f"the root element is <{root.tag}>; expected <jmeterTestPlan> (.jmx)"
        )
    return root


def _value(node: _Node | None, default: str = "") -> Value:
    written = (node.text if node is not None else default).strip()
    try:
        return Value(float(written), written)
    except ValueError:
        pass
    found = _PROPERTY.match(written)
    if found and found.group(2):
        name, fallback = found.group(1), found.group(2)
        try:
            return Value(float(fallback), written, f"property {name}'s default (-J{name}=)")
        except ValueError:
            pass
    return Value(None, written, "not a number the plan holds")


def _enabled(node: _Node) -> bool:
    return node.attributes.get("enabled", "true") != "false"


def _pairs(tree: _Node):
    """(element, its children's hashTree) in a hashTree."""
    children = tree.children
    for index, element in enumerate(children):
        if element.tag == "hashTree":
            continue
        following = children[index + 1] if index + 1 < len(children) else None
        yield element, following if following is not None and following.tag == "hashTree" else None


def _timer(path: str | Path, node: _Node) -> Timer:
    name = node.attributes.get("testname", node.tag)
    delay = _value(node.prop("ConstantTimer.delay"), "0")
    spread = _value(node.prop("RandomTimer.range"), "0")
    for label, value in (("ConstantTimer.delay", delay), ("RandomTimer.range", spread)):
        # JMeter reads them as a long and a double of milliseconds; more than a day between
        # two requests is no think time (nan, inf and 1e30 were an internal error or 3e19 years)
        if value.number is None or not 0 <= value.number <= MAX_TIMER_MS:
            raise MeasurementError(
                path,
                node.line,
                f"timer {name!r}: {label} = {value.written!r}, not a number of ms from 0 to "
                f"{MAX_TIMER_MS:,} (a day) the plan holds; give the think time with --think "
                "instead",
            )
    assert delay.number is not None and spread.number is not None
    return Timer(node.tag, name, int(delay.number), float(spread.number), node.line)


def _walk(path, tree: _Node, scope: list[Timer], group: ThreadGroup) -> None:
    """The samplers under `tree`, each with the timers in its scope."""
    here = [*scope]
    for element, _children in _pairs(tree):  # the timers standing in this tree
        if not _enabled(element):
            continue
        if element.tag in KINDS:
            here.append(_timer(path, element))
        elif (
            element.tag.endswith("Timer")
            or "timer" in element.attributes.get("testclass", "").lower()
        ):
            group.unknown.append(
                f"{element.tag} {element.attributes.get('testname', '')!r} (line {element.line})"
            )
    for element, children in _pairs(tree):
        if not _enabled(element) or element.tag in KINDS:
            continue
        if element.tag.endswith(("Sampler", "SamplerProxy")):
            own = []
            if children is not None:  # timers inside the sampler's own tree: its alone
                own = [
                    _timer(path, e) for e, _ in _pairs(children) if _enabled(e) and e.tag in KINDS
                ]
            group.samplers.append(element.attributes.get("testname", element.tag))
            group.timers.append([*here, *own])
        elif children is not None:
            _walk(path, children, here, group)


def read(path: str | Path) -> TestPlan:
    """The plan's enabled thread groups with the timers before each of their samplers."""
    root = _parse(path)
    top = next((c for c in root.children if c.tag == "hashTree"), None)
    if top is None:
        raise MeasurementError(
            path, root.line, "no <hashTree> under <jmeterTestPlan>; expected a test plan"
        )
    groups: list[ThreadGroup] = []
    unknown: list[str] = []
    scope: list[Timer] = []  # timers at the test plan's level apply to every group
    for plan, plan_tree in _pairs(top):
        if plan_tree is None:
            continue
        scope = [_timer(path, e) for e, _ in _pairs(plan_tree) if _enabled(e) and e.tag in KINDS]
        for element, children in _pairs(plan_tree):
            if not _enabled(element) or element.tag in SETUP_GROUPS:
                continue
            if element.tag in THREAD_GROUPS:
                groups.append(_group(path, element, children, scope))
            elif (
                "ThreadGroup" in element.tag
                or "threads" in element.attributes.get("testclass", "").lower()
            ):
                unknown.append(
                    f"{element.tag} {element.attributes.get('testname', '')!r} (line {element.line})"
                )
        del plan
    if not groups and not unknown:
        raise MeasurementError(path, None, "no enabled thread group; expected a ThreadGroup")
    return TestPlan(str(path), groups, unknown)


def _group(path, element: _Node, children: _Node | None, scope: list[Timer]) -> ThreadGroup:
    scheduler = element.prop("ThreadGroup.scheduler")
    on = scheduler is not None and scheduler.text.strip() == "true"
    group = ThreadGroup(
        name=element.attributes.get("testname", "ThreadGroup"),
        line=element.line,
        threads=_value(element.prop("ThreadGroup.num_threads")),
        ramp_up_s=_value(element.prop("ThreadGroup.ramp_time"), "0"),
        loops=_value(element.prop("LoopController.loops"), "-1"),
        duration_s=_value(element.prop("ThreadGroup.duration")) if on else None,
    )
    if children is not None:
        _walk(path, children, scope, group)
    return group
