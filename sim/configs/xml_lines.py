"""A small XML tree that keeps each element's line, for provenance (`server.xml:71`).

The standard library's expat parser reports the line of every start tag; lxml would add a
native dependency for that one attribute, and xml.etree's C elements cannot carry it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from sim.configs.errors import ConfigError, Where
from sim.files import MAX_CONFIG_BYTES, Refused, XmlGuard, read_bytes_within

# server.xml and jetty.xml nest half a dozen elements deep; the tree is walked recursively
# (`Element.iter`), so a file nested thousands deep is refused as it is read
MAX_DEPTH = 200
_DECLARED_ENCODING = re.compile(rb"^\s*<\?xml[^>]*\bencoding\s*=\s*[\"']([^\"']*)", re.I)


@dataclass
class Element:
    tag: str
    attributes: dict[str, str]
    where: Where
    children: list[Element] = field(default_factory=list)
    text: str = ""
    lines: tuple[str, ...] = ()  # the file's lines, to place an attribute on its own line

    def iter(self, tag: str | None = None):
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            yield from child.iter(tag)

    def attribute_where(self, name: str) -> Where:
        """The line an attribute is written on (a start tag may span lines)."""
        pattern = re.compile(rf"(^|\s){re.escape(name)}\s*=")
        for offset, line in enumerate(self.lines[self.where.line - 1 : self.where.line + 40]):
            if pattern.search(line):
                return Where(self.where.file, self.where.line + offset)
            if offset and ">" in line and "<" in line.split(">", 1)[1]:
                break
        return self.where


def read_xml(path: Path, kind: str, option: str) -> Element:
    """The root element of `path`; a file that is not XML is a one-line error, and so is one
    that is too large or whose entities expand without bound (`sim.files.XmlGuard`)."""
    try:
        data = read_bytes_within(path, MAX_CONFIG_BYTES)
    except Refused as exc:
        raise ConfigError(path, f"a {kind} of reasonable size: {exc.found}", exc.fix) from None
    except OSError as exc:
        raise ConfigError(
            path, f"a readable {kind} ({exc.strerror})", f"fix the path given to {option}"
        ) from None
    _check_encoding(path, data, kind)
    lines = tuple(data.decode("utf-8", errors="replace").splitlines())
    parser = expat.ParserCreate()
    guard = XmlGuard(
        parser, len(data), lambda line, found, fix: ConfigError(Where(Path(path), line), found, fix)
    )
    stack: list[Element] = []
    texts: list[list[str]] = []  # each open element's text, in pieces: joined once, at its end
    roots: list[Element] = []

    def start(tag: str, attributes: dict[str, str]) -> None:
        guard.text(sum(len(value) for value in attributes.values()))
        if len(stack) >= MAX_DEPTH:
            raise ConfigError(
                Where(Path(path), parser.CurrentLineNumber),
                f"a {kind} nested a few elements deep, not more than {MAX_DEPTH} (<{tag}>)",
                f"close the elements, or check that {option} names the {kind}",
            )
        element = Element(tag, attributes, Where(Path(path), parser.CurrentLineNumber), lines=lines)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)
        texts.append([])

    def end(tag: str) -> None:
        stack.pop().text = "".join(texts.pop())

    def text(data: str) -> None:
        guard.text(len(data))
        if texts:
            texts[-1].append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        if "amplification" in expat.ErrorString(exc.code):  # expat's own bound (attributes)
            raise ConfigError(
                Where(Path(path), exc.lineno),
                "XML entities expand far past the document's own text (expat's limit)",
                "write the values in place of the entities",
            ) from None
        raise ConfigError(
            Where(Path(path), exc.lineno),
            f"well-formed XML for {kind} ({expat.ErrorString(exc.code)})",
            f"fix the XML, or check that {option} names the {kind}",
        ) from None
    return roots[0]


def _check_encoding(path: Path, data: bytes, kind: str) -> None:
    """XML declared UTF-8, or without an encoding declaration (UTF-8 then): a byte that is
    not UTF-8 is named with its line (expat calls it an "invalid token", which sends one
    looking for a typo)."""
    declared = _DECLARED_ENCODING.match(data)
    if declared and declared.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8"):
        return  # another encoding, declared: expat reads it
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return  # UTF-16 with its byte-order mark
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            Where(path, data[: exc.start].count(b"\n") + 1),
            f"a {kind} in UTF-8, as its XML declaration says (or implies); byte "
            f"0x{data[exc.start]:02x} is not UTF-8 (a Latin-1 or Windows-1252 file?)",
            'save it as UTF-8, or declare its encoding: <?xml version="1.0" '
            'encoding="ISO-8859-1"?>',
        ) from None
