"""httpd's configuration syntax, as server/util.c reads it: logical lines (`ap_cfg_getline`),
words (`ap_getword_conf`), the section names httpd knows, Include's wildcards, and
`<IfVersion>`'s comparison (modules/metadata/mod_version.c)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from sim.configs.errors import ConfigError, Where
from sim.files import Limit

# The sections httpd 2.4 and its common modules define; anything else in `<...>` is not httpd
# configuration (an XML file, a typo), which httpd would refuse as an invalid command.
SECTIONS = {
    name.lower()
    for name in (
        "Directory",
        "DirectoryMatch",
        "Files",
        "FilesMatch",
        "Location",
        "LocationMatch",
        "VirtualHost",
        "Proxy",
        "ProxyMatch",
        "Limit",
        "LimitExcept",
        "If",
        "ElseIf",
        "Else",
        "IfModule",
        "IfDefine",
        "IfVersion",
        "IfFile",
        "IfDirective",
        "IfSection",
        "RequireAll",
        "RequireAny",
        "RequireNone",
        "AuthnProviderAlias",
        "AuthzProviderAlias",
        "Macro",
        "MDomain",
        "MDomainSet",
        "Perl",
    )
}
DIRECTIVE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def parse_version(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
    if not parts:
        raise ValueError(text)
    padded = [*parts, 0, 0, 0]
    return padded[0], padded[1], padded[2]


def logical_lines(path: Path, text: str):
    """(where, line) of each directive or section line: comments and blank lines dropped,
    backslash continuations joined (the line number is the first line's)."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not pending:
            start = number
            if not line or line.startswith("#"):
                continue
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        joined = " ".join(part for part in pending if part).strip()
        pending = []
        if joined:
            yield Where(path, start), joined
    if pending:
        yield Where(path, start), " ".join(pending).strip()


def words(where: Where, line: str) -> list[str]:
    """`ap_getword_conf`: words split on white space; a word may be quoted ('...' or "...")
    with backslash escapes of the quote inside."""
    words: list[str] = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            break
        quote = line[i] if line[i] in "\"'" else None
        if quote:
            i += 1
            word: list[str] = []
            while i < n and line[i] != quote:
                if line[i] == "\\" and i + 1 < n and line[i + 1] == quote:
                    i += 1
                word.append(line[i])
                i += 1
            if i >= n:
                raise ConfigError(where, f"a closing {quote} in {short(line)}", "close the quote")
            i += 1
            words.append("".join(word))
        else:
            start = i
            while i < n and not line[i].isspace():
                i += 1
            words.append(line[start:i])
    return words


def check_name(where: Where, name: str) -> None:
    if not DIRECTIVE_NAME.match(name):
        raise ConfigError(
            where,
            f"an httpd directive (a name, then its arguments), not {short(name)}",
            not_httpd(name),
        )


def not_httpd(text: str) -> str:
    """The fix for a line httpd would not read: name the file it looks like."""
    if text.lstrip("<").lower().startswith(("?xml", "server", "configure", "!--")):
        return "this is XML (Tomcat's server.xml: --tomcat; Jetty's jetty.xml: --jetty), not httpd configuration"
    if "=" in text and "." in text.split("=", 1)[0]:
        return "this looks like mod_jk's workers.properties: pass it with --workers-properties"
    return "this is not httpd configuration syntax: check the file given with --httpd"


def short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def glob_paths(where: Where, pattern: Path, limit: Limit) -> list[Path]:
    """Wildcards in any part of the path, each part matched in alphabetical order; a matched
    directory contributes every file below it.  Refused once more than `limit` files match
    (or sixteen times as many entries are looked at): `Include /` would walk the disk."""
    try:
        return _glob_paths(where, pattern, limit)
    except OSError as exc:
        raise ConfigError(
            where,
            f"a readable path for {pattern}, but {exc.filename} cannot be read ({exc.strerror})",
            "fix the path (httpd fails on it too)",
        ) from None


def _glob_paths(where: Where, pattern: Path, limit: Limit) -> list[Path]:
    maximum = limit.value
    looked_at = 0

    def visit(entries):
        nonlocal looked_at
        for entry in entries:
            looked_at += 1
            if looked_at > 16 * maximum:
                raise ConfigError(
                    where,
                    limit.exceeded(f"{pattern} reaches over {16 * maximum:,} paths"),
                    limit.fix,
                )
            yield entry

    parts = pattern.parts
    paths = [Path(parts[0])]
    for part in parts[1:]:
        following: list[Path] = []
        for base in paths:
            if any(ch in part for ch in "*?["):
                if base.is_dir():
                    following += sorted(
                        p for p in visit(base.iterdir()) if fnmatch.fnmatchcase(p.name, part)
                    )
            else:
                following.append(base / part)
        paths = following
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in visit(path.rglob("*")) if p.is_file())
        elif path.exists():
            found.append(path)
        if len(found) > maximum:
            raise ConfigError(
                where, limit.exceeded(f"{pattern} matches {len(found):,} files"), limit.fix
            )
    return found


OPERATORS = ("==", ">=", "<=", "=", ">", "<", "~")


def version_matches(where: Where, argument: str, version: tuple[int, int, int]) -> bool:
    """mod_version's `<IfVersion [[!]operator] version>`; a missing minor or patch is 0."""
    text = argument.strip()
    negate = text.startswith("!")
    text = text.lstrip("!").strip()
    operator = "="
    for candidate in OPERATORS:
        if text.startswith(candidate):
            operator, text = candidate, text[len(candidate) :].strip()
            break
    running = ".".join(str(p) for p in version)
    if operator == "~" or (text.startswith("/") and text.endswith("/")):
        try:
            return bool(re.search(text.strip("/"), running)) != negate
        except re.error:
            raise ConfigError(
                where, f"a regular expression in <IfVersion>, not {text!r}", "fix it"
            ) from None
    try:
        wanted = parse_version(text)
    except ValueError:
        raise ConfigError(
            where,
            f"<IfVersion [operator] major.minor.patch>, not {short(argument)}",
            "write e.g. <IfVersion >= 2.4>",
        ) from None
    result = {
        "=": version == wanted,
        "==": version == wanted,
        ">": version > wanted,
        ">=": version >= wanted,
        "<": version < wanted,
        "<=": version <= wanted,
    }[operator]
    return result != negate
