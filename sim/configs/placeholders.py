"""Placeholders are not zeros: a model written by `tiersim from-config` marks what no
configuration file holds (the clients, the application's demand, the hosts' cores) in its
`[meta.provenance]` as `placeholder: why [written: VALUE]`.  Until each is given — by `--set`,
by a calibration, or by editing the file — running, solving or exporting the model would answer
for the placeholder (a demand of 0 s is a 0 s response), so those commands refuse and name
every placeholder left and the `--set` that fills it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sim.files import FileProblem, read_toml

PREFIX = "placeholder: "
_WRITTEN = re.compile(r"\[written: (.*)\]$")


def provenance(value: Any, why: str) -> str:
    """The provenance of a placeholder, with the value written, by which it is known unfilled."""
    return f"{PREFIX}{why} [written: {json.dumps(value)}]"


def unfilled(
    model_file: str | Path, overrides: Iterable[str], filled: Iterable[str] = ()
) -> list[str]:
    """The placeholder paths of `model_file` that neither an override nor an edit has filled;
    `filled`: paths a study gives values of its own (a sweep's factors, capacity's --vary)."""
    try:
        document = read_toml(model_file, "model file")
    except FileProblem:
        return []  # the model's loader has said (or will say) what is wrong with the file
    return unfilled_in(document, overrides, filled)


def unfilled_in(
    document: dict[str, Any], overrides: Iterable[str], filled: Iterable[str] = ()
) -> list[str]:
    """`unfilled` of a model's data (a file's document, or a `Model`'s own data)."""
    meta = document.get("meta", {})
    origins = meta.get("provenance", {}) if isinstance(meta, dict) else {}
    given = [text.split("=", 1)[0].strip() for text in overrides] + list(filled)
    overridden = _overridden(document, list(overrides))
    found = []
    for path, origin in origins.items() if isinstance(origins, dict) else ():
        match = _WRITTEN.search(origin) if isinstance(origin, str) else None
        if match is None or not origin.startswith(PREFIX):
            continue
        if any(g == path or g.startswith(path + ".") for g in given):
            continue
        if _lookup(overridden, path) is None:  # left out by --set clients.kind=closed
            continue
        try:
            written = json.loads(match.group(1))
        except ValueError:
            continue
        if _lookup(document, path) == written:
            found.append(path)
    return found


def _overridden(document: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """The document with the overrides applied: a placeholder of a kind an override switched
    away from is no longer in the model."""
    import copy

    from sim.model.load import ModelError, apply_override

    data = copy.deepcopy(document)
    given: list[str] = []
    for override in overrides:
        try:
            apply_override(data, override, given=given)
        except ModelError:
            return document  # the model's loader says what is wrong with it
    return data


def refusal(model_file: str | Path, paths: list[str], command: str, setting: str = "--set") -> str:
    """One line: which placeholders are left, and the `--set` (or a sweep's `sweep.set`
    entry: `setting`) that fills each."""
    return refusal_in(read_toml(model_file, "model file"), model_file, paths, command, setting)


def refusal_in(
    document: dict[str, Any],
    model_file: str | Path,
    paths: list[str],
    command: str,
    setting: str = "--set",
) -> str:
    """`refusal` of a model's data; `setting` "sim.load_model" gives the call that loads the
    file filled (a `Model` is validated already: its placeholders are filled where it is
    loaded)."""
    examples = [_example(path, _lookup(document, path)) for path in paths]
    listed = ", ".join(f'"{example}"' for example in examples)
    if setting == "--set":
        sets = " ".join(f"--set {example}" for example in examples)
    elif setting == "sim.load_model":
        sets = f"sim.load_model({str(model_file)!r}, [{listed}])"
    else:
        sets = f"{setting} = [{listed}]"
    return (
        f"{model_file}: {len(paths)} placeholder{'s' if len(paths) > 1 else ''} no "
        f"configuration file holds {'are' if len(paths) > 1 else 'is'} unfilled "
        f"({', '.join(paths)}), and {command} would answer for the placeholder values; fill "
        f"them: {sets} (or calibrate them, or edit the file)"
    )


def _example(path: str, value: Any) -> str:
    if isinstance(value, dict):
        return f"{path}.mean=SECONDS"
    if path.endswith("_s") or path.endswith(("io_wait", "think")):
        return f"{path}=SECONDS"
    if isinstance(value, str):
        return f"{path}={value}"
    if isinstance(value, bool):
        return f"{path}=VALUE"
    if isinstance(value, int):
        return f"{path}=N"
    return f"{path}=VALUE"


def _lookup(document: Any, path: str) -> Any:
    node = document
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node
