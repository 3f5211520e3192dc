"""An Apache httpd 2.2 / 2.4 configuration read as httpd reads it.

httpd reads its configuration a line at a time (server/util.c `ap_cfg_getline`: leading and
trailing white space dropped, a trailing backslash joins the next line, a line starting with
`#` is a comment — there are no comments after a directive), replaces `${NAME}` by a `Define`d
value before splitting the line into words (`ap_resolve_env`), splits it as `ap_getword_conf`
does (white space, or a quoted word), and builds sections from `<Name args>` ... `</Name>`
(server/config.c `ap_build_config`).  The conditional sections are evaluated while reading, in
order, so a `Define` or `LoadModule` acts on what follows it: `<IfModule>` (a module identifier
`proxy_module` or its source file `mod_proxy.c`, `!` negates), `<IfDefine>` (`-D` or `Define`),
`<IfVersion>` (mod_version's operators), `<IfFile>`.  `Include` and `IncludeOptional` take a
path relative to `ServerRoot` with wildcards in any part, or a directory (every file below it),
in alphabetical order (server/config.c `ap_process_fnmatch_configs`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.configs.errors import ConfigError, Where
from sim.configs.httpd_syntax import (
    SECTIONS,
    check_name,
    glob_paths,
    logical_lines,
    not_httpd,
    parse_version,
    short,
    version_matches,
    words,
)
from sim.files import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_FILES,
    MAX_EXPANDED,
    Refused,
    bounded_sub,
    not_there,
    read_bytes_within,
    utf16_form,
    utf16_said,
)

CONDITIONALS = {"ifmodule", "ifdefine", "ifversion", "iffile", "ifdirective", "ifsection"}
# Modules compiled into Debian's apache2 (`apache2 -l`); upstream's default build has core.c,
# mod_so.c and http_core.c (and the MPM when it is not built shared).
STATIC_MODULES = (
    "core.c",
    "mod_so.c",
    "mod_watchdog.c",
    "http_core.c",
    "mod_log_config.c",
    "mod_logio.c",
    "mod_version.c",
    "mod_unixd.c",
)
MAX_INCLUDE_DEPTH = 128  # AP_MAX_INCLUDE_DEPTH
VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Section:
    """An enclosing section that is not a conditional: `<VirtualHost *:80>`, `<Proxy ...>`."""

    name: str
    argument: str
    where: Where


@dataclass(frozen=True)
class Directive:
    name: str
    args: tuple[str, ...]
    where: Where
    sections: tuple[Section, ...] = ()
    undefined: tuple[str, ...] = ()  # ${NAME}s no Define gave, left as written (AH00111)

    @property
    def at_server_level(self) -> bool:
        """Outside every `<VirtualHost>`, `<Location>`, `<Proxy>`... section."""
        return not self.sections

    def within(self, section: str) -> Section | None:
        for enclosing in reversed(self.sections):
            if enclosing.name.lower() == section.lower():
                return enclosing
        return None


@dataclass
class HttpdConfig:
    """The directives in effect, in the order httpd reads them, includes followed."""

    main_file: Path
    server_root: Path
    version: tuple[int, int, int]
    directives: list[Directive] = field(default_factory=list)
    modules: dict[str, Where | None] = field(default_factory=dict)  # identifier / source name
    defines: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def named(self, name: str) -> list[Directive]:
        lowered = name.lower()
        return [d for d in self.directives if d.name.lower() == lowered]

    def server(self, name: str) -> Directive | None:
        """The server-wide value: the last one outside every section (the last one read wins,
        as for every directive of the main server)."""
        found = [d for d in self.named(name) if d.at_server_level]
        return found[-1] if found else None

    def loaded(self, module: str) -> bool:
        return module in self.modules


def read_httpd(
    main_file: Path,
    *,
    server_root: Path | None = None,
    defines: dict[str, str] | None = None,
    version: str = "2.4.62",
    static_modules: tuple[str, ...] = STATIC_MODULES,
    static_mpm: str | None = None,
) -> HttpdConfig:
    """Read `main_file` and everything it includes.  `server_root` is httpd's `-d` (default:
    the `ServerRoot` directive, else the main file's directory, which is where Debian's and
    upstream's compiled-in roots hold it); `defines` are `-D NAME` / `-D NAME=VALUE`;
    `static_mpm` an MPM compiled in (httpd 2.2, or 2.4 built without shared MPMs), known to
    `<IfModule>` from the start as `mpm_NAME_module` and `NAME.c`."""
    main_file = Path(main_file)
    config = HttpdConfig(
        main_file=main_file,
        server_root=Path(server_root) if server_root else main_file.parent,
        version=parse_version(version),
        defines=dict(defines or {}),
        modules=dict.fromkeys(static_modules),
    )
    if static_mpm:
        config.modules.update(dict.fromkeys((f"mpm_{static_mpm}_module", f"{static_mpm}.c")))
    _Reader(config, root_given=server_root is not None).read(main_file, (), (), None)
    return config


class _Reader:
    def __init__(self, config: HttpdConfig, root_given: bool) -> None:
        self.config = config
        self.root_given = root_given
        self.bytes_read = 0  # of every file so far: an Include fan-out is bounded by it too

    def read(
        self,
        path: Path,
        sections: tuple[Section, ...],
        chain: tuple[Path, ...],
        included_at: Where | None,
    ) -> None:
        if len(chain) >= MAX_INCLUDE_DEPTH:
            raise ConfigError(
                included_at or path,
                f"includes nested deeper than {MAX_INCLUDE_DEPTH} files (AP_MAX_INCLUDE_DEPTH)",
                "remove the Include that leads back to an including file",
            )
        if len(self.config.files) >= MAX_CONFIG_FILES.value:
            raise ConfigError(
                included_at or path,
                MAX_CONFIG_FILES.exceeded(f"Include reaches {path}"),
                f"{MAX_CONFIG_FILES.fix} (includes of includes multiply: check the wildcards)",
            )
        try:
            data = read_bytes_within(path, MAX_CONFIG_BYTES, self.bytes_read)
        except Refused as exc:
            raise ConfigError(included_at or path, f"{path}: {exc.found}", exc.fix) from None
        except OSError as exc:
            raise ConfigError(
                included_at or path,
                f"cannot read {path} ({exc.strerror})",
                "give the path of a readable httpd configuration file",
            ) from None
        form = utf16_form(data)
        if form is not None:  # httpd reads bytes: a "Unicode" file fails in httpd too
            raise ConfigError(
                included_at or path,
                f"httpd configuration in UTF-8 or ASCII, but {path} is {form} text "
                f"({utf16_said(form)})",
                f"save it as UTF-8 (iconv -f {form} -t UTF-8)",
            )
        self.bytes_read += len(data)
        text = data.decode("utf-8", errors="replace")
        self.config.files.append(path)
        chain = (*chain, path.resolve())
        frames: list[_Frame] = []
        for where, line in logical_lines(path, text):
            active = all(f.active for f in frames)
            if line.startswith("</"):
                self._close(where, line, frames)
            elif line.startswith("<"):
                frames.append(self._open(where, line, active, sections, frames))
            elif active:
                inside = sections + tuple(f.section for f in frames if f.section)
                self._directive(where, line, inside, chain)
            else:
                check_name(where, line.split(None, 1)[0])
        if frames:
            frame = frames[-1]
            raise ConfigError(
                frame.where,
                f"<{frame.name}> is never closed (end of file reached)",
                f"add </{frame.name}> where the section ends",
            )

    def _open(
        self,
        where: Where,
        line: str,
        active: bool,
        sections: tuple[Section, ...],
        frames: list[_Frame],
    ) -> _Frame:
        if not line.endswith(">"):
            raise ConfigError(
                where,
                f"a section line ends with '>' ({short(line)})",
                "close the <...> on the same line (httpd: directive missing closing '>')",
            )
        inner = line[1:-1].strip()
        name, _, argument = inner.partition(" ")
        name, argument = name.strip(), argument.strip()
        if name.lower() not in SECTIONS:
            raise ConfigError(where, f"an httpd section, not <{short(name)}>", not_httpd(line))
        if not active:
            return _Frame(name, where, False, None)
        lowered = name.lower()
        if lowered == "macro":  # a template, read only where `Use` expands it
            self.config.notes.append(f"{where}: <Macro> not expanded (mod_macro's Use)")
            return _Frame(name, where, False, None)
        if lowered in CONDITIONALS:
            resolved, undefined = self._resolve(where, argument)
            if undefined:
                self._undefined(where, name, undefined)
            return _Frame(name, where, self._condition(where, lowered, resolved), None)
        if lowered in ("if", "elseif", "else"):
            self.config.notes.append(
                f"{where}: <{name}> is evaluated per request; its directives are read as a section's"
            )
        resolved, _ = self._resolve(where, argument)
        return _Frame(name, where, True, Section(name, resolved.strip("\"'"), where))

    def _close(self, where: Where, line: str, frames: list[_Frame]) -> None:
        name = line[2:].rstrip(">").strip()
        if not frames:
            raise ConfigError(
                where, f"</{name}> closes a section that was not opened", f"remove </{name}>"
            )
        if frames[-1].name.lower() != name.lower():
            raise ConfigError(
                where,
                f"</{frames[-1].name}> (opened at line {frames[-1].where.line}) but saw </{name}>",
                f"close <{frames[-1].name}> before </{name}>",
            )
        frames.pop()

    def _condition(self, where: Where, kind: str, argument: str) -> bool:
        text = argument.strip().strip("\"'")
        negate = text.startswith("!")
        text = text.lstrip("!").strip()
        if kind == "ifmodule":
            result = text in self.config.modules
        elif kind == "ifdefine":
            result = text in self.config.defines
        elif kind == "iffile":
            result = self._root_relative(text).exists()
        elif kind == "ifversion":
            return version_matches(where, argument, self.config.version)
        else:  # IfDirective / IfSection: which directives exist depends on the build
            self.config.notes.append(f"{where}: <{kind}> assumed true (it asks about the build)")
            result = True
        return result != negate

    def _directive(
        self, where: Where, line: str, sections: tuple[Section, ...], chain: tuple[Path, ...]
    ) -> None:
        resolved, undefined = self._resolve(where, line)
        split = words(where, resolved)
        name, args = split[0], tuple(split[1:])
        check_name(where, name)
        lowered = name.lower()
        directive = Directive(name, args, where, sections, tuple(undefined))
        self.config.directives.append(directive)
        if undefined and lowered not in _IGNORED_WHEN_UNDEFINED:
            self.config.notes.append(
                f"{where}: ${{{undefined[0]}}} is not defined (AH00111), left as written in {name}"
            )
        if lowered == "serverroot" and args and not self.root_given:
            self.config.server_root = Path(args[0])
        elif lowered == "define" and args:
            self.config.defines[args[0]] = " ".join(args[1:])
        elif lowered == "undefine" and args:
            self.config.defines.pop(args[0], None)
        elif lowered == "loadmodule" and len(args) >= 2:
            self.config.modules[args[0]] = where
            source = Path(args[1]).name
            if source.endswith(".so"):
                self.config.modules[source[:-3] + ".c"] = where
            mpm = re.fullmatch(r"mpm_(\w+)_module", args[0])
            if mpm:  # an MPM's module name is its source file's: prefork.c, event.c
                self.config.modules[f"{mpm.group(1)}.c"] = where
        elif lowered in ("include", "includeoptional"):
            self._include(where, name, args, sections, chain, optional=lowered != "include")

    def _include(
        self,
        where: Where,
        name: str,
        args: tuple[str, ...],
        sections: tuple[Section, ...],
        chain: tuple[Path, ...],
        optional: bool,
    ) -> None:
        if len(args) != 1:
            raise ConfigError(where, f"{name} takes one path", f"write {name} PATH")
        pattern = self._root_relative(args[0])
        if any(ch in str(pattern) for ch in "*?["):
            found = glob_paths(where, pattern, MAX_CONFIG_FILES)
            strict = not optional and self.config.version >= (2, 3, 6)
            if not found and strict:
                raise ConfigError(
                    where,
                    f"files matching {pattern} (Include's wildcard matched nothing)",
                    "fix the path, or use IncludeOptional for a set that may be empty",
                )
        elif pattern.is_dir():
            found = glob_paths(where, pattern, MAX_CONFIG_FILES)
        elif pattern.exists():
            found = [pattern]
        elif optional:
            found = []
        else:
            raise ConfigError(
                where,
                f"{name} of a file that exists, not {pattern} ({not_there(pattern)})",
                "fix the path (relative paths start at ServerRoot; --server-root sets it)",
            )
        for path in found:
            if path.resolve() in chain:
                loop = " -> ".join(p.name for p in (*chain, path.resolve()))
                raise ConfigError(
                    where,
                    f"{name} {path} is a loop ({loop})",
                    "remove the Include that leads back to a file that includes it",
                )
            self.read(path, sections, chain, where)

    def _root_relative(self, text: str) -> Path:
        path = Path(text.strip("\"'"))
        return path if path.is_absolute() else self.config.server_root / path

    def _resolve(self, where: Where, text: str) -> tuple[str, list[str]]:
        """`ap_resolve_env`: `${NAME}` from the Defines; what none gives stays as written.  A
        `Define X ${X}${X}` doubles X, so a line is refused as soon as it would pass
        `MAX_EXPANDED` (httpd itself stops at its line length, MAX_STRING_LEN)."""
        undefined: list[str] = []

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in self.config.defines:
                return self.config.defines[name]
            undefined.append(name)
            return match.group(0)

        resolved = bounded_sub(VARIABLE, text, value, MAX_EXPANDED.value)
        if resolved is None:
            raise ConfigError(
                where, MAX_EXPANDED.exceeded("its ${NAME} variables expand"), MAX_EXPANDED.fix
            )
        return resolved, undefined

    def _undefined(self, where: Where, name: str, undefined: list[str]) -> None:
        raise ConfigError(
            where,
            f"${{{undefined[0]}}} in <{name}> is not defined",
            f"add `Define {undefined[0]} VALUE` before it, or pass --define {undefined[0]}=VALUE",
        )


# Directives whose ${VAR}s (Debian's envvars: APACHE_RUN_USER, APACHE_LOG_DIR...) change no
# performance figure: reading past them is what httpd does too (it only warns).
_IGNORED_WHEN_UNDEFINED = {
    "user",
    "group",
    "errorlog",
    "customlog",
    "pidfile",
    "mutex",
    "defaultruntimedir",
    "loglevel",
}


@dataclass
class _Frame:
    name: str
    where: Where
    active: bool
    section: Section | None
