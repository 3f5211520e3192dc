"""Studies made of many runs: sweeps, capacity searches, reproductions of published tables, calibration."""
