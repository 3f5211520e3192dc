"""The engines and the solver read the stack (`sim.model.plan`, `sim.model.stack` and its parts,
`sim.model.parts`), not the model file's schema (`sim.model.schema`): a decision made from the
schema in an engine is made again in the other engine, and the two drift (issue 39 found the
read-timeout status written two ways, "is this mod_jk" four ways).

`READERS_LEFT` lists the modules that still import the schema; it only shrinks, and is now
empty.  The test fails when a module not listed starts to read the schema (read a part instead,
or add the decision to one), and when a listed module no longer does (take it off the list).  The
same list is the `ignore_imports` of pyproject's contract "the engines and the solver read the
stack" (`lint-imports`), which fails on an entry that no longer matches.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
GUARDED = ("sim/engines", "sim/analytic")

# Empty since issue 39 switched the last reader (the compiled engine's tables) to the stack's
# parts: an entry would be a module still to switch, and the list only shrinks.
READERS_LEFT: set[str] = set()

_READS = re.compile(
    r"^\s*(from\s+sim\.model\.schema\s+import|import\s+sim\.model\.schema|"
    r"from\s+sim\.model\s+import\s+[^#\n]*\bschema\b)",
    re.MULTILINE,
)


def schema_readers() -> set[str]:
    """Every module under the guarded packages with an import of `sim.model.schema` (type-only
    imports included: an annotation with a schema type is a dependence on it)."""
    return {
        str(path.relative_to(ROOT))
        for package in GUARDED
        for path in sorted((ROOT / package).rglob("*.py"))
        if _READS.search(path.read_text())
    }


def test_the_pattern_finds_each_way_of_importing_the_schema():
    for line in (
        "from sim.model.schema import Model",
        "    from sim.model.schema import Jvm as JvmSpec",
        "import sim.model.schema",
        "from sim.model import load, schema",
    ):
        assert _READS.search(line), line
    assert not _READS.search("from sim.model.stack import StackPlan")
    assert not _READS.search("# see sim.model.schema for the fields")


def test_no_new_module_of_the_engines_or_the_solver_reads_the_schema():
    new = schema_readers() - READERS_LEFT
    assert not new, (
        f"{sorted(new)} import sim.model.schema: read the stack's parts (sim.model.parts, "
        "sim.model.stack) instead, or put the decision into a part"
    )


def test_the_list_of_readers_left_only_shrinks():
    gone = READERS_LEFT - schema_readers()
    assert not gone, f"{sorted(gone)} no longer read the schema: take them off READERS_LEFT"


def test_the_layers_contract_lists_the_same_readers():
    """pyproject's contract ignores exactly the imports listed here (and `lint-imports` fails
    on an ignored import that no longer exists)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (
        c for c in contracts["contracts"] if c["name"].startswith("the engines and the solver")
    )
    assert contract["forbidden_modules"] == ["sim.model.schema"]
    assert set(contract["source_modules"]) == {p.replace("/", ".") for p in GUARDED}
    ignored = {line.removesuffix(" -> sim.model.schema") for line in contract["ignore_imports"]}
    modules = {
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in READERS_LEFT
    }
    assert ignored == modules
