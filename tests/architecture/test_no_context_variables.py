"""No `ContextVar` in the studies or the command line: what a step of a study needs (the
experiment read once, a `[[choose]]` candidate's settings, the progress callback of the
candidate being fitted) is passed to it as a value (`sim.studies.records.Experiment`,
`sim.studies.records.with_candidate`), not set around it and read deep inside, where a
thread started without copying the context (a candidate fitted side by side) would see
another value."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sim/studies", "sim/cli")
WORD = re.compile(r"\bContextVar\b|\bcontextvars\b")


def test_no_context_variable_in_the_studies_or_the_command_line():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WORD.search(line)
    ]
    assert not found, "pass the value instead of a context variable:\n" + "\n".join(found)


def test_the_search_sees_the_packages():
    # a check that cannot fail is no check: the packages are where the search looks
    for package in PACKAGES:
        assert any((ROOT / package).rglob("*.py")), package
