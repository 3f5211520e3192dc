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
import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

from sim.measurements.errors import MeasurementError

_SNIFF = 8192
PROGRESS_EVERY = 20_000  # lines between progress reports while a file is parsed
# progress(lines read, lines in the file), called every PROGRESS_EVERY lines
Progress = Callable[[int, int], None] | None


def read_lines(path: str | Path, expected: str, encoding: str = "utf-8") -> list[str]:
    """The file's lines without line endings. `expected` names the format for messages
    (e.g. "a JMeter CSV results file with a header line")."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise MeasurementError(path, None, "no such file") from None
    except IsADirectoryError:
        raise MeasurementError(path, None, f"a directory; expected {expected}") from None
    except OSError as exc:
        raise MeasurementError(path, None, f"cannot read ({exc.strerror})") from None
    if not data.strip():
        raise MeasurementError(path, 1, f"the file is empty; expected {expected}")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise MeasurementError(
            path,
            1,
            "UTF-16 text (byte-order mark "
            f"{data[:2].hex(' ').upper()}); expected UTF-8 {expected} "
            "(convert it: iconv -f UTF-16 -t UTF-8)",
        )
    if data.startswith(b"\x1f\x8b"):
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise MeasurementError(
                path,
                None,
                f"a damaged or truncated gzip file ({exc}); expected {expected}, compressed whole "
                "(check it with gzip -t)",
            ) from None
        if not data.strip():
            raise MeasurementError(path, 1, f"the compressed file is empty; expected {expected}")
    head = data[:_SNIFF]
    if b"\x00" in head:
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
