"""The package's face (`import sim`, docs/api.md): `runs` (models, runs, measurements) and
`studies` (experiments, calibration, prediction, capacity, sweeps)."""
