"""The database's own evidence per load-test run: PostgreSQL `pg_stat_statements` snapshots and
statement log, MySQL's slow log and `performance_schema` digests, read into one per-statement
table (`tiersim import pg-stat|pg-log|mysql-slow|mysql-digest`, docs/measurement-table.md)."""
