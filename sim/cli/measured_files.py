"""What the measurement commands share: the extra they need, a readable input file, and a
light level's shape read from a per-sample file (`estimate --shape`, `plan --shape`)."""

from __future__ import annotations

from sim.cli.common import fail
from sim.exit_codes import ExitCode


def need_pandas() -> None:
    try:
        import pandas  # noqa: F401
    except ImportError:
        fail("this command needs pandas: pip install 'tiersim[measure]'", ExitCode.USAGE)


def readable_file(path: str) -> None:
    """Refuse, before reading, a pipe or a device (reading /dev/zero or a FIFO never ends)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        fail(f"{path}: no such file", ExitCode.MODEL)
    except OSError as exc:
        fail(f"{path}: cannot read ({exc.strerror})", ExitCode.MODEL)
    if not stat.S_ISREG(mode):
        fail(
            f"{path}: not a regular file (a pipe, device or socket, which could be read forever); "
            "save it to a file and give that file",
            ExitCode.MODEL,
        )


def fit_shape_of_file(path: str, format: str, warmup_s: float, until_s, csv_path):
    from sim.measurements.errors import MeasurementError
    from sim.measurements.shape import fit_shape, samples_of_file

    try:
        samples = samples_of_file(path, format, warmup_s, until_s)
        shape = fit_shape(samples, source=path)
    except MeasurementError as exc:
        fail(str(exc), ExitCode.MODEL)
    except ValueError as exc:
        fail(f"{path}: elapsed: {exc}", ExitCode.MODEL)
    if csv_path is not None:
        import numpy as np

        try:
            np.savetxt(
                csv_path,
                np.maximum(samples - shape.best.offset_s, 0.0),
                fmt="%.9g",
                header="demand_s",
                comments="",
            )
        except OSError as exc:
            fail(f"{csv_path}: cannot write ({exc.strerror})", ExitCode.USAGE)
    return shape
