"""Presenting results: terminal tables (`tables`), the Plotly HTML report (`report`) and time-series plots (`plots`)."""
