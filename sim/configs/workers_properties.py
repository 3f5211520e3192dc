"""mod_jk's `workers.properties` read as mod_jk reads it (native/common/jk_map.c), which is not
Java's properties format.

A line is `name = value`; `#` starts a comment anywhere on it.  `$(name)` in a value is
replaced by the property read before it (else the environment's, jk_map_replace_properties);
a list property (`worker.list`, `balance_workers`...) given twice is the two lists joined, any
other given twice keeps the last (jk_map_read_property); `worker.X.reference=worker.Y` copies
every property of Y that X does not set itself, transitively (jk_map_resolve_references).
`JkWorkerProperty` lines of httpd's configuration add properties after the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.configs.errors import ConfigError, Where
from sim.files import (
    MAX_CONFIG_BYTES,
    MAX_EXPANDED,
    Limit,
    Refused,
    bounded_sub,
    read_bytes_within,
    utf16_form,
    utf16_said,
)

REFERENCE = re.compile(r"\$\(([^)]+)\)")
MAX_REFERENCE_DEPTH = 20  # jk_map.c JK_MAP_RECURSION
# Properties whose repeats are joined into one list (jk_util.c unique_properties' complement).
LIST_PROPERTIES = ("worker.list", "balance_workers", "balanced_workers", "mount", "user")
WORKER_TYPES = ("ajp13", "ajp12", "ajp14", "lb", "status", "jni")
# Every worker copying a template of every property would be their product: a real file has a
# few dozen workers of a few dozen properties.
MAX_PROPERTIES = Limit(
    "properties once references are copied", 200_000, "TIERSIM_MAX_WORKER_PROPERTIES"
)


@dataclass(frozen=True)
class Property:
    value: str
    where: Where


@dataclass
class WorkersProperties:
    """The resolved properties, each with where its value was written."""

    file: Path | None
    properties: dict[str, Property] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> Property | None:
        return self.properties.get(name)

    def worker(self, worker: str, name: str) -> Property | None:
        return self.properties.get(f"worker.{worker}.{name}")

    def workers(self) -> set[str]:
        """Every worker that has a property of its own."""
        return {
            key.split(".")[1]
            for key in self.properties
            if key.startswith("worker.") and key.count(".") >= 2
        }

    def listed(self) -> list[str]:
        """`worker.list`: the workers httpd can mount."""
        found = self.get("worker.list")
        return _names(found.value) if found else []

    def worker_type(self, worker: str) -> str:
        found = self.worker(worker, "type")
        return found.value.strip().lower() if found else "ajp13"

    def members(self, worker: str) -> list[tuple[str, Where]]:
        """An lb worker's `balance_workers` (or the deprecated `balanced_workers`)."""
        found = self.worker(worker, "balance_workers") or self.worker(worker, "balanced_workers")
        if found is None:
            declared = self.worker(worker, "type")
            raise ConfigError(
                declared.where if declared else str(self.file),
                f"worker.{worker}.balance_workers naming the lb worker's members",
                f"add worker.{worker}.balance_workers=NAME1,NAME2",
            )
        return [(name, found.where) for name in _names(found.value)]

    def check_defined(self, worker: str, where: Where, used_as: str) -> None:
        """A worker named by worker.list, balance_workers or JkMount that has no property at
        all is a misspelling here (mod_jk would make it an ajp13 worker on localhost:8009)."""
        if worker not in self.workers():
            known = ", ".join(sorted(self.workers())) or "none"
            raise ConfigError(
                where,
                f"{used_as} names worker {worker!r}, which has no worker.{worker}.* property "
                f"(workers: {known})",
                f"define worker.{worker}.type/host/port or fix the name",
            )


def read_workers_properties(
    path: Path | None, extra: tuple[tuple[str, Where], ...] = ()
) -> WorkersProperties:
    """Read `path` (None: only `extra`, the `JkWorkerProperty` lines), then resolve the
    `reference=` templates."""
    result = WorkersProperties(path)
    lines: list[tuple[str, Where]] = []
    if path is not None:
        try:
            data = read_bytes_within(path, MAX_CONFIG_BYTES)
        except Refused as exc:
            raise ConfigError(path, exc.found, exc.fix) from None
        except OSError as exc:
            raise ConfigError(
                path,
                f"a readable workers.properties ({exc.strerror})",
                "fix JkWorkersFile or pass --workers-properties FILE",
            ) from None
        form = utf16_form(data)
        if form is not None:  # mod_jk reads bytes: a "Unicode" file fails in mod_jk too
            raise ConfigError(
                path,
                f"a workers.properties in UTF-8 or ASCII, not {form} text ({utf16_said(form)})",
                f"save it as UTF-8 (iconv -f {form} -t UTF-8)",
            )
        text = data.decode("utf-8", errors="replace")
        lines = [(raw, Where(Path(path), n)) for n, raw in enumerate(text.splitlines(), start=1)]
    for raw, where in [*lines, *extra]:
        _read_line(result, raw, where)
    _resolve_references(result)
    return result


