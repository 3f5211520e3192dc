"""A model file being assembled from configuration files: each value with its provenance,
the directives that act on performance but have no model parameter, and the TOML text."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from sim.configs.defaults import Default
from sim.configs.errors import Where


@dataclass
class Draft:
    values: dict[str, Any] = field(default_factory=dict)  # dotted path -> value, in order
    provenance: dict[str, str] = field(default_factory=dict)
    not_modelled: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)  # paths no configuration holds

    def put(self, path: str, value: Any, source: str) -> None:
        self.values[path] = value
        self.provenance[path] = source

    def written(self, path: str, value: Any, where: Where, directive: str) -> None:
        """A value a configuration file gives: `file:line: Directive value`."""
        self.put(path, value, f"{where}: {directive}")

    def default(self, path: str, default: Default, value: Any = None) -> None:
        self.put(path, default.value if value is None else value, default.reference)

    def placeholder(self, path: str, value: Any, why: str) -> None:
        from sim.configs.placeholders import provenance

        self.put(path, value, provenance(value, why))
        self.placeholders.append(path)

    def missing(self, where: Where | str, directive: str, why: str) -> None:
        """A performance-relevant directive the model has no parameter for."""
        line = f"{where}: {directive}: {why}"
        if line not in self.not_modelled:
            self.not_modelled.append(line)

    def nested(self) -> dict[str, Any]:
        """The values as the model's tables (`backends.0.threads` in a list of tables)."""
        root: dict[str, Any] = {}
        for path, value in self.values.items():
            node: Any = root
            keys = path.split(".")
            for key, following in itertools.pairwise(keys):
                if following.isdigit():
                    node = node.setdefault(key, [])
                    while len(node) <= int(following):
                        node.append({})
                elif key.isdigit():
                    node = node[int(key)]
                else:
                    node = node.setdefault(key, {})
            last = keys[-1]
            if isinstance(node, list):
                node[int(last)] = value
            else:
                node[last] = value
        return root


def toml_text(draft: Draft, header: list[str]) -> str:
    """The model file: a comment header, [meta] with the provenance, the tables, then the
    not-modelled directives and the placeholders as comments."""
    data = draft.nested()
    lines = [f"# {line}" if line else "#" for line in header]
    meta = data.pop("meta", {})
    lines += ["", "[meta]"]
    lines += [f"{key} = {_value(value)}" for key, value in meta.items()]
    lines += ["", "[meta.provenance]"]
    lines += [f"{_value(path)} = {_value(text)}" for path, text in draft.provenance.items()]
    for name, table in data.items():
        if isinstance(table, list):
            for item in table:
                lines += ["", f"[[{name}]]", *_table_lines(name, item, array_item=True)]
        else:
            lines += ["", f"[{name}]", *_table_lines(name, table)]
    if draft.not_modelled:
        lines += [
            "",
            "# Not modelled: these directives act on performance but the model has no parameter",
        ]
        lines += ["# for them (their effect is in no figure it predicts):"]
        lines += [f"#   {line}" for line in draft.not_modelled]
    if draft.placeholders:
        lines += [
            "",
            "# Placeholders: no configuration file holds these; calibrate them against a load test",
            "# (tiersim plan ... --model THIS_FILE writes an experiment whose [[calibrate]] entries",
            "# fit them) or give them with --set at run time:",
        ]
        lines += [f"#   --set {path}=..." for path in draft.placeholders]
    return "\n".join(lines) + "\n"


def _table_lines(name: str, table: dict[str, Any], array_item: bool = False) -> list[str]:
    plain = [(k, v) for k, v in table.items() if not (isinstance(v, dict) and _is_table(v))]
    lines = [f"{key} = {_value(value)}" for key, value in plain]
    for key, value in table.items():
        if isinstance(value, dict) and _is_table(value):
            header = f"[{name}.{key}]"
            lines += ["", header, *_table_lines(f"{name}.{key}", value)]
    return lines


def _is_table(value: dict[str, Any]) -> bool:
    """A sub-table written as its own [section]; a distribution stays inline."""
    return "dist" not in value


def _value(value: Any) -> str:
    if value is None:
        return '"none"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(type(value))
