"""Output analysis: confidence intervals, warm-up truncation (MSER), streaming percentiles."""
