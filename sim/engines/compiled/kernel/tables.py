"""The state's tables, declared once: each table's name (its field of `state.State`, in
this order), element type, rows and columns, and the value of a fresh row.  The driver
(`sim.engines.compiled.engine`) allocates and grows the tables from it and builds the state
by name (`state.new_state`); the loop reads the columns by the constants of `layout`.

A new table is one `Table` here; its rows are a family the driver already sizes, or a new
family (`ROWS`) it learns to size and grow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.engines.compiled.kernel.layout import (
    BC_IDLE_ENTRY,
    BP_OPEN,
    CN_IDLE_ENTRY,
    N_BC,
    N_BCF,
    N_BF,
    N_BI,
    N_BN,
    N_BNF,
    N_BP,
    N_BPF,
    N_C,
    N_CF,
    N_CH,
    N_CN,
    N_CNF,
    N_CPF,
    N_CPI,
    N_F,
    N_I,
    N_JF,
    N_JI,
    N_JV,
    N_JVF,
    N_KF,
    N_POF,
    N_POI,
    N_RAMP,
    N_RATE,
    N_RF,
    N_RI,
    N_RP,
    N_STEP,
    N_STF,
    N_STI,
    N_UI,
    NO_KEY,
    STREAM_BLOCK,
)
from sim.random.streams import BLOCK

# What sizes a table's rows and what it grows with (`Table.rows`): the driver
# (`sim.engines.compiled.engine`) knows each family's count, and grows a family's tables
# together when the loop asks (GROW).
ROWS = {
    "scalars": "a 1-D table of its `columns` values",
    "plan": "laid out by the compiled plan (`sim.engines.compiled.plan.Plan`), copied",
    "calendar": "calendar entries",
    "requests": "request rows",
    "jobs": "job rows: request rows x levels",
    "cpus": "the plan's CPUs",
    "stations": "the plan's stations",
    "pools": "the plan's slot pools",
    "members": "the plan's balancer members",
    "users": "closed users, ab's loops, or live sessions",
    "streams": "the plan's random streams",
    "recorder": "the recorder's rows (batches and their boundaries)",
    "bins": "the histogram's bins",
    "columns": "the recorder's columns",
    "grid": "the checkpoint grid's points",
    "candidates": "the checkpoint grid's candidate window starts",
    "marks": "the checkpoint grid's completion marks",
    "connections": "the clients' connections to the front",
    "children": "httpd's children",
    "child_pools": "backend pools: children (or 1) x nodes",
    "backend_connections": "the front's connections to the nodes",
    "class_log": "class completions logged",
    "jvms": "the JVMs",
    "runs": "ab's runs, and one more",
    "token": "not a table: the driver's id for its callbacks (an int)",
}


@dataclass(frozen=True)
class Table:
    """One table of the state, a field of `state.State`: its element type, its rows (a family
    of `ROWS`), its columns (a count -- the `N_*` of its column constants -- the name of a
    size the driver knows, or None for a 1-D table) and the value of a fresh row, with
    columns of their own value (`fill_columns`).  A free-row stack (`free`) lists its
    family's free rows, the lowest on top."""

    name: str
    dtype: type
    rows: str
    columns: int | str | None = None
    fill: float = 0
    fill_columns: tuple[tuple[int, float], ...] = ()
    free: bool = False
    doc: str = ""

    def fresh(self, count: int, columns: int | None = None) -> np.ndarray:
        """`count` fresh rows, `columns` wide when the declaration names a size (a scalars
        table: its `columns` values; a free-row stack: rows `count - 1` down to 0)."""
        if self.free:
            return np.arange(count - 1, -1, -1, dtype=self.dtype)
        width = self.columns if isinstance(self.columns, int) else columns
        if self.rows == "scalars":
            assert width is not None
            shape: tuple[int, ...] = (width,)
        else:
            shape = (count,) if width is None else (count, width)
        table: np.ndarray = np.full(shape, self.fill, dtype=self.dtype)
        for column, value in self.fill_columns:
            table[:, column] = value
        return table

    def grown(self, table: np.ndarray, more: int) -> np.ndarray:
        """`table` with `more` fresh rows after its own (a free-row stack grows with the
        counter of its top: `sim.engines.compiled.engine`)."""
        assert not self.free
        columns = table.shape[1] if table.ndim == 2 else None
        return np.concatenate([table, self.fresh(more, columns)])


