"""One module per tool's file format; each returns samples or aggregate rows, or raises
MeasurementError naming the file, the line and what was expected."""
