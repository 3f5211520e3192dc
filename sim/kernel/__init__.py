"""The kernel: the only code that touches SimPy's internals.

SimPy's event calendar drives callback-style components (`calendar.Kernel`); slot pools
(`slots.Pool`: Apache workers, Tomcat threads, JDBC connections) and CPUs (`cpu`: processor
sharing and dedicated cores) are the shared resources every tier is made of, and `request`
is the unit of work with its outcome.  Components schedule plain callbacks instead of
running one generator process per request: that is what makes the engine several times
faster than a process-per-request SimPy program.
"""
