"""What the measurement commands share: the extra they need, a readable input file, and a
light level's shape read from a per-sample file (`estimate --shape`, `plan --shape`)."""

from __future__ import annotations

import click

from sim.cli.common import fail
from sim.exit_codes import ExitCode
from sim.measurements.format_names import SHAPE_FORMATS, shape_format_problem


def need_pandas() -> None:
    try:
        import pandas  # noqa: F401
    except ImportError:
        fail("this command needs pandas: pip install 'tiersim[measure]'", ExitCode.USAGE)


def readable_file(path: str) -> None:
    """Refuse, before reading, a pipe or a device (reading /dev/zero or a FIFO never ends)."""
    import os
    import stat

    from sim.files import not_there

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        fail(f"{path}: {not_there(path)}", ExitCode.MODEL)
    except OSError as exc:
        fail(f"{path}: cannot read ({exc.strerror or exc})", ExitCode.MODEL)
    if not stat.S_ISREG(mode):
        fail(
            f"{path}: not a regular file (a pipe, device or socket, which could be read forever); "
            "save it to a file and give that file",
            ExitCode.MODEL,
        )


def _shape_format(context, parameter, value: str) -> str:
    problem = shape_format_problem(value)
    if problem is not None:
        fail(f"--shape-format {problem}", ExitCode.USAGE)
    return value


# `--shape-format`, as `estimate` and `plan` both take it: the import's names of the per-sample
# files (`sim.measurements.format_names`), each refusal saying why that file has no shape
shape_format_option = click.option(
    "--shape-format",
    default="jtl",
    show_default=True,
    metavar=f"[{'|'.join(SHAPE_FORMATS)}]",
    callback=_shape_format,
    help="the --shape file's format, named as tiersim import names it",
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
            fail(f"{csv_path}: cannot write ({exc.strerror or exc})", ExitCode.USAGE)
    return shape
