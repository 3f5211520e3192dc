"""A mechanism on both engines lives in its own files (CONTRIBUTING.md, "A mechanism on both
engines"): the database's shared lock is one stack part, one reference module and one kernel
module, beside the schema; the generic code (the database's part, the probe layout, `solve`,
the stability check, the reference assembler, the compiled plan and support table, the
kernel's layout, the kernel's hooks on the request's path) reads what those declare, and finds
the modules that declare it (`kernel/declarations.py`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the layers that build and run a model; the studies, the command line and the importers
# read the lock's output names (`database.lock.wait`), which are its figures, not its workings
LAYERS = ("model", "tiers", "kernel", "random", "observe", "engines", "analytic", "run", "stats")

# the lock's own names: its section, paths, features, probe and streams (`database.lock...`),
# its classes and functions, its kernel columns (`C_LOCK_POOL`, `J_LOCK`, ...), its modules
NAMES = re.compile(
    r"database\.lock|shared_lock|SharedLock|LockPart|(?<![A-Z])LOCK|\block\.\w|^\s*lock,$"
    r"|import lock\b",
    re.MULTILINE,
)

OWN = {
    "sim/model/parts/shared_lock.py",  # the stack part
    "sim/tiers/database/lock.py",  # the reference module
    "sim/engines/compiled/kernel/lock.py",  # the kernel module
}
BESIDE = {
    "sim/model/schema.py",  # its section, `DatabaseLock`
}
KERNEL = ROOT / "sim" / "engines" / "compiled" / "kernel"


# the study that ranks resources (the bottleneck at a capacity answer) reads what the parts
# declare of each one (`sim.model.features.Hold`: its nesting, title, sharing) from the probe
# layout, and names none itself: a new mechanism needs no entry there; nor does the one that
# proposes the next measurement (the figure a part declares a load test can measure of it)
RANKS = "sim/studies/capacity/bottleneck.py"
PROPOSES = "sim/studies/capacity/candidates.py"


def _naming() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for layer in LAYERS
        for path in (ROOT / "sim" / layer).rglob("*.py")
        if NAMES.search(path.read_text())
    }


def test_the_shared_lock_is_named_only_in_its_own_files():
    assert _naming() == OWN | BESIDE


def test_no_kernel_module_but_its_own_names_the_lock():
    """The hooks, the loop and the layout find the lock's module (`kernel/declarations.py`):
    none of them names it, nor its functions, columns or events."""
    naming = {path.name for path in KERNEL.glob("*.py") if NAMES.search(path.read_text())}
    assert naming == {"lock.py"}


def test_the_hooks_reach_every_mechanism():
    """Every module that declares itself a mechanism is one the hooks call, in each hook whose
    functions it defines (the lock in all of them), and the hooks call nothing else."""
    from sim.engines.compiled.kernel import declarations, hooks

    found = declarations.mechanisms()
    assert "lock" in found
    assert [m.__name__.rsplit(".", 1)[1] for m in hooks.MODULES] == list(found)
    # each hook, the functions of a module it calls (the other entries: numbers, kinds)
    takes = {
        "call": ("guards", "call"),
        "released": ("released",),
        "granted": ("granted",),
        "next_holder": ("random_order", "next_holder"),
        "on_event": ("on_event",),
    }
    assert set(takes) == set(hooks.REACHES)
    for hook, functions in takes.items():
        reached = [
            [f for f in (entry if isinstance(entry, tuple) else (entry,)) if hasattr(f, "py_func")]
            for entry in hooks.REACHES[hook]
        ]
        expected = [
            [getattr(m, f) for f in functions]
            for m in hooks.MODULES
            if all(hasattr(m, f) for f in functions)
        ]
        assert expected, f"no mechanism takes part in `{hook}`"
        assert reached == expected, hook
    lock = hooks.MODULES[found.index("lock")]
    assert set(hooks.EVENTS) == set(lock.EVENTS)
    assert hooks.REACHES["granted"][0][:2] == (lock.ROLE_LOCK, lock.ROLE_LOCK + 1)


def test_one_reader_of_the_kernel_modules_declarations():
    """The layout's columns and the engine's choice read the modules' declarations by one
    reader, the kernel's (`kernel/declarations.py`), and what it reads is what the modules
    hold once imported."""
    from sim.engines.compiled import mechanisms
    from sim.engines.compiled.kernel import declarations, layout

    readers = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "sim" / "engines").rglob("*.py")
        if "literal_eval" in path.read_text()
    }
    assert readers == {"sim/engines/compiled/kernel/declarations.py"}
    for name, found in declarations.declared().items():
        module = __import__(f"sim.engines.compiled.kernel.{name}", fromlist=["_"])
        for key, value in found.items():
            assert getattr(module, key) == value, (name, key)
        for table, count in found.get("LAYOUT", {}).items():
            assert len(layout.declared(module.__name__, table)) == count, (name, table)
    assert mechanisms.literal() == {
        name: {k: v for k, v in found.items() if k in mechanisms.DECLARED}
        for name, found in declarations.declared().items()
        if set(found) & set(mechanisms.DECLARED)
    }


def test_the_check_finds_the_names_it_looks_for():
    """Each file of the lock is found by a name of its own, and a generic file by none."""
    for path in OWN:
        assert NAMES.search((ROOT / path).read_text()), path
    generic = "sim/engines/compiled/plan.py"
    assert not NAMES.search((ROOT / generic).read_text())
    for line in (
        "from sim.tiers.database.lock import POOL",
        "config[k.C_LOCK_POOL] = made[0]",
        "    lock,",
        "if lock.guards(S, target):",
        "part = database.lock",
        "from sim.model.parts.shared_lock import SharedLockPart",
    ):
        assert NAMES.search(line), line
    for line in ("STREAM_BLOCK", "setup_lock=None", "the clock", "the lock's queue"):
        assert not NAMES.search(line), line


def test_the_kernel_modules_declarations_are_read_from_their_source():
    """What the engine's choice reads without importing numba (`mechanisms.literal`) is what
    the modules hold once imported, and every parameter has a known treatment."""
    from sim.engines.compiled import mechanisms, support

    found = mechanisms.literal()
    assert found, "no kernel module declares a mechanism"
    for name, declared in found.items():
        module = __import__(f"sim.engines.compiled.kernel.{name}", fromlist=["_"])
        for key, value in declared.items():
            assert getattr(module, key) == value, (name, key)
    assert {how for how, _ in mechanisms.parameters().values()} <= {
        support.MODELLED,
        support.REFUSED,
        support.INERT,
    }
    assert mechanisms.features() <= support.IMPLEMENTS
    assert mechanisms.parameters().items() <= support.PARAMETERS.items()
    placed = {module.__name__.rsplit(".", 1)[1] for module in mechanisms.placed()}
    assert placed == set(found)


def _resource_literals(source: str) -> list[str]:
    """The code's string literals (docstrings aside) that hold a dotted name or a pattern of
    one, escaped or not (`"database.lock"`, `r"^(proxy|database)\\."`): a hand table of
    resources."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.search(r"\w\\?\.\w|\)\\?\.", node.value)
    ]


