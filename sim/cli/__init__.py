"""`tiersim`: run, validate, document and solve model files.

Exit codes (stable, documented in the README):
  0 success;  2 bad command-line usage;  3 invalid model file or override;
  4 the model cannot be simulated as given (unstable: offered load beyond capacity);
  5 a finite workload did not finish within run.max_duration_s;  130 interrupted (Ctrl-C);
  143 ended by SIGTERM;
  1 an internal error (a bug: please report it with the model file).
`tiersim sweep` exits with the code of its failed points (1 if any was a bug, else the lowest
of 3/4/5 among them; 2 for a results directory of another sweep); `tiersim capacity` with 4
when no value in range meets the SLO.
"""

from __future__ import annotations

import sys
from importlib import import_module

import click

from sim.cli.common import Commands, err
from sim.exit_codes import ExitCode

# The command groups: each module lists its click commands in COMMANDS.  A new group is one
# line here.
GROUPS = (
    "sim.cli.models",  # run, validate, schema, solve, plot
    "sim.cli.experiments",  # reproduce, calibrate
    "sim.cli.studies",  # sweep, report, capacity
    "sim.cli.measure",  # import, estimate
    "sim.cli.planning",  # plan
    "sim.cli.configs",  # from-config, export lqn
)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tiersim")
def main() -> None:
    """Simulate clustered Java web tiers: proxies, pools, app servers, balancers, databases."""


for _group in GROUPS:
    for _command in import_module(_group).COMMANDS:
        main.add_command(_command)


def entry() -> None:
    """Console-script entry: an unexpected exception is reported in one line, not a traceback
    (set TIERSIM_DEBUG=1 to see it)."""
    import os

    # OpenBLAS (numpy's and scipy's each) starts a pool of threads when imported, which spin
    # a while waiting for work that tiersim never gives them (its matrices hold a few dozen
    # numbers): 0.15 s of CPU per process, taken from the simulation on a busy machine, and a
    # pool per worker process.  Before numpy is imported; a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # numba's start imports scipy.linalg only to ask whether a BLAS is there (0.2-0.3 s)
    from sim.cli import numba_start

    numba_start.install()
    try:
        main(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as exc:
        if os.environ.get("TIERSIM_DEBUG"):
            raise
        err.print(
            f"[bold red]internal error:[/bold red] {type(exc).__name__}: {exc}\n"
            "this is a bug in tiersim; rerun with TIERSIM_DEBUG=1 and report the traceback with the model file"
        )
        sys.exit(ExitCode.INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    entry()
