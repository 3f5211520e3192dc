"""What a kept result was made by: the tiersim version, every source file of the `sim` package
and whether numba is importable.  A cache of finished work (calibrate's evaluations,
capacity's) keys each entry by it beside the entry's inputs, so that a result made by other code
is never replayed: a fix to the engines or the statistics changes the figures without changing
the version number.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # sim/


@functools.cache
def code_digest() -> str:
    """The tiersim version, every `.py` file of the `sim` package (names and content), and
    whether numba is importable: an evaluation made by other code is not this code's."""
    from importlib.util import find_spec

    from sim import __version__

    return package_digest(PACKAGE, f"{__version__}|numba={find_spec('numba') is not None}")


def package_digest(package: Path, stamp: str) -> str:
    """`stamp`, and the name and content of every `.py` file under `package`, hashed (some
    50 ms for the whole package, once per process)."""
    digest = hashlib.sha256(stamp.encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
