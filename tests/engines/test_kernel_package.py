"""The compiled kernel as a package: small modules, a loop that hands each event to its
module, no complex function in the engines, and a numba cache stamped with the whole package
(an edit in any module recompiles the loop)."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from sim.engines.compiled import kernel as k
from sim.engines.compiled.kernel import cache, hooks, layout, loop

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "sim" / "engines" / "compiled" / "kernel"
MAX_LINES = 800
MAX_COMPLEXITY = 25


def test_no_kernel_module_is_long():
    lengths = {path.name: len(path.read_text().splitlines()) for path in KERNEL.glob("*.py")}
    assert len(lengths) > 10, lengths  # the package, not one file
    assert max(lengths.values()) <= MAX_LINES, lengths


def test_no_function_of_the_engines_is_complex():
    """McCabe's cyclomatic complexity (ruff's C901) of every function in `sim/engines`."""
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
            "--output-format",
            "concise",
            str(ROOT / "sim" / "engines"),
        ],
        capture_output=True,
        text=True,
    )
    assert found.returncode in (0, 1), found.stderr  # 1: findings, anything else: ruff failed
    assert "C901" not in found.stdout, found.stdout


def test_every_event_kind_has_one_handler_module():
    kinds = {name: value for name, value in vars(layout).items() if name.startswith("EV_")}
    # and the kinds the mechanisms' modules declare (`layout.declared`), which `hooks` hands on
    for module in hooks.MODULES:
        for name, value in vars(module).items():
            if name.startswith("EV_"):
                kinds[f"{module.__name__}.{name}"] = value
                assert value in module.EVENTS and value in hooks.EVENTS, name
    assert sorted(kinds.values()) == list(range(layout.N_EVENTS))
    for name, kind in kinds.items():
        owners = [m.__name__ for m in loop.HANDLERS if kind in m.EVENTS]
        assert len(owners) == 1, (name, owners)
    # `_handle` asks the modules in the order HANDLERS lists them, and only them
    asked = re.findall(r"kind in (\w+)\.EVENTS", inspect.getsource(loop._handle.py_func))
    assert asked == [m.__name__.rsplit(".", 1)[1] for m in loop.HANDLERS]


def test_every_kernel_function_is_stamped_with_the_whole_package():
    """Each cached function's index is stamped with the hash of every module of the package,
    so that the loop's cache cannot outlive an edit of a helper in another module."""
    stamp = cache.source_stamp()
    functions = [
        value
        for module in (sys.modules[name] for name in sorted(sys.modules))
        if module is not None and module.__name__.startswith(k.__name__ + ".")
        for value in vars(module).values()
        if hasattr(value, "_cache") and hasattr(value, "py_func")
    ]
    assert len(functions) > 150
    for function in functions:
        locator = function._cache._impl.locator
        assert isinstance(locator, cache.PackageLocator), function
        assert locator.get_source_stamp() == stamp
        assert function._cache._cache_file._source_stamp == stamp


def test_the_stamp_follows_every_file_of_the_package(tmp_path):
    for path in KERNEL.glob("*.py"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    before = cache.source_stamp(tmp_path)
    helper = tmp_path / "slots.py"
    text = helper.read_text()
    helper.write_text(text + "\n# an edit\n")
    assert cache.source_stamp(tmp_path) != before
    helper.write_text(text)
    assert cache.source_stamp(tmp_path) == before  # content, not time: an undo is no edit
    (tmp_path / "extra.py").write_text("")
    assert cache.source_stamp(tmp_path) != before  # a new module too


CALLER = """
from numba import njit

from {package} import helper


@njit(cache=True)
def answer(x):
    return helper.twice(x) + 1
"""
HELPER = """
from numba import njit


@njit(cache=True)
def twice(x):
    return {factor} * x
"""
RUN = """
import sys
from numba.core import event

sys.path.insert(0, {root!r})
listener = event.RecordingListener()
with event.install_listener("numba:compile", listener):
    from {package} import caller

    print(caller.answer(10), len(listener.buffer))
"""


def _package(tmp_path: Path, name: str, locator: bool) -> Path:
    package = tmp_path / name
    package.mkdir()
    init = ""
    if locator:
        init = (
            "from pathlib import Path\n"
            "from sim.engines.compiled.kernel.cache import register\n"
            "register(Path(__file__).parent)\n"
        )
    (package / "__init__.py").write_text(init)
    (package / "caller.py").write_text(CALLER.format(package=name))
    (package / "helper.py").write_text(HELPER.format(factor=2))
    return package


def _answer(tmp_path: Path, name: str) -> tuple[int, int]:
    """(answer(10), numba compilations) in a new process."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RUN.format(root=str(tmp_path), package=name))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


def test_an_edit_of_a_helper_module_recompiles_its_cached_callers(tmp_path):
    """numba issue 1833, with and without the package locator: a caller cached from a
    package of two modules, its helper edited."""
    with_locator = _package(tmp_path, "stamped", locator=True)
    assert _answer(tmp_path, "stamped")[0] == 21  # compiled and cached
    assert _answer(tmp_path, "stamped") == (21, 0)  # unchanged: from the cache, 0 compiles
    (with_locator / "helper.py").write_text(HELPER.format(factor=3))
    answer, compiled = _answer(tmp_path, "stamped")
    assert answer == 31 and compiled > 0  # the edit is seen: recompiled
    assert _answer(tmp_path, "stamped") == (31, 0)

    # numba's own stamp (the defining file alone) keeps the stale caller: why the locator
    plain = _package(tmp_path, "plain", locator=False)
    assert _answer(tmp_path, "plain")[0] == 21
    (plain / "helper.py").write_text(HELPER.format(factor=3))
    assert _answer(tmp_path, "plain") == (21, 0)
