"""The simulation engine: SimPy's event calendar driving callback-style components.

Each module models one mechanism (a pool of workers or connections, a processor-sharing
CPU, a station, a client population, the statistics recorder).  Components schedule
plain callbacks on SimPy's `Environment` instead of running one generator process per
request: that is what makes the engine several times faster than a process-per-request
SimPy program, while SimPy processes can still be used alongside for rare events.
"""
