"""Read a measurement file as text, with a clear error for what is not text.

Load-test files are written by many tools on many systems: a Windows shell may have saved a
report as UTF-16, an editor may have added a UTF-8 byte-order mark, a JMeter on a Latin-1
platform writes its labels in Latin-1. The BOM is dropped; anything else that is not the
expected encoding is named with its line, never left to fail deeper as a parsing error.
Gzip-compressed files (`results.jtl.gz`, a rotated `access.log.2.gz`) are recognised by their
magic bytes, whatever their name, and read as the text they hold.
"""

from __future__ import annotations

import codecs
import csv
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from sim.files import (
    MAX_GZIP_RATIO,
    MAX_MEASUREMENT_BYTES,
    Refused,
    read_bytes_within,
    utf16_form,
    utf16_said,
)
from sim.measurements.errors import MeasurementError

_SNIFF = 8192
_CHUNK = 2**16  # compressed bytes decompressed at a time
_RATIO_FROM = 2**24  # the ratio is judged once this much text is out: small files vary widely
PROGRESS_EVERY = 20_000  # lines between progress reports while a file is parsed
# progress(lines read, lines in the file), called every PROGRESS_EVERY lines
Progress = Callable[[int, int], None] | None


def read_lines(path: str | Path, expected: str, encoding: str = "utf-8") -> list[str]:
    """The file's lines without line endings. `expected` names the format for messages
    (e.g. "a JMeter CSV results file with a header line")."""
    try:
        data = read_bytes_within(path, MAX_MEASUREMENT_BYTES)
    except FileNotFoundError:
        raise MeasurementError(path, None, "no such file") from None
    except IsADirectoryError:
        raise MeasurementError(path, None, f"a directory; expected {expected}") from None
    except Refused as exc:
        raise MeasurementError(path, None, str(exc)) from None
    except OSError as exc:
        raise MeasurementError(path, None, f"cannot read ({exc.strerror})") from None
    if not data.strip():
        raise MeasurementError(path, 1, f"the file is empty; expected {expected}")
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise MeasurementError(path, None, f"unknown encoding {encoding!r}") from None
    wide = codec.startswith(("utf-16", "utf-32"))  # --encoding utf-16: NULs are its text
    if data.startswith(b"\x1f\x8b"):
        data = _gunzip(path, data, expected)
        if not data.strip():
            raise MeasurementError(path, 1, f"the compressed file is empty; expected {expected}")
    form = None if wide else utf16_form(data)
    if form is not None:
        raise MeasurementError(
            path,
            1,
            f"{form} text ({utf16_said(form)}); expected {encoding} {expected} (read it with "
            f"--encoding {form.lower()}, or convert it: iconv -f {form} -t UTF-8)",
        )
    head = data[:_SNIFF]
    if b"\x00" in head and not wide:
        line = head[: head.index(b"\x00")].count(b"\n") + 1
        raise MeasurementError(path, line, f"binary data (a NUL byte); expected {expected}")
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8") and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise MeasurementError(
            path,
            line,
            f"byte 0x{data[exc.start]:02x} at column {column} is not {encoding}; expected "
            f"{encoding} text (a Latin-1 file? read it with --encoding latin-1)",
        ) from None
    except LookupError:
        raise MeasurementError(path, None, f"unknown encoding {encoding!r}") from None
    return text.splitlines()


def _gunzip(path: str | Path, data: bytes, expected: str) -> bytes:
    """A gzip file's text, decompressed a piece at a time: refused as soon as it passes
    `MAX_MEASUREMENT_BYTES`, or `MAX_GZIP_RATIO` times the compressed bytes read so far (a
    bomb of a few megabytes that would expand to gigabytes is stopped after a few hundred)."""
    limit, ratio = MAX_MEASUREMENT_BYTES.value, MAX_GZIP_RATIO.value
    pieces: list[bytes] = []
    size = offset = 0
    try:
        while True:
            member = zlib.decompressobj(wbits=31)  # one gzip member; `cat a.gz b.gz` has two
            while not member.eof:
                chunk = member.unconsumed_tail
                if not chunk:
                    if offset >= len(data):
                        raise EOFError("the compressed data ends before its end marker")
                    chunk = data[offset : offset + _CHUNK]
                    offset += len(chunk)
                piece = member.decompress(chunk, _CHUNK * 16)
                size += len(piece)
                pieces.append(piece)
                consumed = offset - len(member.unconsumed_tail) - len(member.unused_data)
                _check_expansion(path, size, max(consumed, 1), limit, ratio)
            offset -= len(member.unused_data)
            if data[offset : offset + 2] != b"\x1f\x8b":
                break  # the end, or trailing bytes after the last member (gzip ignores them)
    except (EOFError, OSError, zlib.error) as exc:
        raise MeasurementError(
            path,
            None,
            f"a damaged or truncated gzip file ({exc}); expected {expected}, compressed whole "
            "(check it with gzip -t)",
        ) from None
    return b"".join(pieces)


def _check_expansion(path: str | Path, size: int, compressed: int, limit: int, ratio: int) -> None:
    if size > limit:
        raise MeasurementError(
            path, None, MAX_MEASUREMENT_BYTES.refusal("decompressed, the file is larger")
        )
    if size > min(_RATIO_FROM, limit // 4) and size > ratio * compressed:
        raise MeasurementError(
            path,
            None,
            MAX_GZIP_RATIO.refusal(
                f"decompresses to {size / compressed:,.0f} bytes per compressed byte (a gzip bomb?)"
            ),
        )


def nested_too_deep(path: str | Path, line: int | None, expected: str) -> MeasurementError:
    """JSON nested past the depth Python's decoder follows (about a thousand brackets; its
    `RecursionError`): no load-test tool or exporter writes that, a hostile or broken file does."""
    return MeasurementError(
        path, line, f"JSON nested a thousand levels deep or more; expected {expected}"
    )


def csv_records(path: str | Path, reader, first_line: int, expected: str) -> Iterator[list[str]]:
    """The records of a `csv.reader` whose first line is the file's `first_line`; the reader's
    own error is one `MeasurementError` with its line: mostly a quote left open, which makes
    the rest of the file one field past csv's limit (131,072 characters)."""
    while True:
        started = reader.line_num  # the lines read before this record: where it begins
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise MeasurementError(
                path,
                first_line + started,
                f"not CSV from here on ({exc}: a quote left open?); expected {expected}",
            ) from None
        yield record
