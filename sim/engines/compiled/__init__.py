"""The compiled engine: the queueing core of tiersim as a numba event loop (`kernel`)."""
