"""The package's structure, checked: no import cycle between any two modules of `sim`, and the
layers of pyproject's `[tool.importlinter]` kept (`make lint` runs `lint-imports` too; this
test makes the cycle rule part of the suite, which import-linter's layers do not check inside
a layer)."""

from __future__ import annotations

import grimp


def strongly_connected(
    graph: grimp.ImportGraph, skip: frozenset[str] = frozenset()
) -> list[set[str]]:
    """Tarjan's strongly connected components of the module graph with more than one module:
    each is an import cycle.  Modules in `skip` are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[set[str]] = []
    counter = [0]

    def visit(module: str) -> None:
        index[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module) - skip:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(component)

    for module in sorted(graph.modules - skip):
        if module not in index:
            visit(module)
    return cycles


# The compiled kernel is one event loop split into modules named after their reference twins:
# its handlers call each other across modules (a reply hands a slot to a waiter, whose grant
# starts a burst, whose end replies), through the module (`slots.acquire`), and numba compiles
# and caches the package as one unit (`kernel/cache.py` stamps it whole).  A cycle inside it is
# that recursion; a cycle that leaves it is still refused.
KERNEL = "sim.engines.compiled.kernel."


def test_no_import_cycle_between_modules():
    graph = grimp.build_graph("sim")
    # the package's face imports what it hands on (lazily); it is no layer of its own
    cycles = strongly_connected(graph, skip=frozenset({"sim"}))
    outside = [c for c in cycles if not all(m.startswith(KERNEL) for m in c)]
    assert not outside, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in outside)


def test_the_kernel_s_cycles_stay_inside_the_kernel():
    # the exemption above must not hide a cycle that reaches out of the kernel package
    graph = grimp.build_graph("sim")
    kernel = {m for m in graph.modules if m.startswith(KERNEL)}
    for module in kernel:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("sim.") and imported not in kernel:
                assert not graph.chain_exists(imported, module), (module, imported)


def test_a_cycle_is_found_when_there_is_one():
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert strongly_connected(graph) == [{"a.x", "a.y"}]
