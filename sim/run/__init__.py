"""Running a model: assembling one replication's components, one replication, and replications with
their confidence intervals.
"""
