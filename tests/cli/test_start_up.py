"""A process starts fast: the command line loads what its command needs, when it needs it, and
a process with the compiled engine in numba's cache compiles nothing (bench/process_times.py
measures the whole processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout


def test_help_loads_neither_the_schema_nor_numpy():
    """`tiersim --help` and `--version` answer in a tenth of a second: no numpy, pydantic,
    scipy or numba behind them."""
    out = _python(
        "import sys\n"
        "from sim.cli import main\n"
        "try:\n"
        "    main(['--help'], standalone_mode=True)\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'pydantic', 'scipy', 'numba', 'pandas', 'simpy')\n"
        "print('loaded:', [name for name in heavy if name in sys.modules])\n"
    )
    assert out.strip().endswith("loaded: []")


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "models/demo.toml"],
        ["run", "--help"],
        ["schema"],
        ["solve", "models/demo.toml"],
    ],
    ids=" ".join,
)
def test_commands_that_print_numbers_load_no_tables_scipy_or_plotting(args):
    """pandas, SciPy and Plotly cost a second or more to import on a busy machine, and these
    commands print numbers without them (`solve`'s open-network distributions import
    scipy.stats only when a model needs them)."""
    out = _python(
        "import contextlib, io, sys\n"
        "from sim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({args!r}, standalone_mode=True)\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "heavy = ('pandas', 'scipy', 'plotly', 'matplotlib', 'pyarrow')\n"
        "print('loaded:', [name for name in heavy if name in sys.modules])\n"
    )
    assert out.strip().endswith("loaded: []")


def test_a_run_loads_no_scipy_stats():
    """Intervals need only the Student-t quantile (`t_quantile`, scipy.special): scipy.stats
    (0.4-0.7 s to import) stays out of a run, here of three replications with intervals."""
    out = _python(
        "import sys\n"
        "from sim.model import load_model\n"
        "from sim.run.simulate import simulate\n"
        "model = load_model('models/demo.toml', ['run.duration_s=20', 'run.engine=reference'])\n"
        "outcome = simulate(model, replications=3)\n"
        "assert outcome.result.summary['throughput'].half_width > 0\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    assert out.strip() == "False"


def test_the_compiled_engine_compiles_nothing_once_cached():
    """A process runs the compiled engine from numba's cache alone: no function is compiled
    (numba's constructor of the state struct used to be, about a second in every process)."""
    warm = "from sim.engines.compiled.warm import warm\nwarm()\n"
    _python(warm)  # fills the cache if this checkout's kernel is not in it yet
    out = _python(
        "from numba.core import event\n"
        "listener = event.RecordingListener()\n"
        "with event.install_listener('numba:compile', listener):\n"
        + "".join(f"    {line}\n" for line in warm.splitlines())
        + "print(len(listener.buffer))\n"
    )
    assert out.strip() == "0"


def test_the_command_pins_blas_to_one_thread_unless_told():
    """OpenBLAS's idle threads spin at import (0.15 s of CPU a process, more under load):
    the command sets OPENBLAS_NUM_THREADS=1 before numpy loads; a user's value wins."""
    import os

    code = (
        "import os, sys\n"
        "from sim.cli import entry\n"
        "sys.argv = ['tiersim', '--version']\n"
        "try:\n"
        "    entry()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('numpy' in sys.modules, os.environ['OPENBLAS_NUM_THREADS'])\n"
    )
    for preset, expected in ((None, "1"), ("3", "3")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if preset is not None:
            env["OPENBLAS_NUM_THREADS"] = preset
        out = subprocess.run(
            [sys.executable, "-c", code],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        ).stdout
        assert out.split()[-2:] == ["False", expected]


def test_the_planners_questions_load_no_scipy_stats_before_they_draw():
    """`capacity`, `run --calibration` and a calibration's reader import their modules without
    scipy.stats (0.4-0.7 s of a second-long start): the Sobol draws and the normal quantiles
    import it when a command draws, after its first simulations."""
    out = _python(
        "import sys\n"
        "import sim.cli.models, sim.cli.studies, sim.cli.experiments\n"
        "import sim.studies.capacity.question, sim.studies.calibration.saved\n"
        "import sim.studies.calibration.propagate, sim.studies.predict\n"
        "import sim.studies.sweep.design, sim.studies.sweep.point\n"
        "print([name for name in ('scipy.stats', 'pandas', 'plotly') if name in sys.modules])\n"
    )
    assert out.strip() == "[]"
