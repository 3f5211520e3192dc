"""Reading and writing the files a user names: model and sweep files, experiments, tables,
caches, and the outputs of `--timeseries` and `-o`.

Whatever the file holds, the reader answers with text or with a `FileProblem` whose message
names the file, what is wrong and the fix: a pipe or a device is refused before it is opened
(reading one never ends), a file too large to be what it claims is refused by its size, a
UTF-8 byte-order mark is dropped, and any other encoding (UTF-16, Latin-1, a binary file) is
named, with the line and column of the first byte that is not UTF-8.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A model or sweep file is a few kilobytes; anything past this is not one.
MAX_TEXT_BYTES = 16 * 2**20
# How deep a parsed document's arrays and tables may nest (a model nests about six levels).
MAX_DEPTH = 32


@dataclass(frozen=True)
class Limit:
    """A bound on what a reader of configuration or measurement files accepts, so that a few
    hostile lines (a value that doubles itself, an XML entity that expands a billion times, a
    gzip bomb, an `Include` that fans out) are refused in one line, in bounded time and memory,
    instead of exhausting the machine.  Each is far above what a genuine file needs, and an
    environment variable raises it for the rare genuine file beyond it."""

    what: str  # what is counted, for the message: "characters of one expanded value"
    default: int
    variable: str  # the environment variable that raises it

    @property
    def value(self) -> int:
        text = os.environ.get(self.variable, "").strip()
        if not text:
            return self.default
        try:
            value = int(float(text))
        except (ValueError, OverflowError):
            raise FileProblem(
                f"{self.variable}={text!r}: expected a whole number (the limit on {self.what})"
            ) from None
        if value < 1:
            raise FileProblem(f"{self.variable}={text!r}: expected a number >= 1")
        return value

    def exceeded(self, found: str) -> str:
        """What passed the limit, and the limit: `found: more than the limit of N what`."""
        return f"{found}: more than the limit of {self.value:,} {self.what}"

    @property
    def fix(self) -> str:
        return f"if the file is genuine, raise the limit with {self.variable}={self.value * 4}"

    def refusal(self, found: str) -> str:
        """The whole message after `file:line: `."""
        return f"{self.exceeded(found)}; {self.fix}"


# Expanding `$(name)` (workers.properties), `${NAME}` (httpd) or an XML entity: a genuine
# value is a host name or a path, a genuine line a few hundred characters.
MAX_EXPANDED = Limit("characters of one expanded value", 2**20, "TIERSIM_MAX_EXPANDED_CHARS")
# XML entities: the characters they may add to a whole document beyond what it spells out.
MAX_ENTITY_TEXT = Limit("characters added by XML entities", 2**20, "TIERSIM_MAX_ENTITY_CHARS")
# One server's configuration, includes followed: Debian's httpd reads about 100 files, 60 kB.
MAX_CONFIG_FILES = Limit("files read for one configuration", 4096, "TIERSIM_MAX_CONFIG_FILES")
MAX_CONFIG_BYTES = Limit("bytes of configuration", 64 * 2**20, "TIERSIM_MAX_CONFIG_BYTES")
# A measurement file as text (a gzip file's once decompressed): a million JMeter samples are
# about 150 MB.  Refused before it is read (or, compressed, as its text passes the limit).
MAX_MEASUREMENT_BYTES = Limit(
    "bytes of measurement text", 256 * 2**20, "TIERSIM_MAX_MEASUREMENT_BYTES"
)
# gzip's best on genuine logs is about 20:1; a bomb of repeated bytes reaches 1000:1.
MAX_GZIP_RATIO = Limit("bytes of text per compressed byte", 100, "TIERSIM_MAX_GZIP_RATIO")


class FileProblem(ValueError):
    """A file that cannot be read as the text it should be; the message says why and the fix."""


class Refused(FileProblem):
    """A file refused before it is read whole: what was found (with the limit), and the fix,
    apart, for readers whose messages place them (`file:line: found; fix`)."""

    def __init__(self, found: str, fix: str) -> None:
        self.found = found
        self.fix = fix
        super().__init__(f"{found}; {fix}")


def read_bytes_within(path: str | Path, limit: Limit, used: int = 0) -> bytes:
    """A regular file's bytes, refused (`Refused`) when it is a pipe or device (read forever)
    or would bring the bytes read so far (`used`) past `limit`.  OSError passes through."""
    path = Path(path)
    info = path.stat()
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(info.st_mode):
        raise Refused(
            "not a regular file (a pipe, device or socket, which could be read forever)",
            "save it to a file and give that file",
        )
    maximum = limit.value - used
    if info.st_size > maximum:
        raise Refused(limit.exceeded(f"{used + info.st_size:,} bytes"), limit.fix)
    with path.open("rb") as handle:
        # read(n) reserves n bytes at once: the file's own size, not the limit's 256 MiB
        data = handle.read(info.st_size + 1)
        if len(data) > info.st_size:  # a log still being written: read on, within the limit
            data += handle.read(maximum + 1 - len(data))
    if len(data) > maximum:  # it grew since stat()
        raise Refused(limit.exceeded(f"over {limit.value:,} bytes"), limit.fix)
    return data


def not_there(path: str | Path, what: str = "file") -> str:
    """Why a path that cannot be opened is not there, for a message: no such file, a symbolic
    link to nothing (naming its target), or a loop of symbolic links -- each its own fix."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links (each points on to the next, back to itself)"
    if os.path.islink(path) and not os.path.exists(path):
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    if os.path.isdir(path):
        return f"a directory, not a {what}"
    if os.path.exists(path):
        return "not a regular file (a pipe, device or socket, which could be read forever)"
    return f"no such {what}"


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a regular file (a leading byte-order mark dropped)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileProblem(f"{path}: {not_there(path, what)}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileProblem(f"{path}: {not_there(path, what)}") from None
        raise FileProblem(f"{path}: cannot read the {what} ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise FileProblem(f"{path}: is a directory; give the {what} itself")
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem(
            f"{path}: not a regular file (a pipe, device or socket, which could be read forever); "
            f"save the {what} to a file and give that file"
        )
    if info.st_size > max_bytes:
        raise FileProblem(
            f"{path}: {info.st_size} bytes is too large for a {what} (at most "
            f"{max_bytes // 2**20} MiB); is it the right file?"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(info.st_size + 1)  # the file's size reserved, not the limit's
            if len(data) > info.st_size:  # still being written: read on, within the limit
                data += handle.read(max_bytes + 1 - len(data))
    except OSError as exc:
        raise FileProblem(f"{path}: cannot read the {what} ({exc.strerror})") from None
    if len(data) > max_bytes:  # it grew since stat()
        raise FileProblem(f"{path}: too large for a {what} (at most {max_bytes // 2**20} MiB)")
    return decode(data, path, what)


def read_json_lines(path: str | Path, what: str, max_bytes: int) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one per line, where a store appends a record as
    each piece of work finishes (a study's kept evaluations); a line cut short by an
    interruption, or anything else that is not one object, is skipped.  No file: none.  A
    FileProblem for a file that cannot be read (`read_text`)."""
    import json

    path = Path(path)
    if not path.exists():
        return []
    objects = []
    for line in read_text(path, what, max_bytes=max_bytes).splitlines():
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, a 5 000-digit number
            continue
        if isinstance(entry, dict):
            objects.append(entry)
    return objects


def utf16_form(data: bytes) -> str | None:
    """How `data` is UTF-16 text, or None: "UTF-16" when it starts with a UTF-16 byte-order
    mark, "UTF-16LE" or "UTF-16BE" when, without one, every character of its first line(s)
    has a NUL byte beside it (ASCII as UTF-16, a Windows tool's "Unicode" file).  A reader of
    UTF-8 would otherwise call such a file binary, or read garbage from it."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16"
    head = data[:512]
    pairs = len(head) // 2
    if pairs < 2:
        return None
    low = sum(head[2 * i] == 0 for i in range(pairs))  # NULs first in each pair: big-endian
    high = sum(head[2 * i + 1] == 0 for i in range(pairs))
    # text of another script has fewer NULs, a binary file NULs on both sides of a pair
    if high >= 0.9 * pairs and low == 0:
        return "UTF-16LE"
    if low >= 0.9 * pairs and high == 0:
        return "UTF-16BE"
    return None


def utf16_said(form: str) -> str:
    """What gave a file away as UTF-16 (`utf16_form`), for a message."""
    if form == "UTF-16":
        return "it starts with a UTF-16 byte-order mark"
    return "a NUL byte beside each character, with no byte-order mark"


def decode(data: bytes, path: str | Path, what: str = "file") -> str:
    """UTF-8 text, or a message naming the encoding problem and where it is."""
    form = utf16_form(data)
    if form is not None:
        raise FileProblem(
            f"{path}: the {what} is {form} text ({utf16_said(form)}); save it as UTF-8 "
            f"(iconv -f {form} -t UTF-8)"
        )
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(data, exc.start)
        if b"\x00" in data[:4096]:
            raise FileProblem(
                f"{path}: a binary file, not a {what} (line {line}, column {column}: byte "
                f"0x{data[exc.start]:02x} is not text); give the {what} itself"
            ) from None
        raise FileProblem(
            f"{path}: line {line}, column {column}: byte 0x{data[exc.start]:02x} is not UTF-8 "
            f"(the {what} is in another encoding, e.g. Latin-1 or Windows-1252); save it as UTF-8"
        ) from None
    if "\x00" in text:
        line, column = _position(data, data.index(b"\x00"))
        raise FileProblem(
            f"{path}: a binary file, not a {what} (a NUL byte at line {line}, column {column}); "
            f"give the {what} itself"
        )
    return text


def read_toml(path: str | Path, what: str = "file") -> dict[str, Any]:
    """A TOML file's document (`read_text`, then `parse_toml`)."""
    return parse_toml(read_text(path, what), path, what)


def parse_toml(text: str, path: str | Path, what: str = "file") -> dict[str, Any]:
    """A TOML document, refused when it is not TOML or nests deeper than a model can."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileProblem(f"{path}: not valid TOML: {exc}") from None
    except ValueError as exc:  # an integer too long to convert (over 4 300 digits)
        raise FileProblem(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        document = None
    where = too_deep(document) if document is not None else None
    if document is None or where is not None:
        line = nesting_line(text)
        near = f" (near line {line})" if line else ""
        field = f" at {'.'.join(where[:6])}..." if where else ""
        raise FileProblem(
            f"{path}: arrays or tables nested more than {MAX_DEPTH} levels deep{field}{near}; "
            f"a {what} nests a few levels: close the brackets"
        )
    return document


def _position(data: bytes, offset: int) -> tuple[int, int]:
    before = data[:offset]
    return before.count(b"\n") + 1, offset - (before.rfind(b"\n") + 1) + 1


def too_deep(value: object, limit: int = MAX_DEPTH) -> list[str] | None:
    """The path to a point nested deeper than `limit` arrays and tables, or None."""
    stack: list[tuple[object, list[str]]] = [(value, [])]
    while stack:
        node, where = stack.pop()
        if len(where) > limit:
            return where
        if isinstance(node, dict):
            stack.extend((child, [*where, str(key)]) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, [*where, str(i)]) for i, child in enumerate(node))
    return None


def nesting_line(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The line where brackets first open deeper than `limit` (strings not told apart: a hint)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        for char in line:
            if char in "[{":
                depth += 1
                if depth > limit:
                    return number
            elif char in "]}":
                depth = max(0, depth - 1)
    return None


def check_output(path: str | Path, option: str) -> Path:
    """An output file that can be written: its folder exists and it is not a folder itself.
    Checked before any work is done, so that a long run does not end in a failed write."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise FileProblem(f"{option} {path}: is a directory; give a file name inside it")
    if not folder.exists():
        raise FileProblem(
            f"{option} {path}: the folder {folder} does not exist; create it (mkdir -p {folder}) "
            "or write elsewhere"
        )
    if not folder.is_dir():
        raise FileProblem(f"{option} {path}: {folder} is not a folder; write elsewhere")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise FileProblem(f"{option} {path}: not writable (permission denied); write elsewhere")
    return path


def bounded_sub(
    pattern: re.Pattern[str], text: str, replace: Callable[[re.Match[str]], str], limit: int
) -> str | None:
    """`pattern.sub(replace, text)`, or None as soon as the result would pass `limit`
    characters: a value that names itself twice doubles with each line that does so, and is
    refused before it is built."""
    parts: list[str] = []
    size = 0
    last = 0
    for match in pattern.finditer(text):
        piece = replace(match)
        size += match.start() - last + len(piece)
        if size > limit:
            return None
        parts += [text[last : match.start()], piece]
        last = match.end()
    if size + len(text) - last > limit:
        return None
    parts.append(text[last:])
    return "".join(parts)


class XmlGuard:
    """Bounds what an expat parser may expand, and reads no other file.

    An internal entity may expand to many times its definition ("billion laughs": ten
    references to ten references...); expat bounds that in attribute values but hands element
    text over a piece at a time.  Every reader counts its text here (`text`), and a document
    whose text passes its own size by more than `MAX_ENTITY_TEXT` is refused at once.  An
    external entity (`<!ENTITY x SYSTEM "file">`) is refused where it is used: expat would skip
    it and leave its content silently out; no file or URL is ever opened."""

    def __init__(
        self, parser: Any, document_size: int, refuse: Callable[[int, str, str], Exception]
    ) -> None:
        """`refuse(line, found, fix)` is the reader's own one-line error."""
        from xml.parsers import expat

        self.parser = parser
        self.refuse = refuse
        self.allowed = document_size + MAX_ENTITY_TEXT.value
        self.seen = 0
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.ExternalEntityRefHandler = self._external

    def text(self, size: int) -> None:
        self.seen += size
        if self.seen > self.allowed:
            raise self.refuse(
                self.parser.CurrentLineNumber,
                MAX_ENTITY_TEXT.exceeded("XML entities expand far past the document's own text"),
                MAX_ENTITY_TEXT.fix,
            )

    def _external(self, context: Any, base: Any, system_id: Any, public_id: Any) -> int:
        raise self.refuse(
            self.parser.CurrentLineNumber,
            f"an external XML entity ({system_id or public_id}): another file, which is not read",
            "write its content in place of the entity reference",
        )
