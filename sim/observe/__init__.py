"""Observing a run: the recorder of cumulative counters and response-time histograms, and the
metrics derived from two snapshots.
"""
