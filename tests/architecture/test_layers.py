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


def test_no_import_cycle_between_modules():
    graph = grimp.build_graph("sim")
    # the package's face imports what it hands on (lazily); it is no layer of its own
    cycles = strongly_connected(graph, skip=frozenset({"sim"}))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_a_cycle_is_found_when_there_is_one():
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert strongly_connected(graph) == [{"a.x", "a.y"}]
