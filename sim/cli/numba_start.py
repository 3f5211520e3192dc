"""The compiled engine's start in a command, without SciPy's linear algebra.

Before numba loads the loop's cached machine code it loads its own NumPy implementations
(`BaseContext.refresh` imports `numba.np.arraymath` and the rest), and `numba.np.arraymath`
asks, as it is imported, whether SciPy's BLAS is there (`_HAVE_BLAS = _check_blas()`, which
imports `scipy.linalg`: 0.2-0.3 s of CPU, a fifth of the compiled engine's start in a process).
The answer only chooses how `np.correlate` and `np.convolve` take their inner product in code
numba compiles; the loop uses neither.  A command refuses `scipy.linalg` to that one question
(`install`): the flag reads False, and every other import of `scipy.linalg` -- numba's linear
algebra when it compiles `np.dot`, which asks again (`numba.np.linalg.ensure_blas`), or a
calibration's least squares -- loads it as usual.  The figures do not change: the loop's machine
code comes from numba's cache as before (and compiles alike where it is not cached).
"""

from __future__ import annotations

import sys
from pathlib import Path

# numba 0.68's probe: `numba.np.arraymath._check_blas` -> `numba.np.linalg.ensure_blas` ->
# `import scipy.linalg.cython_blas`.  Another numba that asks elsewhere is not refused
# anything: the command then loads scipy.linalg as it did.
_PROBE = ("_check_blas", ("numba", "np", "arraymath.py"))


def _asked_by_the_probe() -> bool:
    name, path = _PROBE
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == name and Path(code.co_filename).parts[-3:] == path:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class SkipBlasProbe:
    """Refuses `scipy.linalg` to numba's import-time BLAS probe alone, once, then leaves
    `sys.meta_path`; finds nothing itself (every other import goes to the next finder).  A
    meta path finder by its `find_spec` (importlib.abc's base would cost an import)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "scipy.linalg" or not _asked_by_the_probe():
            return None
        uninstall()
        raise ModuleNotFoundError(
            "scipy.linalg is not loaded for numba's import-time BLAS probe (sim.cli.numba_start)",
            name=fullname,
        )


def install() -> None:
    """From now on, numba's BLAS probe finds no scipy.linalg (a no-op once numba has run it)."""
    if "numba.np.arraymath" in sys.modules or any(
        isinstance(finder, SkipBlasProbe) for finder in sys.meta_path
    ):
        return
    sys.meta_path.insert(0, SkipBlasProbe())


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, SkipBlasProbe)]
