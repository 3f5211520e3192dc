"""A command's compiled run loads no scipy.linalg: numba's import-time BLAS probe is refused it,
and nothing else is (`sim.cli.numba_start`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout


def test_a_compiled_run_of_the_command_loads_no_scipy_linalg_and_numba_still_has_blas():
    out = _python(
        "import sys\n"
        "from sim.cli import entry\n"
        "sys.argv = ['tiersim', 'run', 'models/demo.toml', '--replications', '1', '--set',\n"
        "            'run.duration_s=60', '--engine', 'compiled', '--json']\n"
        "try:\n"
        "    entry()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "import numba.np.arraymath\n"
        "print('loaded', 'scipy.linalg' in sys.modules, numba.np.arraymath._HAVE_BLAS)\n"
        # numba's linear algebra asks for BLAS again when it compiles np.dot: it is there
        "import numba, numpy as np\n"
        "dot = numba.njit(lambda a, b: np.dot(a, b))\n"
        "print('dot', dot(np.arange(3.0), np.arange(1.0, 4.0)), 'scipy.linalg' in sys.modules)\n"
    )
    lines = out.strip().splitlines()
    assert lines[-2] == "loaded False False"
    assert lines[-1] == "dot 8.0 True"


def test_nothing_but_the_probe_is_refused_scipy_linalg():
    out = _python(
        "import sys\n"
        "from sim.cli import numba_start\n"
        "numba_start.install()\n"
        "import scipy.linalg\n"
        "print(scipy.linalg.cholesky([[4.0]])[0][0],\n"
        "      any(isinstance(f, numba_start.SkipBlasProbe) for f in sys.meta_path))\n"
    )
    assert out.split() == ["2.0", "True"]
