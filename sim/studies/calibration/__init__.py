"""Calibration: free parameters fitted to measured figures, their posterior, intervals and the model error."""
