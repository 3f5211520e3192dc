"""The face itself: every name of `__all__` resolves, the stub names exactly those, each the
defining module's own object (so its signature is the real one), no `__getattr__ -> Any`
hides a misspelt name from mypy, and no public function takes untyped `**options`."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import sim

STUB = Path(sim.__file__).with_suffix(".pyi")


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def stub_names() -> dict[str, str]:
    """name -> the module (or package) the stub imports it from."""
    names = {}
    for node in stub_tree().body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} re-exported as {alias.asname}"
                names[alias.name] = str(node.module)
    return names


def stub_namespace() -> dict:
    namespace: dict = {}
    exec(compile(STUB.read_text(encoding="utf-8"), str(STUB), "exec"), namespace)
    return namespace


def public_callables():
    return [
        name
        for name in sim.__all__
        if callable(getattr(sim, name)) and not inspect.isclass(getattr(sim, name))
    ]


def test_the_stub_names_every_public_name_and_nothing_else():
    assert set(stub_names()) == set(sim.__all__) - {"__version__"}
    assert set(sim.__all__) - {"__version__"} == set(sim._FACE) | set(sim._MODULES)


def test_no_module_getattr_in_the_stub():
    """With `def __getattr__(name) -> Any` in the stub, `sim.simulte(...)` type-checks."""
    functions = [n.name for n in stub_tree().body if isinstance(n, ast.FunctionDef)]
    assert "__getattr__" not in functions


@pytest.mark.parametrize("name", sorted(set(sim.__all__) - {"__version__"}))
def test_each_stub_name_is_the_real_object_with_the_real_signature(name):
    real = getattr(sim, name)
    stubbed = stub_namespace()[name]
    assert stubbed is real
    if name in sim._FACE:
        assert stub_names()[name] == sim._FACE[name]
    else:  # a module on the face, imported from its package
        assert f"{stub_names()[name]}.{name}" == sim._MODULES[name]
    if inspect.isfunction(real):
        assert inspect.signature(stubbed) == inspect.signature(real)


@pytest.mark.parametrize("name", public_callables())
def test_no_untyped_options(name):
    """Typed keyword arguments everywhere: no `**options`, every parameter annotated."""
    function = getattr(sim, name)
    for parameter in inspect.signature(function).parameters.values():
        assert parameter.kind is not inspect.Parameter.VAR_KEYWORD, f"{name}(**{parameter.name})"
        assert parameter.kind is not inspect.Parameter.VAR_POSITIONAL, f"{name}(*{parameter.name})"
        assert parameter.annotation is not inspect.Parameter.empty, f"{name}({parameter.name})"


def test_import_sim_stays_cheap():
    """`import sim` loads neither pandas nor the layers below the face."""
    code = (
        "import sys, sim; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('pandas', 'scipy', 'numba') or m.startswith('sim.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="simulte"):
        sim.simulte  # noqa: B018


def test_every_public_function_is_called_by_these_tests():
    """A function added to the face comes with its tests here (its calls and its errors)."""
    text = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_*.py"))
    missing = [name for name in public_callables() if f"sim.{name}(" not in text]
    assert missing == []
