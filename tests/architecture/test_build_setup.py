"""The build set-up uses none of the forms setuptools deprecates with a date: `pip install -e .`
warned that the project's build would stop working after 2027-02-18 while pyproject.toml held
`license = { text = "MIT" }`.

setuptools (77 and later, `config/_apply_pyprojecttoml.py` and `dist.py`) emits a
SetuptoolsDeprecationWarning due 2027-02-18 for `project.license` as a TOML table, for
`License ::` classifiers beside a licence expression, and for
`tool.setuptools.license-files`; a `setup.py` or `setup.cfg` would bring its own older forms.
The licence is an SPDX expression (PEP 639), which setuptools reads from version 77 on.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_licence_is_an_spdx_expression_not_a_table():
    licence = pyproject()["project"]["license"]
    assert isinstance(licence, str), f"project.license = {licence!r}: give an SPDX expression"
    assert re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*", licence)


def test_no_licence_classifier_nor_tool_licence_files():
    config = pyproject()
    classifiers = config["project"].get("classifiers", [])
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert "license-files" not in config.get("tool", {}).get("setuptools", {})


def test_the_build_asks_for_a_setuptools_that_reads_the_expression():
    requires = pyproject()["build-system"]["requires"]
    (setuptools,) = [r for r in requires if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools.replace(" ", ""))
    assert found and int(found.group(1)) >= 77, setuptools


def test_no_setup_py_nor_setup_cfg():
    assert not (ROOT / "setup.py").exists()
    assert not (ROOT / "setup.cfg").exists()