INT, FLOAT = np.int64, np.float64
TABLES = (
    Table("I", INT, "scalars", N_I, doc="int scalars (counters, sizes, flags): I_*"),
    Table("F", FLOAT, "scalars", N_F, doc="float scalars: F_*"),
    Table("C", INT, "plan", N_C, doc="int configuration: C_*"),
    Table("CF", FLOAT, "plan", N_CF, doc="float configuration: CF_*"),
    Table("HT", FLOAT, "calendar", doc="calendar: times"),
    Table("HS", INT, "calendar", doc="calendar: sequence numbers"),
    Table("HP", INT, "calendar", doc="calendar: payloads (argument * 32 + kind)"),
    Table("RI", INT, "requests", N_RI, doc="requests (int fields): R_*"),
    Table("RF", FLOAT, "requests", N_RF, doc="requests (float fields): RF_*"),
    Table("JI", INT, "jobs", N_JI, doc="jobs (int fields); job = request * levels + level"),
    Table("JF", FLOAT, "jobs", N_JF, doc="jobs (float fields): JF_*"),
    Table("STI", INT, "plan", N_STI, doc="stations (int): ST_*"),
    Table("STF", FLOAT, "stations", N_STF, doc="stations (float): STF_*"),
    Table("POI", INT, "plan", N_POI, doc="pools (int): PO_*"),
    Table("POF", FLOAT, "pools", N_POF, doc="pools (float): POF_*"),
    Table("CPI", INT, "plan", N_CPI, doc="CPUs (int): CP_*"),
    Table("CPF", FLOAT, "plan", N_CPF, doc="CPUs (float): CPF_*"),
    Table("CPH", INT, "cpus", "jobs", doc="CPUs: the shared regime's heap of jobs by tag"),
    Table("BI", INT, "plan", N_BI, doc="balancer members (int): B_*"),
    Table("BF", FLOAT, "members", N_BF, doc="balancer members (float): BF_*"),
    Table("UI", INT, "users", N_UI, fill=-1, doc="users (closed) or sessions: U_*"),
    Table("RFREE", INT, "requests", free=True, doc="stack of free request rows"),
    Table("UFREE", INT, "users", free=True, doc="stack of free session rows"),
    Table("DRAW", FLOAT, "streams", "block", doc="random numbers: one block per stream"),
    Table("DPOS", INT, "streams", fill=BLOCK, doc="next unused number of each block (BLOCK: none)"),
    Table("SKIND", INT, "streams", fill=STREAM_BLOCK, doc="stream kind: STREAM_*"),
    Table("SVAL", FLOAT, "streams", doc="the constant of a constant stream"),
    Table("ROWS", FLOAT, "recorder", "columns", doc="recorder snapshot rows"),
    Table("HROWS", INT, "recorder", "bins", doc="cumulative histogram at each row"),
    Table("HIST", INT, "bins", doc="cumulative histogram now"),
    Table("SCRATCH", INT, "jobs", doc="jobs leaving a CPU at one departure"),
    Table("CKF", FLOAT, "grid", 3, doc="checkpoint grid: (time, completed, response sum)"),
    Table("CKROWS", FLOAT, "candidates", "columns", doc="checkpoint grid: recorder rows"),
    Table("CKHIST", INT, "candidates", "bins", doc="checkpoint grid: cumulative histograms"),
    Table("MARKS", INT, "marks", doc="checkpoint grid of completions: its counts"),
    Table("RP", FLOAT, "plan", N_RP, doc="session replication: per tier (RP_*)"),
    Table("TSROW", FLOAT, "columns", doc="--timeseries: the recorder's row at the latest sample"),
    Table(
        "CN",
        INT,
        "connections",
        N_CN,
        fill_columns=((CN_IDLE_ENTRY, -1),),  # no calendar entry yet (`timer_arm`)
        doc="the clients' connections to the front (keep-alive): CN_*",
    ),
    Table("CNF", FLOAT, "connections", N_CNF, doc="... their KeepAliveTimeout (CNF_*)"),
    Table("CNFREE", INT, "connections", free=True, doc="stack of free connection rows"),
    Table("CH", INT, "children", N_CH, doc="httpd's children, when individuals: CH_*"),
    Table("CHFREE", INT, "children", free=True, doc="stack of free child rows"),
    Table(
        "BC",
        INT,
        "backend_connections",
        N_BC,
        fill_columns=((BC_IDLE_ENTRY, -1),),  # no calendar entry yet (`timer_arm`)
        doc="the front's connections to the backend nodes: BC_*",
    ),
    Table("BCF", FLOAT, "backend_connections", N_BCF, doc="... their times (BCF_*)"),
    Table("BCFREE", INT, "backend_connections", free=True, doc="free backend connection rows"),
    Table(
        "BP",
        INT,
        "child_pools",
        N_BP,
        fill=-1,
        fill_columns=((BP_OPEN, 0),),
        doc="backend pools: one per child (or one for the front) and node (BP_*)",
    ),
    Table("BN", INT, "plan", N_BN, doc="per backend node: its pool's settings, counters"),
    Table("BNF", FLOAT, "plan", N_BNF, doc="per backend node: its pool's timeouts"),
    Table("KST", INT, "plan", doc="per station: each class's burst stream and calls"),
    Table("KSTEP", INT, "plan", N_STEP, doc="a script's path: per step (STEP_*)"),
    Table("KF", FLOAT, "plan", N_KF, doc="per class: outcome counts, mix bound (K_*)"),
    Table("KLOG", FLOAT, "class_log", 2, doc="per class completion: (class, response time)"),
    Table("KROWS", INT, "recorder", doc="per recorder row: the class completions logged"),
    Table(
        "BPF",
        FLOAT,
        "child_pools",
        N_BPF,
        fill=-np.inf,  # never maintained: the first request runs mod_jk's maintenance
        doc="per backend pool: mod_jk's last maintenance of it",
    ),
    Table("TOKEN", INT, "token", doc="the driver's id for its callbacks"),
    Table("JV", INT, "plan", N_JV, doc="per JVM: its counters, flags and pause state"),
    Table("JVF", FLOAT, "plan", N_JVF, doc="per JVM: its sizes, costs and heap state"),
    Table("JSE", FLOAT, "jvms", "sessions", doc="per JVM: its sessions' expiry times"),
    Table("JH", INT, "plan", doc="per JVM: the JVMs that hold replicas of its sessions"),
    Table("JM", INT, "jvms", "keys", fill=-1, doc="per JVM: each key's place in JSE, or -1"),
    Table("JQK", INT, "jvms", "sessions", fill=NO_KEY, doc="per JVM: each place's key"),
    Table("BROWS", FLOAT, "runs", "columns", doc="ab run again: the recorder's rows"),
    Table("BHIST", INT, "runs", "bins", doc="... and the cumulative histograms there"),
    Table("RAMP", FLOAT, "plan", N_RAMP, doc="a closed ramp's changes, in calendar order"),
    Table("RATES", FLOAT, "plan", N_RATE, doc="an open schedule's steps (RATE_*)"),
)
TABLE = {table.name: table for table in TABLES}


def empty_state_sizes() -> dict[str, int]:
    """Field counts of each table whose columns are declared, by its name."""
    return {table.name: table.columns for table in TABLES if isinstance(table.columns, int)}
