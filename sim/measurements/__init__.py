"""Measured data: load-test and server files read into the tidy measurement table
(docs/measurement-table.md), and service demands estimated from it."""
