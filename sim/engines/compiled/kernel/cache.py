"""numba's on-disk cache for the whole kernel package, and whether it holds the loop.

numba's `cache=True` stamps a function's cached machine code with a hash of the one source
file that defines it (`_SourceFileBackedLocatorMixin.get_source_stamp`, numba issue 1833): a
cached `loop.run_events` would survive an edit of a helper it calls in another module, and run the
old helper.  `PackageLocator` stamps every function of this package with one hash of all its
`.py` files, so an edit anywhere in the kernel recompiles all of it.  It is hand-written
because numba offers no public hook for a stamp of several files: it is the documented
`_CacheLocator` interface, placed first in `CacheImpl._locator_classes`, and it delegates
where the cache lives to numba's own locators (beside the source, or `NUMBA_CACHE_DIR`).

It must be registered before the first `@njit(cache=True)` of the package runs (numba picks
a function's locator when it decorates it): the package's `__init__` imports this module
first.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

from numba.core.caching import CacheImpl, _CacheLocator

PACKAGE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=16)
def _hash(package: Path, signature: tuple[tuple[str, int, int], ...]) -> bytes:
    # keyed on every file's (name, mtime, size), as numba's own `_hash_source_file` is, so an
    # edit during the process is hashed again; the stamp itself is the files' content
    digest = hashlib.sha256()
    for name, _mtime, _size in signature:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update((package / name).read_bytes())
        digest.update(b"\0")
    return digest.digest()


def source_stamp(package: Path = PACKAGE) -> bytes:
    """A hash of the names and content of every `.py` file of `package` (the kernel's)."""
    # numba asks once per cached function as it decorates it (about 200 times as the package
    # is imported): one listing and one stat a file, not pathlib's glob and two stats (0.1-0.2 s
    # of every process's start)
    with os.scandir(package) as entries:
        files = sorted((e.name, e.stat()) for e in entries if e.name.endswith(".py"))
    return _hash(package, tuple((name, st.st_mtime_ns, st.st_size) for name, st in files))


def _locator_classes() -> list[Any]:
    """numba's locators, tried in order for each function it caches."""
    return CacheImpl._locator_classes


class PackageLocator(_CacheLocator):
    """Where numba caches a function of `package` (numba's own choice: beside the source, or
    `NUMBA_CACHE_DIR`) and its stamp: the whole package's `source_stamp`, not the defining
    file's."""

    package: Path = PACKAGE

    def __init__(self, inner: _CacheLocator) -> None:
        self._inner = inner

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> bytes:
        return source_stamp(self.package)

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != cls.package:
            return None  # not a function of the package: the next locator's
        for locator_class in _locator_classes():
            if issubclass(locator_class, PackageLocator):
                continue
            inner = locator_class.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner)
        return None


def register(package: Path = PACKAGE) -> type[PackageLocator]:
    """Stamp every `@njit(cache=True)` function of `package` (a directory of modules) with
    the whole package's hash, from now on: call it before the package's modules are imported."""
    package = package.resolve()
    for locator_class in _locator_classes():
        if issubclass(locator_class, PackageLocator) and locator_class.package == package:
            return locator_class
    new = type(f"PackageLocator_{package.name}", (PackageLocator,), {"package": package})
    _locator_classes().insert(0, new)
    return new


register()


def is_warm() -> bool:
    """Whether numba's cache holds the event loop's machine code for this package's source as
    it is now: if not, the next compiled run compiles it first (a minute or more).  The one
    place that reads numba's cache index (numba 0.68's; another numba answers False, which
    only makes a caller announce a compilation that may not come)."""
    from sim.engines.compiled.kernel.loop import run_events

    try:
        return bool(run_events._cache._cache_file._load_index())  # type: ignore[attr-defined]
    except Exception:
        return False