def _read_line(result: WorkersProperties, raw: str, where: Where) -> None:
    line = raw.split("#", 1)[0].strip()
    if not line:
        return
    if "=" not in line:
        raise ConfigError(
            where,
            f"a property `name=value`, not {line[:60]!r}",
            "this is not workers.properties syntax: write worker.NAME.PROPERTY=VALUE",
        )
    name, value = (part.strip() for part in line.split("=", 1))
    if not name or not value:
        return  # mod_jk skips a property with an empty name or value
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ConfigError(
            where,
            f"a property name of letters, digits, '.', '_' or '-', not {name[:60]!r}",
            "this is not workers.properties syntax (httpd directives go in httpd's files)",
        )
    value = _replace(result, value, where)
    old = result.properties.get(name)
    if old is not None and name.endswith(LIST_PROPERTIES):
        value = f"{old.value},{value}"
    elif old is not None:
        result.notes.append(f"{where}: {name} given again (first at {old.where}): the last wins")
    result.properties[name] = Property(value, where)


def _replace(result: WorkersProperties, value: str, where: Where) -> str:
    """`$(name)`: a property read before this line (mod_jk also tries the environment).  A
    value that names a property twice doubles it, and forty such lines would be terabytes:
    a value is refused as soon as it would pass `MAX_EXPANDED`."""

    def one(match: re.Match[str]) -> str:
        found = result.properties.get(match.group(1))
        if found is None:
            raise ConfigError(
                where,
                f"$({match.group(1)}) names a property defined above this line",
                f"define {match.group(1)}=VALUE before it (mod_jk would leave it as written)",
            )
        return found.value

    replaced = bounded_sub(REFERENCE, value, one, MAX_EXPANDED.value)
    if replaced is None:
        raise ConfigError(
            where, MAX_EXPANDED.exceeded("its $(name) references expand"), MAX_EXPANDED.fix
        )
    return replaced


def _resolve_references(result: WorkersProperties) -> None:
    """`worker.X.reference=worker.Y`: X inherits Y's properties it does not set itself."""
    index: dict[str, list[str]] = {}  # "worker.Y" -> its property names, in the file's order
    for key in result.properties:
        if key.startswith("worker.") and key.count(".") >= 2:
            index.setdefault(key.rsplit(".", 1)[0], []).append(key)
    done: set[str] = set()
    for worker in sorted(result.workers()):
        _inherit(result, worker, (worker,), index, done)


def _inherit(
    result: WorkersProperties,
    worker: str,
    seen: tuple[str, ...],
    index: dict[str, list[str]],
    done: set[str],
) -> None:
    reference = result.properties.get(f"worker.{worker}.reference")
    if reference is None or worker in done:
        return
    target = reference.value.strip()
    prefix = target.rstrip(".") + "."
    source = target.removeprefix("worker.").rstrip(".")
    if len(seen) > MAX_REFERENCE_DEPTH or source in seen:
        raise ConfigError(
            reference.where,
            f"worker.{worker}.reference={target} leads back to itself ({' -> '.join(seen)})",
            "break the cycle of references",
        )
    if not _with_prefix(result, index, prefix):
        raise ConfigError(
            reference.where,
            f"worker.{worker}.reference names a worker with properties, but {target} has none",
            f"define {prefix}* properties or fix the name (reference=worker.NAME)",
        )
    _inherit(result, source, (*seen, source), index, done)
    own_prefix = f"worker.{worker}."
    limit = MAX_PROPERTIES.value
    for key in _with_prefix(result, index, prefix):
        if not key.endswith(".reference"):
            own = own_prefix + key[len(prefix) :]
            if own not in result.properties:
                result.properties[own] = result.properties[key]
                index.setdefault(own.rsplit(".", 1)[0], []).append(own)
    if len(result.properties) > limit:
        raise ConfigError(
            reference.where,
            MAX_PROPERTIES.exceeded(f"worker.{worker}.reference copies {target}'s properties"),
            MAX_PROPERTIES.fix,
        )
    done.add(worker)


def _with_prefix(result: WorkersProperties, index: dict[str, list[str]], prefix: str) -> list[str]:
    found = index.get(prefix[:-1])
    if found is None:  # a prefix that is not `worker.NAME`: look through every property
        return [key for key in result.properties if key.startswith(prefix)]
    return list(found)


def _names(text: str) -> list[str]:
    return [name.strip() for name in re.split(r"[,\s]+", text) if name.strip()]


def as_bool(prop: Property) -> bool:
    """jk_get_bool_code: true/yes/on/1 and false/no/off/0, by their first letters."""
    text = prop.value.strip().lower()
    if text.startswith(("t", "y", "1")) or text == "on":
        return True
    if text.startswith(("f", "n", "0")) or text == "off":
        return False
    raise ConfigError(
        prop.where, f"a boolean (true/false), not {prop.value!r}", "write true or false"
    )


def as_number(prop: Property, name: str) -> float:
    try:
        return float(prop.value.strip())
    except ValueError:
        raise ConfigError(
            prop.where, f"{name} is a number, not {prop.value!r}", f"write {name}=NUMBER"
        ) from None