def test_the_bottleneck_reads_the_resources_from_their_parts():
    """No name of the lock in either study, no resource's name in the bottleneck's code (a
    table of patterns or of titles), and none of the titles the parts declare."""
    from sim.model.load import load_model
    from sim.studies.metrics import holds

    text = (ROOT / RANKS).read_text()
    assert not NAMES.search(text)
    assert not NAMES.search((ROOT / PROPOSES).read_text())
    assert _resource_literals(text) == []
    held = holds(load_model(ROOT / "models" / "planner-apache-tomcat-database.toml"))
    titles = {h.title for h in held if h.title}
    assert "the database's shared lock" in titles
    assert [title for title in titles if title in text] == []


def test_the_check_finds_a_table_of_resources():
    for table in (
        '_NAMES = {"database.lock": "the shared lock"}',
        '_DEPTH = ((r"^database\\.lock$", 5), (r"^[a-z_]+\\d+\\.jdbc_pool$", 3))',
        'SHARED = re.compile(r"^(proxy|database)\\.")',
    ):
        assert _resource_literals(table), table
    for code in (
        'name.removesuffix(".utilization")',
        'vary.endswith(".count")',
        'f"{u:.0%} busy"',
        'def f():\n    """A docstring on `tomcat1.threads`."""',
    ):
        assert _resource_literals(code) == [], code
