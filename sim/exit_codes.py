"""The exit codes of the `tiersim` command, in one place (documented in the README).

A study records a failure's kind and the CLI exits with its code; `sim.run.simulate.Status`
maps each outcome of a run onto one of these.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    INTERNAL = 1  # a bug: please report it with the model file
    USAGE = 2  # bad command-line usage
    MODEL = 3  # an invalid model file, override or experiment
    UNSTABLE = 4  # the offered load is beyond capacity (capacity: no value meets the SLO)
    UNFINISHED = 5  # a finite workload did not finish within run.max_duration_s
    INTERRUPTED = 130  # Ctrl-C
    TERMINATED = 143  # SIGTERM (128 + 15, as a shell reports it): finished work kept, as for Ctrl-C
