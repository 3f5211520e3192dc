"""What the planner says differently of PostgreSQL's evidence and of MySQL's (InnoDB's): who
gets a hot row's lock next, what the statements' own time leaves out of the lock's hold, the
measurement that would split the database's own work, what would name the locking statement,
and how a run's files are named (`tiersim plan --database`, `sim.studies.database_plan`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Database:
    """The words of one database's evidence."""

    name: str
    # `[database.lock] order`: it sets the wait's tail, not its mean, so no figure of the
    # evidence could pin it; it is the database's mechanism
    lock_order: str
    order_why: str
    # what the lock's hold has beyond the statements' timed work ({ms}: their time per request)
    untimed: str
    # the measurement that would split the database's own work (CPU and flush) from the rest
    flush_measurement: str
    # what to import when nothing names the locking statement
    lock_evidence: str
    # `[database.lock] wake_per_waiter_s`: whether a release wakes every waiter of the row,
    # whose work then lengthens the new holder's section (None: it wakes only the next)
    waiters_cost: str | None = None


POSTGRES = Database(
    name="PostgreSQL",
    lock_order="random",
    order_why="PostgreSQL's waiters for a row every transaction updates race for its new "
    "version at each COMMIT (heap_update gives up the tuple lock on TM_Updated, EvalPlanQual "
    "re-locks the newest version)",
    untimed="the lock is held through the round trips and the commit's flush, which the "
    "statements' {ms} ms leave out",
    flush_measurement="the database host's sar and pg_stat_wal's wal_sync_time",
    lock_evidence="Import a heavier run's statistics, or PostgreSQL's log with log_lock_waits = on",
    waiters_cost="at each COMMIT PostgreSQL wakes the row's waiters one after another (each "
    "returns TM_Updated from heap_update, gives up its tuple lock and re-locks the newest "
    "version through EvalPlanQual), work on the cores the new holder needs",
)
MYSQL = Database(
    name="MySQL",
    lock_order="fifo",
    order_why="InnoDB grants a record's lock waiters in the order of its lock queue (MySQL "
    "8.0.20+'s CATS ranks them by the transactions each blocks, the longest waiting first "
    "among equals, as a hot row's updaters are)",
    # the digest table and the slow log time the COMMIT statement, its redo log write and
    # fsync (innodb_flush_log_at_trx_commit = 1) included: only the client's round trips
    # between the statements are left out
    untimed="the lock is held through the client's round trips between the statements, which "
    "the statements' {ms} ms leave out; those hold the COMMIT, its redo log flush included",
    flush_measurement="the database host's sar and performance_schema."
    "file_summary_by_event_name's wait/io/file/innodb/innodb_log_file (the redo log's "
    "writes and fsyncs)",
    # neither MySQL file counts row-lock waits (the slow log's Lock_time is the table and
    # metadata locks' before MySQL 8.0.28, and no count): only the growth names the statement
    lock_evidence="Import a heavier run's digest snapshots or slow log (MySQL's files count no "
    "row-lock waits: the locking statement is the one whose time per call grows)",
)
DATABASES = {
    "pg_stat_statements": POSTGRES,
    "postgres_log": POSTGRES,
    "mysql_digest": MYSQL,
    "mysql_slow_log": MYSQL,
}
# how `tiersim import` names a run's files of each source (`run_of`: up to the first dot)
FILES = {
    "pg_stat_statements": "{run}.before.csv and {run}.after.csv",
    "postgres_log": "{run}.postgresql.log",
    "mysql_digest": "{run}.before.tsv and {run}.after.tsv",
    "mysql_slow_log": "{run}.slow.log",
}


def database_of(source: str) -> Database:
    """The database whose file `source` (a `source` of the evidence table) is."""
    return DATABASES[source]


def files_of(sources: list[str], run: str) -> str:
    """The names a run's files of these sources have, for a message: 'users20.before.csv and
    users20.after.csv'."""
    named = [FILES[s].format(run=run) for s in FILES if s in sources]
    return ", or ".join(named) or FILES["pg_stat_statements"].format(run=run)
