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
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

# A model or sweep file is a few kilobytes; anything past this is not one.
MAX_TEXT_BYTES = 16 * 2**20
# How deep a parsed document's arrays and tables may nest (a model nests about six levels).
MAX_DEPTH = 32


class FileProblem(ValueError):
    """A file that cannot be read as the text it should be; the message says why and the fix."""


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a regular file (a leading byte-order mark dropped)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileProblem(f"{path}: no such {what}") from None
    except OSError as exc:
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
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise FileProblem(f"{path}: cannot read the {what} ({exc.strerror})") from None
    if len(data) > max_bytes:  # it grew since stat()
        raise FileProblem(f"{path}: too large for a {what} (at most {max_bytes // 2**20} MiB)")
    return decode(data, path, what)


def decode(data: bytes, path: str | Path, what: str = "file") -> str:
    """UTF-8 text, or a message naming the encoding problem and where it is."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise FileProblem(
            f"{path}: the {what} is UTF-16 text (it starts with a UTF-16 byte-order mark); "
            "save it as UTF-8"
        )
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
