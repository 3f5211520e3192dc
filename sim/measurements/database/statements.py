"""One statement's counts over one run, whatever database file they came from, and the text
normalisation that lets a logged statement (with its literals) meet its `pg_stat_statements`
entry (with `$1`, `$2`)."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass
class StatementRun:
    """A statement's work in one run, in seconds.

    `calls` and `total_time_s` count every execution in the run when `complete`; a statement
    log cut by a threshold (`log_min_duration_statement` > 0, MySQL's `long_query_time`) holds
    only the slow ones, and says so. Lock waits are NaN where the source does not record them."""

    run: str
    source: str  # pg_stat_statements, postgres_log, mysql_slow_log, mysql_digest
    statement_id: str  # the database's own id (queryid, digest) or text:<hash of the text>
    statement: str  # normalised: literals as $1, $2 ... (pg_stat_statements' form)
    calls: float
    total_time_s: float
    rows: float = math.nan
    lock_waits: float = math.nan
    lock_wait_s: float = math.nan
    complete: bool | None = True  # None: the file cannot tell whether every call is in it
    note: str = ""  # what is missing from this statement's evidence, and why


_STRING = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w$.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_PLACEHOLDER = re.compile(r"\$\d+|\?")
_SPACE = re.compile(r"\s+")


def normalise(sql: str) -> str:
    """The statement with its literals as `$1`, `$2` ..., whitespace collapsed, no trailing
    semicolon: `UPDATE t SET n = n + 1 WHERE id = 7;` -> `UPDATE t SET n = n + $1 WHERE id = $2`,
    the form `pg_stat_statements.query` stores (MySQL's `?` placeholders become `$n` too)."""
    text = _SPACE.sub(" ", sql).strip().rstrip(";").rstrip()
    text = _STRING.sub("\0", text)
    text = _NUMBER.sub("\0", text)
    text = _PLACEHOLDER.sub("\0", text)
    parts = text.split("\0")
    return "".join(part + (f"${i}" if i < len(parts) else "") for i, part in enumerate(parts, 1))


def text_id(statement: str) -> str:
    """An id for a statement that its source does not number (a stderr statement log)."""
    return "text:" + hashlib.sha1(statement.encode()).hexdigest()[:16]


def run_of(path: str | Path) -> str:
    """A database file's run: its name up to the first dot (`users20.before.csv`,
    `users20.postgresql.log.gz` and `users20.slow.log` are run `users20`, the run of
    `users20.jtl`)."""
    return Path(path).name.split(".", 1)[0]
