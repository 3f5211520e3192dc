"""The compiled event loop: the queueing core of tiersim as numba functions over flat arrays.

It simulates the same network as the reference engine (`sim.tiers.station`, `sim.kernel`) and
follows it step by step: the same calendar order (time, then scheduling order), the same
processor-sharing CPU with its two exact regimes, the same FIFO slot pools (Apache
`MaxClients` with `ListenBacklog`, Tomcat `maxThreads` with `acceptCount`, a JDBC pool, the
database's connections and disks), the same client life cycle (timeouts, retries, SYN
retransmission) and the same recorder (batch rows, cumulative log-binned histogram).  Given
the same random numbers it computes the same trajectory; `sim.engines.compiled.engine`
feeds it the reference's own streams, block by block.

Why one module: numba's on-disk cache (`cache=True`) checks only the source file of the
function it loads, not the files of the functions it calls, so a helper split into another
module could be edited without the cached caller noticing.  Everything compiled lives here.

State is a `State` struct of arrays (`STATE_FIELDS`); rows of the 2-D arrays are entities (requests,
jobs = one request's visit at one level of the stack, stations, pools, CPUs, balancer
members, users or sessions) and columns are their fields (constants below).  A calendar
entry is (time, sequence number, payload = argument * 32 + kind); a cancelled entry stays in
the heap and is recognised as stale by its sequence number when it comes due, as the
reference's `Wakeup.cancel` is lazy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, objmode
from numba.core import types
from numba.core.datamodel import models
from numba.core.datamodel.registry import register_default
from numba.experimental import structref
from numba.extending import intrinsic, register_model


# --------------------------------------------------------------------------- the state
class BorrowedArray(types.Array):
    """An array the compiled loop borrows from the driver, which holds it for the whole call:
    numba keeps no reference count on it (see `BorrowedArrayModel`)."""

    def __init__(self, dtype, ndim, layout):
        super().__init__(dtype, ndim, layout, name=f"borrowed({dtype}, {ndim}d, {layout})")

    @property
    def key(self):
        return (*super().key, "borrowed")

    def __repr__(self) -> str:
        # the state's type is named (and interned) by its fields' reprs: an array's repr
        # would make the borrowed state the same type as the driver's
        return f"BorrowedArray({self.dtype!r}, {self.ndim}, {self.layout!r})"


@register_model(BorrowedArray)
class BorrowedArrayModel(models.ArrayModel):
    """An array's layout without its memory manager among the members numba traverses for
    reference counting: loading a table from the state or passing it to a function costs no
    atomic increment and decrement (about half of the loop's time before)."""

    def traverse(self, builder):
        return [
            (member, getter)
            for member, getter in super().traverse(builder)
            if not isinstance(member, types.MemInfoPointer)
        ]


@structref.register
class StateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class BorrowedStateType(types.StructRef):
    """The state as the loop and every function it calls see it: the driver's struct, with no
    reference counting (see `BorrowedStateModel`)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@register_default(BorrowedStateType)
class BorrowedStateModel(models.StructRefModel):
    """A struct reference whose memory manager numba does not traverse: passing the state to
    a function costs no atomic increment and decrement (a third of the loop's time before,
    once the arrays were borrowed).  `run_events` holds the struct for the whole call."""

    def traverse(self, builder):
        return [
            (member, getter)
            for member, getter in super().traverse(builder)
            if not isinstance(member, types.MemInfoPointer)
        ]


structref.define_attributes(BorrowedStateType)


class State(structref.StructRefProxy):
    """The tables of one replication, passed to the compiled functions by reference (a tuple
    of 32 arrays would be flattened into some 300 arguments at every call)."""


STATE_FIELDS = (
    "I",  # int64 scalars (counters, sizes, flags)
    "F",  # float64 scalars
    "C",  # int64 configuration
    "CF",  # float64 configuration
    "HT",  # calendar: times
    "HS",  # calendar: sequence numbers
    "HP",  # calendar: payloads
    "RI",  # requests (int fields)
    "RF",  # requests (float fields)
    "JI",  # jobs (int fields); job = request * levels + level
    "JF",  # jobs (float fields)
    "STI",  # stations (int)
    "STF",  # stations (float)
    "POI",  # pools (int)
    "POF",  # pools (float)
    "CPI",  # CPUs (int)
    "CPF",  # CPUs (float)
    "CPH",  # CPUs: the shared regime's heap of jobs by finishing tag
    "BI",  # balancer members (int)
    "BF",  # balancer members (float)
    "UI",  # users (closed) or sessions: route, requests left
    "RFREE",  # stack of free request rows
    "UFREE",  # stack of free session rows
    "DRAW",  # random numbers: one block per stream
    "DPOS",  # next unused number of each block
    "SKIND",  # stream kind: 0 drawn in blocks, 1 constant
    "SVAL",  # the constant of a constant stream
    "ROWS",  # recorder snapshot rows
    "HROWS",  # cumulative histogram at each row
    "HIST",  # cumulative histogram now
    "SCRATCH",  # jobs leaving a CPU at one departure
    "CKF",  # checkpoint grid: (time, completed, summed response) at each point
    "CKROWS",  # checkpoint grid: full recorder rows at the candidate window starts
    "CKHIST",  # checkpoint grid: cumulative histograms at the candidate window starts
    "MARKS",  # checkpoint grid of completions: the completion counts of its points
    "RP",  # session replication: per replicated tier, its settings and counters
    "TSROW",  # --timeseries: the recorder's row at the latest sample
    "CN",  # the clients' connections to the front (keep-alive): their state
    "CNF",  # the clients' connections: their KeepAliveTimeout's deadlines (`_timer_arm`)
    "CNFREE",  # stack of free connection rows
    "CH",  # httpd's children, when they are individuals
    "CHFREE",  # stack of free child rows
    "BC",  # the front's connections to the backend nodes (backend pools): their state
    "BCF",  # ... when each last went back to its pool (ttl)
    "BCFREE",  # stack of free backend connection rows
    "BP",  # backend pools: one per child (or one for the front) and node
    "BN",  # per backend node: its pool's settings and probe counters
    "BNF",  # per backend node: its pool's timeouts (negative: none)
    # request classes and session scripts (see their section below)
    "KST",  # per station: each class's burst stream, then each class's downstream calls
    "KSTEP",  # a script's path: per step, its class and its think time's stream
    "KF",  # per class: its outcome counts (OUTCOMES), its mix bound, whether it writes
    "KLOG",  # per class completion, in order: (class, response time), binned by the driver
    "KROWS",  # per recorder row: the class completions logged when it was taken
    "BPF",  # per backend pool: mod_jk's last maintenance of it (`JkBackendPool.maintained`)
    "TOKEN",  # the driver's id for refilling random blocks
    # the JVMs (`sim.tiers.appserver.jvm`) and ab run again (`clients.repeat`)
    "JV",  # per JVM: its counters, flags and pause state (JV_*)
    "JVF",  # per JVM: its sizes, costs and heap state (JVF_*)
    "JSE",  # per JVM: the expiry times of the sessions it holds, least recently accessed first
    "JH",  # per JVM: the JVMs that hold replicas of its sessions
    "JM",  # per JVM, with cookies: each key's session (its place in JSE), or -1
    "JQK",  # per JVM: the key of each place in JSE (NO_KEY, or DEAD once moved on)
    "BROWS",  # ab run again: the recorder's row at the start and at the end of each run
    "BHIST",  # ... and the cumulative histogram there
)
structref.define_proxy(State, StateType, list(STATE_FIELDS))


@njit(cache=True)
def new_state(*tables):
    """A `State` of these tables (in `STATE_FIELDS` order), built by cached machine code:
    calling `State(...)` from Python compiles numba's constructor afresh in every process
    (about a second, longer than the whole of a small run)."""
    return State(*tables)


# int scalars
(
    I_HEAP_N,
    I_SEQ,
    I_STOP,
    I_COMPLETED,
    I_ARRIVED,
    I_TIMED_OUT,
    I_ERRORS,
    I_FAILED,
    I_RETRIED,
    I_LATE,
    I_SYN,
    I_IN_FLIGHT,
    I_RECORDING,
    I_BATCH,
    I_PENDING,
    I_NROWS,
    I_STOP_AT,
    I_STOP_AFTER,
    I_RFREE_TOP,
    I_REQ_USED,
    I_UFREE_TOP,
    I_USR_USED,
    I_GENERATED,
    I_SESS_STARTED,
    I_SESS_ENDED,
    I_RR_NEXT,
    I_SESS_CREATED,
    I_SESS_LOST,
    I_STARTED,
    I_RUNAWAY,
    I_THINKING,
    I_EVENTS,
    I_CK_N,
    I_MARK_NEXT,
    I_FINISHED,
    I_USERS_DONE,
    I_OUTCOMES,
    I_ISSUED,
    I_AB_HEAD,
    I_AB_WAITING,
    I_FRONT_OPENED,
    I_FRONT_CLOSED,
    I_FRONT_OPEN,
    I_FRONT_503,
    I_STOP_ON_CLOSE,
    I_FRONT_AFTER_ERROR,
    I_CN_FREE_TOP,
    I_CN_USED,
    I_CH_HEAD,  # the accept line: children waiting in accept(), oldest first
    I_CH_TAIL,
    I_CH_NUMBER,  # the next child's number (fork order)
    I_CH_FREE_TOP,
    I_CH_PRESENT,  # children not yet exited
    I_CH_ROWS,  # rows ever used (the present children are among them)
    I_FRONT_NO_WORKER,  # event: a request on an idle connection found no worker in its child
    I_SPAWN_RATE,  # httpd's process management: children forked at the next tick
    I_HOLD_OFF,  # forking ticks left at rate 1 after a graceful restart
    I_BC_FREE_TOP,
    I_BC_USED,
    I_FRONT_502,  # error responses with status 502 (mod_proxy_http's read timeout)
    I_UNSUPPORTED,  # a refusal where the engine cannot answer it (see `_bp_unanswerable`)
    I_KLOG_N,  # request classes: completions logged in KLOG
    I_FRONT_504,  # error responses with status 504 (mod_jk's reply timeout)
    I_AB_BATCH,  # ab run again: the run under way (1-based)
    I_AB_MARKS,  # ab run again: rows taken in BROWS
    N_I,
) = range(66)

# float scalars
F_NOW, F_RESPONSE_SUM, F_UNTIL, F_FINISHED_AT, F_LAST_CLOSE, N_F = range(6)

# int configuration
(
    C_LEVELS,
    C_N_STATIONS,
    C_N_POOLS,
    C_N_CPUS,
    C_N_MEMBERS,
    C_CLIENT,
    C_USERS,
    C_HAS_TIMEOUT,
    C_MAX_RETRIES,
    C_RETRY_ON_TIMEOUT,
    C_RETRY_ON_ERROR,
    C_SYN_RETRIES,
    C_ST_THINK,
    C_ST_ARRIVALS,
    C_ST_CONNECT,
    C_ST_LENGTH,
    C_ST_BALANCER,
    C_ENTRY_KIND,
    C_ENTRY_TARGET,
    C_POLICY,
    C_STICKY,
    C_KEEPS_SESSIONS,
    C_MAX_INSIDE,
    C_MAX_BATCHES,
    C_N_BINS,
    C_FIXED_LENGTH,
    C_HAS_DISPATCHER,
    C_MAX_CORES,
    C_WARMUP,
    C_GRID,
    C_CELLS,
    C_CANDIDATES,
    C_PER_USER,
    C_TOTAL,
    C_FRONT,
    C_N_TIERS,
    C_N_NODES,
    C_NET_TX0,
    C_NET_RX0,
    C_NET_SWITCHED,
    C_MULTICAST,
    C_SAMPLE,
    C_CLIENT_KEEP_ALIVE,  # clients.keep_alive
    C_PROXY_KEEP_ALIVE,  # Apache KeepAlive
    C_MAX_KA_REQUESTS,  # Apache MaxKeepAliveRequests (0: unlimited)
    C_LISTENER_IDLE,  # event: the listener, not a worker, holds idle connections
    C_ST_CONN_DEMAND,  # proxy.connection_demand's stream, or -1
    C_CHILDREN,  # httpd's children as individuals
    C_THREADS_PER_CHILD,  # ThreadsPerChild (1 for prefork)
    C_ASYNC_FACTOR,  # event: AsyncRequestWorkerFactor's whole part; 0: no connection limit
    C_START_CHILDREN,  # children at the start
    C_MANAGED,  # httpd's process management (StartServers given): the parent's tick
    C_MAX_CHILDREN,  # scoreboard slots (ap_daemons_limit)
    C_MIN_SPARE,  # MinSpareServers (prefork) or MinSpareThreads
    C_MAX_SPARE,  # MaxSpareServers (prefork) or MaxSpareThreads
    C_SPARE_CHILDREN,  # prefork: the parent counts idle children, not idle threads
    C_DISABLE_REUSE,  # mod_proxy disablereuse=On: a backend connection per request
    C_READ_STATUS,  # the status of a backend read timeout (502 http, 503 ajp)
    C_BACKEND_POOLS,  # the front reaches some node through a pool of connections
    C_CLASSES,  # request classes: how many (0: the one implicit class)
    C_CLASS_CHOICE,  # CHOICE_*: how the clients pick a request's class
    C_ST_MIX,  # clients.mix's uniform stream (mix_by = "request"), or -1
    C_PATH_LEN,  # a session script's path: its number of steps
    # the load generator's CPU (clients.host; see its section below)
    C_HOST_STATION,  # the station row that holds its CPU, or -1: no clients.host
    C_ST_HOST_DEMAND,  # clients.host.demand's stream
    C_ST_HOST_CONNECTION,  # clients.host.connection_demand's stream, or -1
    C_MOD_JK,  # the backend pools are mod_jk's ajp13 workers (`sim.tiers.proxy.mod_jk`)
    C_REPEAT,  # ab run again: clients.repeat
    C_N_JVMS,  # JVMs modelled (backends.N.jvm)
    C_JVM_COOKIES,  # the clients keep cookies: a JVM's sessions have keys (user, node)
    N_C,
) = range(71)

# float configuration
(
    CF_TIMEOUT,
    CF_BACKOFF,
    CF_MULTIPLIER,
    CF_MAX_BACKOFF,
    CF_RTO,
    CF_BIN_MIN,
    CF_BIN_LOG_GROWTH,
    CF_WARMUP_S,
    CF_GRID_STEP,
    CF_NET_S_PER_BYTE,
    CF_NET_LATENCY,
    CF_SAMPLE_INTERVAL,
    CF_KA_TIMEOUT,  # Apache KeepAliveTimeout
    CF_LINGER_HOLD,  # how long a lingering close holds a worker (0: not at all)
    CF_UPTIME,  # proxy.uptime_s: how long httpd ran before the load (its clock's phase)
    N_CF,
) = range(16)

# stations
(
    ST_POOL,
    ST_CPU,
    ST_BURST,
    ST_IO,
    ST_CALLS,
    ST_DOWN,
    ST_TARGET,
    ST_JDBC,
    ST_DISK_POOL,
    ST_DISK_STREAM,
    ST_ACCEPTS,
    ST_VISITS,
    ST_FAILED,
    ST_IN_PROGRESS,
    ST_NODE,
    ST_JVM,  # the node's JVM (a JV row), or -1
    N_STI,
) = range(17)
STF_WAIT, STF_RESIDENCE, STF_DOWNSTREAM, N_STF = range(4)

# pools
(
    PO_CAPACITY,
    PO_QUEUE_LIMIT,
    PO_IN_USE,
    PO_WAITING,
    PO_ACQUIRED,
    PO_REFUSED,
    PO_HEAD,
    PO_TAIL,
    PO_ROLE,
    N_POI,
) = range(10)
POF_BUSY, POF_QUEUE, POF_WAIT, N_POF = range(4)

# CPUs
(
    CP_CORES,
    CP_DEDICATED,
    CP_N,
    CP_UNSHARED,
    CP_HEAP_N,
    CP_SEQ,
    CP_WAKEUP,
    CP_COMPLETED,
    CP_RUN_HEAD,
    CP_RUN_TAIL,
    CP_JVM,  # the JVM whose collections pause this CPU (a JV row), or -1
    N_CPI,
) = range(12)
(
    CPF_SPEED,
    CPF_VIRTUAL,
    CPF_RATE,
    CPF_LAST,
    CPF_BUSY,
    CPF_JOBS,
    CPF_SIGNED,
    N_CPF,
) = range(8)

# jobs
(
    J_STATION,
    J_CALLS_LEFT,
    J_VIA_MEMBER,
    J_VIA_POOL,
    J_BURST_SEQ,
    J_TAG_SEQ,
    J_PREV,
    J_NEXT,
    J_WAIT_NEXT,
    J_PHASE,
    J_OWNER,
    J_PEER,
    J_LINK,
    J_REP_TIER,
    J_REP_LEFT,
    J_PENDING,
    J_BCONN,  # the backend connection the visit came on (or waits to bind), or -1
    J_BTIMER,  # mod_proxy `acquire`: the pending timer of a request waiting for a connection
    J_BPOOL,  # the backend pool (child and node) the request takes its connection from
    J_BW_PREV,  # the pool's waiting requests (FIFO)
    J_BW_NEXT,
    # mod_jk: the request's `JkCall` on its call job (the job at the node's level)
    J_JK_ATTEMPT,  # the attempt under way (the first is 1)
    J_JK_ENDPOINT,  # its endpoint's connection (a BC row)
    J_JK_VISIT,  # the node's visit of the attempt under way (a carrier's job), or -1
    J_JK_TIMER,  # the reply timeout's sequence number, or -1
    J_JK_LOOKS,  # times it looked for a free endpoint
    J_JK_SYNS,  # SYNs retransmitted by the connect under way
    N_JI,
) = range(28)
(
    JF_ARRIVED,
    JF_STARTED,
    JF_DOWNSTREAM,
    JF_CALL_STARTED,
    JF_FINISH,
    JF_TAG,
    JF_WAIT_SINCE,
    JF_REP_STARTED,
    JF_TX_S,
    JF_JK_CONNECT_AT,  # mod_jk: when the connect under way started
    N_JF,
) = range(11)

# requests
# R_STATUS: the HTTP status of an error response, set where it arose (0: none, 503 at the front)
# R_CLASS: its request class (-1 until the clients pick it at the first attempt)
# R_JK_CALL, R_JK_ABANDONED: a mod_jk carrier's call job, and whether mod_jk gave up on its visit
(
    R_STATE,
    R_USER,
    R_ATTEMPT,
    R_SYN,
    R_TIMER,
    R_CONN,
    R_CHILD,
    R_STATUS,
    R_CLASS,
    R_JK_CALL,
    R_JK_ABANDONED,
    N_RI,
) = range(12)
RF_SENT, N_RF = range(2)

# balancer members
B_STATION, B_DISPATCHED, B_OUTSTANDING, N_BI = range(4)
BF_WEIGHT, BF_LBSTATUS, N_BF = range(3)

# users / sessions
# a session's row lives while the session or a request of it does (U_REFS): a request its
# client abandoned may reach the balancer after the session ended, and must find the ended
# session's (forgotten) route, not a new session's
# U_STEP: a closed user's or ab loop's next step of its script's path (-1: a new path)
U_ROUTE, U_REMAINING, U_SENT, U_CONN, U_REFS, U_STEP, N_UI = range(7)

# client connections (`sim.tiers.proxy.client_connections.Connection`): a row lives while a
# user, a request or a pending KeepAliveTimeout refers to it (CN_REFS)
(
    CN_OPEN,
    CN_HOLDS,
    CN_REQUESTS,
    CN_IDLE_SEQ,
    CN_CLIENT_CLOSED,
    CN_REFS,
    CN_CHILD,  # the child that accepted it
    CN_KEPT,  # event: idle, held by its child's listener (`Child.keep_alive`)
    CN_IDLE_ENTRY,  # the calendar entry that stands for its KeepAliveTimeout (`_timer_arm`)
    N_CN,
) = range(10)
CNF_IDLE_AT, CNF_ENTRY_AT, N_CNF = range(3)

# httpd's children (`sim.tiers.proxy.children.Child`); a row is free again once its child exited
(
    CH_NUMBER,
    CH_BUSY,
    CH_CONNECTIONS,
    CH_DISABLED,
    CH_EXITING,
    CH_PRESENT,
    CH_PREV,  # the accept line's links
    CH_NEXT,
    CH_IN_LINE,
    N_CH,
) = range(10)

# the front's connections to a backend node (`sim.tiers.proxy.backend_pool.BackendConnection`);
# a row is free again once the connection is closed or forgotten
(
    BC_POOL,  # its child's pool (a BP row)
    BC_NODE,
    BC_THREAD,  # bound: the node accepted it onto what it pins (a slot, a thread)
    BC_IDLE_SEQ,  # the node's idle timeout while it waits in its pool, or -1
    BC_READ_SEQ,  # the front's read timeout while it waits for the node to accept it, or -1
    BC_JOB,  # the visit waiting for it to be accepted, or -1
    BC_PREV,  # its pool's idle list (LIFO: apr_reslist)
    BC_NEXT,
    BC_IDLE_ENTRY,  # the calendar entry that stands for its idle timeout (`_timer_arm`)
    N_BC,
) = range(10)
BCF_RELEASED, BCF_IDLE_AT, BCF_ENTRY_AT, N_BCF = range(4)
# a child's pool of connections to one node (`backend_pool.ChildPool`)
BP_OPEN, BP_IDLE_HEAD, BP_IDLE_TAIL, BP_WAIT_HEAD, BP_WAIT_TAIL, N_BP = range(6)
# per node: its pool's settings, and `BackendPool`'s probe counters
(
    BN_POOLED,  # the front reaches the node through a pool of connections
    BN_PINS,  # the pool of what a connection pins on the node (a POI row), or -1
    BN_MAX,  # connections per pool (mod_proxy max), or -1: unbounded
    BN_OPEN,
    BN_IDLE,
    BN_WAITERS,
    BN_READ_TIMEOUTS,
    BN_ACQUIRE_TIMEOUTS,
    BN_IDLE_CLOSES,
    BN_TTL_CLOSES,
    BN_EXIT_CLOSES,
    # mod_jk's ajp13 worker (`JkBackendPool`, `JkWorker`): settings, then probe counters
    BN_JK_MIN_SIZE,  # connection_pool_minsize: (connection_pool_size + 1) / 2
    BN_JK_RETRIES,  # retries: attempts, the first included
    BN_JK_RECOVERABLE,  # recovery_options: a request whose reply timed out may be retried
    BN_JK_ATTEMPTS,
    BN_JK_REPLY_TIMEOUTS,
    BN_JK_CONNECT_FAILURES,
    BN_JK_ABANDONED,
    BN_JK_ABANDONED_SERVED,
    N_BN,
) = range(20)
(
    BNF_TTL,
    BNF_ACQUIRE,
    BNF_READ,
    BNF_IDLE,
    BNF_JK_POLL,  # mod_jk: JK_SLEEP_DEF between looks for a free endpoint
    BNF_JK_POOL_TIMEOUT,  # connection_pool_timeout, applied by the maintenance
    BNF_JK_MAINTAIN,  # worker.maintain
    BNF_JK_REPLY,  # reply_timeout
    BNF_JK_CONNECT,  # when a connect with dropped SYNs gives up (socket_connect_timeout)
    BNF_JK_RETRY_INTERVAL,  # retry_interval
    BNF_JK_SYN_RTO,  # the front host's first SYN retransmission (TCP_TIMEOUT_INIT)
    BNF_JK_SYN_RETRIES,  # its tcp_syn_retries
    N_BNF,
) = range(13)
BPF_JK_MAINTAINED, N_BPF = range(2)

# kinds and codes
CLIENT_CLOSED, CLIENT_OPEN, CLIENT_SESSIONS, CLIENT_AB = range(4)
ENTRY_STATION, ENTRY_BALANCER = range(2)
DOWN_NONE, DOWN_STATION, DOWN_BALANCER = range(3)
POLICY_ROUND_ROBIN, POLICY_RANDOM, POLICY_BYREQUESTS, POLICY_STATIC = range(4)
# the load-aware policies (`_pick_by_load`)
POLICY_SQF, POLICY_LEAST_OUTSTANDING = range(4, 6)
ROLE_STATION, ROLE_JDBC, ROLE_DISK, ROLE_LINK, ROLE_PIN = range(5)

# session replication (`sim.tiers.cluster.session_replication`, synchronous): a tier's row
(
    RP_FRACTION,
    RP_INVOCATIONS,
    RP_BYTES,
    RP_SERIALIZE_S,
    RP_APPLY_S,
    RP_ACK_BYTES,
    RP_STREAM,
    RP_BUDDIES,  # 0: every other node holds a copy
    RP_REPLICATED,
    RP_BYTES_SENT,
    RP_WAIT_SUM,
    RP_CREDIT_WAITS,
    RP_WEB,  # 1 for the web tier (HTTP sessions, which the balancer's session table follows)
    N_RP,
) = range(14)
# what a job row is doing: a visit, or replication work (jobs of rows taken for it alone)
(
    PHASE_VISIT,
    PHASE_SERIALIZE,  # the visit's thread serializes its session on its node's CPU
    PHASE_APPLY,  # a receiver applies a message on its CPU
    FRAME_OUT,  # a message on its sender's outgoing link (or the shared segment)
    FRAME_IN,  # ... on a receiver's incoming link
    FRAME_ACK_OUT,  # an acknowledgement on the receiver's outgoing link
    FRAME_ACK_IN,  # ... on the sender's incoming link (or the segment)
) = range(7)
PHASE_CLIENT = 7  # the request's work on the load generator's CPU, before it is sent
WARMUP_FROM_START, WARMUP_FIXED = range(2)
GRID_NONE, GRID_TIME, GRID_REQUESTS = range(3)
GRANTED, QUEUED, REFUSED = range(3)
REPLY_FAIL, REPLY_OK, REPLY_REFUSED = range(3)
# CARRIER: a row that carries one mod_jk attempt's visit to a node (`_jk_carrier`)
FREE, IN_FLIGHT, ANSWERED, ABANDONED, PENDING, CARRIER = range(6)
STREAM_BLOCK, STREAM_CONSTANT = range(2)
(
    EV_BURST,
    EV_DEDICATED_BURST,
    EV_DEPART,
    EV_IO,
    EV_DISK,
    EV_THINK,
    EV_ARRIVAL,
    EV_TIMEOUT,
    EV_RESEND,
    EV_SYN,
    EV_CONNECTED,
    EV_SESSION_ARRIVAL,
    EV_SESSION_THINK,
    EV_WARMUP,
    EV_CHECKPOINT,
    EV_STOP,
    EV_LINK_SENT,
    EV_LINK_ARRIVED,
    EV_SAMPLE,
    EV_IDLE,  # KeepAliveTimeout of an idle connection
    EV_LINGER,  # a lingering close lets its worker go
    EV_MAINTAIN,  # httpd's parent: once a second, fork or stop children
    EV_BACKEND_IDLE,  # the node's idle timeout of a pooled connection
    EV_ACQUIRE,  # mod_proxy `acquire`: a request waited too long for a connection
    EV_READ,  # the front's read timeout: the node never accepted the connection
    EV_MOD_JK,  # mod_jk's timers, their kind in the argument's low bits (`_jk_event`)
    EV_CPU_RESUME,  # a JVM's stop-the-world pause ends: its CPU's bursts go on
    EV_JVM_RESUME,  # a request held through the collection it triggered goes on
    EV_SWEEP,  # a JVM's session manager expires sessions
) = range(29)
KIND_BITS = 5
KIND_MASK = 31

DONE, GROW, RUNAWAY, UNSUPPORTED = range(4)
NEVER = 2**62
EPS = 1e-12  # the reference CPU's tolerance for departures due at the same virtual time

# The driver's refill callbacks, by token: refill(stream) overwrites that stream's block.
REFILLS: dict = {}
# The driver's --timeseries callbacks, by token: sample(first) reads the row in TSROW.
SAMPLERS: dict = {}
# The driver's session scripts with a Markov chain, by token: the reference's `ScriptChoice`
# over the steps (its classes are the step numbers), drawing each path from its own stream.
SCRIPTS: dict = {}


def refill_stream(token: int, stream: int) -> None:
    REFILLS[token](stream)


def emit_sample(token: int, first: int) -> None:
    SAMPLERS[token](first)


def script_choose(token: int, user: int) -> int:
    return SCRIPTS[token].choose(user)


def script_begin(token: int, session: int) -> int:
    return SCRIPTS[token].begin(session)


# --------------------------------------------------------------------------- random numbers
@njit(cache=True)
def _refill(token, stream):
    with objmode():
        refill_stream(token, stream)


@njit(cache=True)
def _sample(S, first):
    """--timeseries (`sim.engines.reference.replication._sample_periodically`): the recorder's row now,
    handed to the driver, which turns the window since the last sample into metrics."""
    _snapshot(S, S.TSROW)
    token = S.TOKEN
    with objmode():
        emit_sample(token, first)


@njit(cache=True)
def draw(S, stream):
    if S.SKIND[stream] == STREAM_CONSTANT:
        return S.SVAL[stream]
    position = S.DPOS
    p = position[stream]
    block = S.DRAW
    if p >= block.shape[1]:
        _refill(S.TOKEN, stream)
        p = 0
    position[stream] = p + 1
    return block[stream, p]


# --------------------------------------------------------------------------- calendar
@njit(cache=True)
def _before(ta, sa, tb, sb):
    return ta < tb or (ta == tb and sa < sb)


@njit(cache=True)
def _calendar_siftdown(ht, hs, hp, start, pos):
    t, s, p = ht[pos], hs[pos], hp[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if _before(t, s, ht[parent], hs[parent]):
            ht[pos], hs[pos], hp[pos] = ht[parent], hs[parent], hp[parent]
            pos = parent
            continue
        break
    ht[pos], hs[pos], hp[pos] = t, s, p


@njit(cache=True)
def _calendar_siftup(ht, hs, hp, n, pos):
    start = pos
    t, s, p = ht[pos], hs[pos], hp[pos]
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _before(ht[child], hs[child], ht[right], hs[right]):
            child = right
        ht[pos], hs[pos], hp[pos] = ht[child], hs[child], hp[child]
        pos = child
        child = 2 * pos + 1
    ht[pos], hs[pos], hp[pos] = t, s, p
    _calendar_siftdown(ht, hs, hp, start, pos)


@njit(cache=True)
def push(S, time, kind, arg):
    """Schedule an event; returns its sequence number (its identity, for lazy cancelling)."""
    counters = S.I
    seq = counters[I_SEQ]
    counters[I_SEQ] = seq + 1
    _push_at(S, time, seq, kind, arg)
    return seq


# Idle timeouts (KeepAliveTimeout, a node's idle timeout of a pooled connection) are armed at
# every response and cancelled at the next request, nearly always long before they expire.
# Scheduling each would fill the calendar with cancelled entries that come due later; instead
# a row keeps at most one entry, at or before its armed deadline.  Arming takes the sequence
# number the reference's `after` would take; when the entry comes due and the timer has been
# armed again since, it goes back into the calendar at the armed deadline with the armed
# sequence number -- the place the reference's own entry has -- so every live event comes due
# in the reference's order.
@njit(cache=True)
def _timer_arm(S, rows, times, r, seq_col, entry_col, at_col, entry_at_col, deadline, kind):
    """Arm row r's timer for `deadline`; returns its sequence number (-1 cancels it)."""
    counters = S.I
    seq = counters[I_SEQ]
    counters[I_SEQ] = seq + 1
    rows[r, seq_col] = seq
    times[r, at_col] = deadline
    if rows[r, entry_col] < 0 or times[r, entry_at_col] > deadline:
        # no entry yet, or a former occupant's that is due later: a new one (the other,
        # no longer the row's, is dropped when it comes due)
        _push_at(S, deadline, seq, kind, r)
        rows[r, entry_col] = seq
        times[r, entry_at_col] = deadline
    return seq


@njit(cache=True)
def _timer_due(S, rows, times, r, seq, seq_col, entry_col, at_col, entry_at_col, kind):
    """Row r's calendar entry `seq` came due: True when its armed timer expires now."""
    if rows[r, entry_col] != seq:
        return False  # not the row's entry any more
    rows[r, entry_col] = -1
    live = rows[r, seq_col]
    if live < 0:
        return False  # cancelled
    if live != seq:  # armed again since: on to the armed deadline, in its own place
        at = times[r, at_col]
        _push_at(S, at, live, kind, r)
        rows[r, entry_col] = live
        times[r, entry_at_col] = at
        return False
    return True


@njit(cache=True)
def _push_at(S, time, seq, kind, arg):
    counters = S.I
    n = counters[I_HEAP_N]
    ht, hs, hp = S.HT, S.HS, S.HP
    ht[n] = time
    hs[n] = seq
    hp[n] = (arg << KIND_BITS) | kind
    counters[I_HEAP_N] = n + 1
    _calendar_siftdown(ht, hs, hp, 0, n)


@njit(cache=True)
def _pop(S):
    counters = S.I
    ht, hs, hp = S.HT, S.HS, S.HP
    n = counters[I_HEAP_N] - 1
    counters[I_HEAP_N] = n
    t, s, p = ht[0], hs[0], hp[0]
    if n > 0:
        ht[0], hs[0], hp[0] = ht[n], hs[n], hp[n]
        _calendar_siftup(ht, hs, hp, n, 0)
    return t, s, p


# --------------------------------------------------------------------------- CPU tag heaps
@njit(cache=True)
def _tag_before(JF, JI, a, b):
    ta, tb = JF[a, JF_TAG], JF[b, JF_TAG]
    return ta < tb or (ta == tb and JI[a, J_TAG_SEQ] < JI[b, J_TAG_SEQ])


@njit(cache=True)
def _tag_siftdown(heap, JF, JI, start, pos):
    item = heap[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if _tag_before(JF, JI, item, heap[parent]):
            heap[pos] = heap[parent]
            pos = parent
            continue
        break
    heap[pos] = item


@njit(cache=True)
def _tag_siftup(heap, JF, JI, n, pos):
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _tag_before(JF, JI, heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _tag_siftdown(heap, JF, JI, start, pos)


# --------------------------------------------------------------------------- processor sharing
@njit(cache=True)
def _advance(S, c, now):
    CPI, CPF = S.CPI, S.CPF
    dt = now - CPF[c, CPF_LAST]
    if dt != 0.0:
        n = CPI[c, CP_N]
        if n:
            if not CPI[c, CP_UNSHARED]:
                CPF[c, CPF_VIRTUAL] += CPF[c, CPF_RATE] * dt
            cores = CPI[c, CP_CORES]
            CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
            CPF[c, CPF_JOBS] += n * dt
        CPF[c, CPF_LAST] = now


@njit(cache=True)
def _run_append(S, c, j):
    CPI, JI = S.CPI, S.JI
    tail = CPI[c, CP_RUN_TAIL]
    JI[j, J_PREV] = tail
    JI[j, J_NEXT] = -1
    if tail >= 0:
        JI[tail, J_NEXT] = j
    else:
        CPI[c, CP_RUN_HEAD] = j
    CPI[c, CP_RUN_TAIL] = j


@njit(cache=True)
def _run_remove(S, c, j):
    CPI, JI = S.CPI, S.JI
    before, after = JI[j, J_PREV], JI[j, J_NEXT]
    if before >= 0:
        JI[before, J_NEXT] = after
    else:
        CPI[c, CP_RUN_HEAD] = after
    if after >= 0:
        JI[after, J_PREV] = before
    else:
        CPI[c, CP_RUN_TAIL] = before


@njit(cache=True)
def _reschedule(S, c):
    CPI, CPF, JF = S.CPI, S.CPF, S.JF
    head = S.CPH[c, 0]
    delay = (JF[head, JF_TAG] - CPF[c, CPF_VIRTUAL]) / CPF[c, CPF_RATE]
    now = S.F[F_NOW]
    CPI[c, CP_WAKEUP] = push(S, now + (delay if delay > 0 else 0.0), EV_DEPART, c)


@njit(cache=True)
def _share(S, c, now):
    """n just exceeded the cores: the running bursts move onto the virtual-time heap (in the
    order they started; their calendar entries become stale)."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    heap = S.CPH[c]
    CPF[c, CPF_VIRTUAL] = 0.0
    speed = CPF[c, CPF_SPEED]
    k = 0
    j = CPI[c, CP_RUN_HEAD]
    while j >= 0:
        JF[j, JF_TAG] = (JF[j, JF_FINISH] - now) * speed
        JI[j, J_TAG_SEQ] = CPI[c, CP_SEQ]
        CPI[c, CP_SEQ] += 1
        JI[j, J_BURST_SEQ] = -1
        heap[k] = j
        k += 1
        j = JI[j, J_NEXT]
    for i in range(k // 2 - 1, -1, -1):  # heapq.heapify
        _tag_siftup(heap, JF, JI, k, i)
    CPI[c, CP_HEAP_N] = k
    CPI[c, CP_RUN_HEAD] = -1
    CPI[c, CP_RUN_TAIL] = -1
    CPI[c, CP_UNSHARED] = 0
    CPF[c, CPF_RATE] = -1.0


@njit(cache=True)
def _unshare(S, c, now):
    """n fell back to the cores: every job runs at full speed to its own finish time."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    heap = S.CPH[c]
    speed = CPF[c, CPF_SPEED]
    virtual = CPF[c, CPF_VIRTUAL]
    for i in range(CPI[c, CP_HEAP_N]):
        j = heap[i]
        left = JF[j, JF_TAG] - virtual
        finish = now + max(left, 0.0) / speed
        JI[j, J_BURST_SEQ] = push(S, finish, EV_BURST, j)
        JF[j, JF_FINISH] = finish
        _run_append(S, c, j)
    CPI[c, CP_HEAP_N] = 0
    CPI[c, CP_UNSHARED] = 1
    CPF[c, CPF_RATE] = 0.0


@njit(cache=True)
def cpu_run(S, c, demand, j):
    """Job j computes `demand` seconds of work (at speed 1) on CPU c, then `_computed(j)`."""
    CPI, CPF, JI, JF = S.CPI, S.CPF, S.JI, S.JF
    now = S.F[F_NOW]
    if CPI[c, CP_DEDICATED]:
        # Never shared (no more slots than cores): the reference's DedicatedCPU.
        CPI[c, CP_N] += 1
        CPF[c, CPF_SIGNED] -= now
        push(S, now + demand / CPF[c, CPF_SPEED], EV_DEDICATED_BURST, j)
        return
    # a stop-the-world pause holds the burst until its end (a JVM's CPU is never dedicated)
    v = CPI[c, CP_JVM]
    if v >= 0 and S.JV[v, JV_PAUSED]:
        _frozen_append(S, v, j, demand)
        return
    n = CPI[c, CP_N]
    unshared = CPI[c, CP_UNSHARED]
    cores = CPI[c, CP_CORES]
    if unshared:
        dt = now - CPF[c, CPF_LAST]
        if dt != 0.0:
            if n:
                CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
                CPF[c, CPF_JOBS] += n * dt
            CPF[c, CPF_LAST] = now
    else:
        _advance(S, c, now)
    n += 1
    CPI[c, CP_N] = n
    if unshared:
        if n <= cores:
            finish = now + demand / CPF[c, CPF_SPEED]
            JI[j, J_BURST_SEQ] = push(S, finish, EV_BURST, j)
            JF[j, JF_FINISH] = finish
            _run_append(S, c, j)
            return
        _share(S, c, now)
    heap = S.CPH[c]
    JF[j, JF_TAG] = CPF[c, CPF_VIRTUAL] + demand
    JI[j, J_TAG_SEQ] = CPI[c, CP_SEQ]
    CPI[c, CP_SEQ] += 1
    size = CPI[c, CP_HEAP_N]
    heap[size] = j
    CPI[c, CP_HEAP_N] = size + 1
    _tag_siftdown(heap, JF, JI, 0, size)
    rate = CPF[c, CPF_SPEED] * cores / n
    # The pending departure stays valid unless the rate changed or the new job is first.
    if rate != CPF[c, CPF_RATE] or heap[0] == j:
        CPF[c, CPF_RATE] = rate
        _reschedule(S, c)


# --------------------------------------------------------------------------- slot pools
@njit(cache=True)
def pool_acquire(S, p, j):
    POI, POF = S.POI, S.POF
    now = S.F[F_NOW]
    capacity = POI[p, PO_CAPACITY]
    if capacity < 0 or POI[p, PO_IN_USE] < capacity:
        POI[p, PO_IN_USE] += 1
        POF[p, POF_BUSY] -= now
        POI[p, PO_ACQUIRED] += 1
        return GRANTED
    if _pool_refuses(S, p):
        return REFUSED
    _pool_enqueue(S, p, j)
    return QUEUED


@njit(cache=True)
def _pool_refuses(S, p):
    """The pool's queue is at its limit (a listen backlog, acceptCount): count a refusal."""
    POI = S.POI
    limit = POI[p, PO_QUEUE_LIMIT]
    if limit >= 0 and POI[p, PO_WAITING] >= limit:
        POI[p, PO_REFUSED] += 1
        return True
    return False


@njit(cache=True)
def _pool_enqueue(S, p, j):
    """Job j waits at the tail of the pool's FIFO queue."""
    POI, POF, JI, JF = S.POI, S.POF, S.JI, S.JF
    now = S.F[F_NOW]
    POI[p, PO_WAITING] += 1
    POF[p, POF_QUEUE] -= now
    JI[j, J_WAIT_NEXT] = -1
    JF[j, JF_WAIT_SINCE] = now
    tail = POI[p, PO_TAIL]
    if tail >= 0:
        JI[tail, J_WAIT_NEXT] = j
    else:
        POI[p, PO_HEAD] = j
    POI[p, PO_TAIL] = j


@njit(cache=True)
def pool_release(S, p):
    """Free a slot, or hand it straight to the oldest waiter (who continues at once)."""
    POI, POF = S.POI, S.POF
    now = S.F[F_NOW]
    j = POI[p, PO_HEAD]
    if j < 0:
        POI[p, PO_IN_USE] -= 1
        POF[p, POF_BUSY] += now
        return
    JI, JF, STI = S.JI, S.JF, S.STI
    after = JI[j, J_WAIT_NEXT]
    POI[p, PO_HEAD] = after
    if after < 0:
        POI[p, PO_TAIL] = -1
    POI[p, PO_WAITING] -= 1
    POF[p, POF_QUEUE] += now
    POI[p, PO_ACQUIRED] += 1
    POF[p, POF_WAIT] += now - JF[j, JF_WAIT_SINCE]
    role = POI[p, PO_ROLE]
    if role == ROLE_LINK:  # a frame's turn on a network link
        push(S, now + JF[j, JF_TX_S], EV_LINK_SENT, j)
        return
    if role == ROLE_PIN:  # the node accepts a pooled connection (a slot, a thread)
        _bp_bound(S, j)
        return
    s = JI[j, J_STATION]
    if role == ROLE_STATION:  # a worker / thread / connection for the visit itself
        JF[j, JF_STARTED] = now
        if s == S.C[C_FRONT]:
            _front_granted(S, j, s)
            return
        STI[s, ST_IN_PROGRESS] += 1
        cpu_run(S, STI[s, ST_CPU], _burst(S, s, j), j)
    elif role == ROLE_JDBC:  # the caller's JDBC connection: its database call starts
        _arrive_queued_target(S, j + 1, STI[s, ST_TARGET], p)
    else:  # a disk spindle
        push(S, now + draw(S, STI[s, ST_DISK_STREAM]), EV_DISK, j)


@njit(cache=True)
def pool_withdraw(S, p, j):
    """Waiter.cancel: job j leaves the pool's queue (a pooled connection's read timeout)."""
    POI, JI = S.POI, S.JI
    before = -1
    w = POI[p, PO_HEAD]
    while w != j:
        before = w
        w = JI[w, J_WAIT_NEXT]
    after = JI[j, J_WAIT_NEXT]
    if before >= 0:
        JI[before, J_WAIT_NEXT] = after
    else:
        POI[p, PO_HEAD] = after
    if after < 0:
        POI[p, PO_TAIL] = before
    POI[p, PO_WAITING] -= 1
    S.POF[p, POF_QUEUE] += S.F[F_NOW]


# --------------------------------------------------------------------------- stations
@njit(cache=True)
def _open_visit(S, j, s, member, via_pool):
    JI, JF = S.JI, S.JF
    now = S.F[F_NOW]
    JI[j, J_STATION] = s
    JF[j, JF_ARRIVED] = now
    JF[j, JF_STARTED] = now
    JI[j, J_CALLS_LEFT] = _calls(S, s, j)
    JF[j, JF_DOWNSTREAM] = 0.0
    JI[j, J_VIA_MEMBER] = member
    JI[j, J_VIA_POOL] = via_pool
    JI[j, J_PHASE] = PHASE_VISIT


@njit(cache=True)
def _arrive_queued_target(S, j, s, via_pool):
    """A visit to a station whose queue is unbounded (the database behind a JDBC pool):
    granted or queued, never refused."""
    _open_visit(S, j, s, -1, via_pool)
    STI = S.STI
    p = STI[s, ST_POOL]
    if p < 0 or pool_acquire(S, p, j) == GRANTED:
        STI[s, ST_IN_PROGRESS] += 1
        cpu_run(S, STI[s, ST_CPU], _burst(S, s, j), j)


@njit(cache=True)
def arrive(S, j, s, member, via_pool):
    """Station.serve: take a slot (or wait for one, or be refused), then the first burst."""
    _open_visit(S, j, s, member, via_pool)
    STI = S.STI
    front = s == S.C[C_FRONT]
    if front and _front_reuses_worker(S, j):
        # the worker of an open connection (FrontStation.serve): nothing to accept
        STI[s, ST_IN_PROGRESS] += 1
        cpu_run(S, STI[s, ST_CPU], _burst(S, s, j), j)
        return
    p = STI[s, ST_POOL]
    status = GRANTED
    if front and S.C[C_CHILDREN]:  # httpd's children: the first listening one accepts
        status = _children_acquire(S, j)
    elif p >= 0:
        status = pool_acquire(S, p, j)
    if status == GRANTED:
        if front:
            _front_granted(S, j, s)
            return
        STI[s, ST_IN_PROGRESS] += 1
        cpu_run(S, STI[s, ST_CPU], _burst(S, s, j), j)
    elif status == REFUSED:
        # The listen queue of the tier the clients connect to drops the SYN; a deeper
        # tier answers its caller with an error.
        STI[s, ST_FAILED] += 1
        reply_up(S, j, REPLY_REFUSED if STI[s, ST_ACCEPTS] else REPLY_FAIL)


@njit(cache=True)
def _close_visit(S, j, ok):
    """The visit's statistics, and its slot freed (handed to the next waiter first)."""
    JF, STI, STF = S.JF, S.STI, S.STF
    now = S.F[F_NOW]
    s = S.JI[j, J_STATION]
    STI[s, ST_VISITS] += 1
    STI[s, ST_IN_PROGRESS] -= 1
    STF[s, STF_WAIT] += JF[j, JF_STARTED] - JF[j, JF_ARRIVED]
    STF[s, STF_RESIDENCE] += now - JF[j, JF_ARRIVED]
    STF[s, STF_DOWNSTREAM] += JF[j, JF_DOWNSTREAM]
    if not ok:
        STI[s, ST_FAILED] += 1
    if s == S.C[C_FRONT]:
        _front_responded(S, j, ok)  # keep-alive and lingering close decide when it frees
        return
    p = STI[s, ST_POOL]
    if p >= 0:
        pool_release(S, p)


# --------------------------------------------------------------------------- httpd's children
# `sim.tiers.proxy.children.ChildProcesses`: the front's workers as children's threads, the
# accept line (children waiting in accept(), oldest first) and, event, each child's
# connection limit.  The front pool's row keeps the statistics and the listen queue.
@njit(cache=True)
def _line_remove(S, ch):
    CH, counters = S.CH, S.I
    before, after = CH[ch, CH_PREV], CH[ch, CH_NEXT]
    if before >= 0:
        CH[before, CH_NEXT] = after
    else:
        counters[I_CH_HEAD] = after
    if after >= 0:
        CH[after, CH_PREV] = before
    else:
        counters[I_CH_TAIL] = before
    CH[ch, CH_IN_LINE] = 0


@njit(cache=True)
def _line_append(S, ch):
    CH, counters = S.CH, S.I
    tail = counters[I_CH_TAIL]
    CH[ch, CH_PREV] = tail
    CH[ch, CH_NEXT] = -1
    if tail >= 0:
        CH[tail, CH_NEXT] = ch
    else:
        counters[I_CH_HEAD] = ch
    counters[I_CH_TAIL] = ch
    CH[ch, CH_IN_LINE] = 1


@njit(cache=True)
def _can_accept(S, ch):
    CH, C = S.CH, S.C
    idle = C[C_THREADS_PER_CHILD] - CH[ch, CH_BUSY]
    if CH[ch, CH_EXITING] or idle <= 0:
        return False
    factor = C[C_ASYNC_FACTOR]
    if factor == 0 or CH[ch, CH_CONNECTIONS] == 0:
        return True
    limit = C[C_THREADS_PER_CHILD] + (idle - CH[ch, CH_DISABLED]) * factor
    return CH[ch, CH_CONNECTIONS] < limit


@njit(cache=True)
def _line_update(S, ch):
    """Put the child at the end of the accept line, or out of it."""
    if S.CH[ch, CH_IN_LINE]:
        _line_remove(S, ch)
    if _can_accept(S, ch):
        S.CH[ch, CH_DISABLED] = 0
        _line_append(S, ch)


@njit(cache=True)
def _child_take(S, ch):
    p = S.STI[S.C[C_FRONT], ST_POOL]
    S.CH[ch, CH_BUSY] += 1
    S.POI[p, PO_IN_USE] += 1
    S.POF[p, POF_BUSY] -= S.F[F_NOW]


@njit(cache=True)
def _child_accept(S, ch, j):
    """The child accepts job j's connection (its request learns its child)."""
    S.CH[ch, CH_CONNECTIONS] += 1
    S.RI[j // S.C[C_LEVELS], R_CHILD] = ch
    _child_take(S, ch)
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_ACQUIRED] += 1
    _line_update(S, ch)  # back to the end of the line, if it can accept again


@njit(cache=True)
def _children_acquire(S, j):
    """ChildProcesses.acquire: the first listening child accepts the connection, or it waits
    in the listen queue, or is refused."""
    head = S.I[I_CH_HEAD]
    if head >= 0:
        _child_accept(S, head, j)
        return GRANTED
    p = S.STI[S.C[C_FRONT], ST_POOL]
    if _pool_refuses(S, p):
        return REFUSED
    _disable_listeners(S)
    _pool_enqueue(S, p, j)
    return QUEUED


@njit(cache=True)
def _disable_listeners(S):
    """event: a connection waits in the listen queue, so every listener disables its socket."""
    if S.C[C_ASYNC_FACTOR]:
        CH = S.CH
        for ch in range(S.I[I_CH_ROWS]):
            if CH[ch, CH_PRESENT]:
                CH[ch, CH_DISABLED] = 1


@njit(cache=True)
def _serve_waiters(S):
    """Connections in the listen queue go to the listening children, oldest first."""
    POI, POF, JI, JF, counters = S.POI, S.POF, S.JI, S.JF, S.I
    s = S.C[C_FRONT]
    p = S.STI[s, ST_POOL]
    while POI[p, PO_WAITING] and counters[I_CH_HEAD] >= 0:
        now = S.F[F_NOW]
        j = POI[p, PO_HEAD]
        after = JI[j, J_WAIT_NEXT]
        POI[p, PO_HEAD] = after
        if after < 0:
            POI[p, PO_TAIL] = -1
        POI[p, PO_WAITING] -= 1
        POF[p, POF_QUEUE] += now
        POF[p, POF_WAIT] += now - JF[j, JF_WAIT_SINCE]
        _child_accept(S, counters[I_CH_HEAD], j)
        JF[j, JF_STARTED] = now
        _front_granted(S, j, s)
    if POI[p, PO_WAITING]:
        _disable_listeners(S)


@njit(cache=True)
def _child_changed(S, ch):
    if S.CH[ch, CH_EXITING]:
        _exit_if_done(S, ch)
        return
    if not S.CH[ch, CH_IN_LINE]:
        _line_update(S, ch)
    _serve_waiters(S)


@njit(cache=True)
def _child_free(S, ch):
    """ChildProcesses.free: a worker of the child is free again."""
    p = S.STI[S.C[C_FRONT], ST_POOL]
    S.CH[ch, CH_BUSY] -= 1
    S.POI[p, PO_IN_USE] -= 1
    S.POF[p, POF_BUSY] += S.F[F_NOW]
    _child_changed(S, ch)


@njit(cache=True)
def _child_connection_closed(S, ch):
    S.CH[ch, CH_CONNECTIONS] -= 1
    _child_changed(S, ch)


@njit(cache=True)
def _take_worker(S, ch):
    """event: a request on one of the child's idle keep-alive connections gets an idle worker
    of the child without an accept (the listener keeps its place in the line), or none."""
    if S.C[C_THREADS_PER_CHILD] - S.CH[ch, CH_BUSY] <= 0:
        return False
    _child_take(S, ch)
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_ACQUIRED] += 1
    if S.CH[ch, CH_IN_LINE] and not _can_accept(S, ch):
        _line_remove(S, ch)
    return True


@njit(cache=True)
def _fork(S, count):
    """New children, idle at once, at the end of the accept line; they take waiting
    connections."""
    CH, counters = S.CH, S.I
    p = S.STI[S.C[C_FRONT], ST_POOL]
    for _ in range(count):
        top = counters[I_CH_FREE_TOP] - 1
        counters[I_CH_FREE_TOP] = top
        ch = S.CHFREE[top]
        if ch + 1 > counters[I_CH_ROWS]:
            counters[I_CH_ROWS] = ch + 1
        counters[I_CH_PRESENT] += 1
        CH[ch, CH_NUMBER] = counters[I_CH_NUMBER]
        counters[I_CH_NUMBER] += 1
        CH[ch, CH_BUSY] = 0
        CH[ch, CH_CONNECTIONS] = 0
        CH[ch, CH_DISABLED] = 0
        CH[ch, CH_EXITING] = 0
        CH[ch, CH_PRESENT] = 1
        _bp_reset(S, ch)  # its pools are new (the reference makes them at its first request)
        S.POI[p, PO_CAPACITY] += S.C[C_THREADS_PER_CHILD]
        _line_append(S, ch)
    _serve_waiters(S)


@njit(cache=True)
def _stop_child(S, ch):
    """ChildProcesses.stop (the pipe of death): the child accepts nothing more; event closes
    its idle keep-alive connections at once (FrontConnections._child_stopping); it exits once
    its workers and connections are done."""
    CH, CN = S.CH, S.CN
    CH[ch, CH_EXITING] = 1
    S.POI[S.STI[S.C[C_FRONT], ST_POOL], PO_CAPACITY] -= S.C[C_THREADS_PER_CHILD]
    if CH[ch, CH_IN_LINE]:
        _line_remove(S, ch)
    if S.C[C_CLIENT_KEEP_ALIVE]:
        for c in range(CN.shape[0]):
            if CN[c, CN_REFS] > 0 and CN[c, CN_KEPT] and CN[c, CN_CHILD] == ch:
                _front_idle_expired(S, c)  # its KeepAliveTimeout cancelled
    _exit_if_done(S, ch)


@njit(cache=True)
def _maintain(S):
    """Spawner._maintain (`perform_idle_server_maintenance`), then the next tick a second
    later (the reference's calendar always holds the horizon)."""
    _tick(S)
    push(S, S.F[F_NOW] + 1.0, EV_MAINTAIN, 0)


@njit(cache=True)
def _tick(S):
    """Spawner.tick: above MaxSpare* idle, stop a child (prefork: the youngest waiting for a
    connection; worker, event: the oldest not yet told to stop, busy or not, the first
    blocked on the pipe of death); below MinSpare*, fork `spawn_rate` children into the free
    scoreboard slots and double the rate up to 32 (held at 1 for 10 ticks after a graceful
    restart); else the rate goes back to 1."""
    C, CH, counters = S.C, S.CH, S.I
    tpc = C[C_THREADS_PER_CHILD]
    live = 0
    idle = 0
    youngest = -1
    oldest = -1
    for ch in range(counters[I_CH_ROWS]):
        if not CH[ch, CH_PRESENT] or CH[ch, CH_EXITING]:
            continue
        live += 1
        free_threads = tpc - CH[ch, CH_BUSY]
        if C[C_SPARE_CHILDREN]:
            idle += CH[ch, CH_BUSY] == 0
        else:
            idle += free_threads
        if free_threads > 0 and (youngest < 0 or CH[ch, CH_NUMBER] > CH[youngest, CH_NUMBER]):
            youngest = ch
        if oldest < 0 or CH[ch, CH_NUMBER] < CH[oldest, CH_NUMBER]:
            oldest = ch
    if idle > C[C_MAX_SPARE]:
        _stop_child(S, youngest if C[C_SPARE_CHILDREN] else oldest)
        counters[I_SPAWN_RATE] = 1
    elif idle < C[C_MIN_SPARE]:
        slots = C[C_MAX_CHILDREN] - live
        if slots <= 0:
            counters[I_SPAWN_RATE] = 1  # the scoreboard is full: MaxRequestWorkers reached
        else:
            rate = counters[I_SPAWN_RATE]
            _fork(S, min(rate, slots))
            if counters[I_HOLD_OFF]:
                counters[I_HOLD_OFF] -= 1
            elif rate < 32:
                counters[I_SPAWN_RATE] = 2 * rate
    else:
        counters[I_SPAWN_RATE] = 1


@njit(cache=True)
def _exit_if_done(S, ch):
    """A stopping child exits once its workers and connections are done."""
    CH, counters = S.CH, S.I
    if CH[ch, CH_BUSY] or CH[ch, CH_CONNECTIONS] or not CH[ch, CH_PRESENT]:
        return
    CH[ch, CH_PRESENT] = 0
    counters[I_CH_PRESENT] -= 1
    top = counters[I_CH_FREE_TOP]
    S.CHFREE[top] = ch
    counters[I_CH_FREE_TOP] = top + 1
    _bp_child_exited(S, ch)


# --------------------------------------------------------------------------- the front's connections
# `sim.tiers.proxy.client_connections.FrontConnections`: a connection of a prefork/worker front
# holds its worker through KeepAliveTimeout and the lingering close; with children as
# individuals a connection belongs to the child that accepted it.
@njit(cache=True)
def _conn_new(S):
    """A new client connection (`Connection()`): open, no requests yet, no one refers to it."""
    counters, CN = S.I, S.CN
    top = counters[I_CN_FREE_TOP] - 1
    counters[I_CN_FREE_TOP] = top
    counters[I_CN_USED] += 1
    c = S.CNFREE[top]
    CN[c, CN_OPEN] = 1
    CN[c, CN_HOLDS] = 0
    CN[c, CN_REQUESTS] = 0
    CN[c, CN_IDLE_SEQ] = -1
    CN[c, CN_CLIENT_CLOSED] = 0
    CN[c, CN_REFS] = 0
    CN[c, CN_CHILD] = -1
    CN[c, CN_KEPT] = 0
    return c


@njit(cache=True)
def _conn_unref(S, c):
    """One reference to connection c fewer; with none left its row is free."""
    CN = S.CN
    refs = CN[c, CN_REFS] - 1
    CN[c, CN_REFS] = refs
    if refs == 0:
        counters = S.I
        top = counters[I_CN_FREE_TOP]
        S.CNFREE[top] = c
        counters[I_CN_FREE_TOP] = top + 1
        counters[I_CN_USED] -= 1


@njit(cache=True)
def _connection_for(S, r):
    """Clients.send with keep-alive: request r travels on its user's open connection, or on
    a new one (a retry always opens one; open arrivals never return); True when new."""
    C, RI, CN, UI = S.C, S.RI, S.CN, S.UI
    owner = C[C_CLIENT] != CLIENT_OPEN
    user = RI[r, R_USER]
    c = UI[user, U_CONN] if owner else -1
    # A connection the client hung up on (its timeout fired) is gone even while the server
    # still works on its request: the next request connects anew.
    fresh = RI[r, R_ATTEMPT] > 0 or c < 0 or not CN[c, CN_OPEN] or CN[c, CN_CLIENT_CLOSED]
    if fresh:
        made = _conn_new(S)
        if owner:
            if c >= 0:
                _conn_unref(S, c)
            UI[user, U_CONN] = made
            CN[made, CN_REFS] += 1
        c = made
    RI[r, R_CONN] = c
    CN[c, CN_REFS] += 1
    return fresh


@njit(cache=True)
def _front_reuses_worker(S, j):
    """FrontConnections.reuses_worker: the next request on an open connection cancels its
    KeepAliveTimeout, and keeps the worker the connection holds (prefork/worker) or, event
    with children, takes an idle worker of the connection's child -- with none, the
    listener closes the connection and the client connects anew."""
    r = j // S.C[C_LEVELS]
    c = S.RI[r, R_CONN]
    if c < 0:
        return False
    CN = S.CN
    if not CN[c, CN_OPEN]:
        # KeepAliveTimeout closed it while the client's own CPU was sending on it: the client
        # sends again on a new connection (as the reference does)
        CN[c, CN_OPEN] = 1
        CN[c, CN_REQUESTS] = 0
        CN[c, CN_CHILD] = -1
        CN[c, CN_HOLDS] = 0
        CN[c, CN_KEPT] = 0
        return False
    if CN[c, CN_IDLE_SEQ] >= 0:
        CN[c, CN_IDLE_SEQ] = -1  # the calendar entry goes stale
        _conn_unref(S, c)
    if CN[c, CN_HOLDS]:
        CN[c, CN_REQUESTS] += 1
        S.RI[r, R_CHILD] = CN[c, CN_CHILD]
        return True
    child = CN[c, CN_CHILD]
    if not S.C[C_CHILDREN] or child < 0 or CN[c, CN_REQUESTS] == 0:
        return False  # event without children, or a new connection: it waits for a worker
    CN[c, CN_KEPT] = 0
    if _take_worker(S, child):
        CN[c, CN_REQUESTS] += 1
        S.RI[r, R_CHILD] = child
        return True
    S.I[I_FRONT_NO_WORKER] += 1
    _front_server_closed(S)
    _child_connection_closed(S, child)
    CN[c, CN_REQUESTS] = 0
    CN[c, CN_CHILD] = -1
    return False


@njit(cache=True)
def _front_granted(S, j, s):
    """FrontStation's `_front_granted`: the worker accepts the connection (`accepted`); the
    first request on a new connection also pays its set-up CPU (`proxy.connection_demand`)."""
    C, CN, STI, counters = S.C, S.CN, S.STI, S.I
    r = j // C[C_LEVELS]
    c = S.RI[r, R_CONN]
    opened = c < 0 or CN[c, CN_REQUESTS] == 0  # read before it counts this request
    if opened:
        counters[I_FRONT_OPENED] += 1
        counters[I_FRONT_OPEN] += 1
    if c >= 0:  # (event without children: the next request on an idle connection)
        CN[c, CN_REQUESTS] += 1
        if opened:
            CN[c, CN_HOLDS] = 1 - C[C_LISTENER_IDLE]
            CN[c, CN_CHILD] = S.RI[r, R_CHILD]
    STI[s, ST_IN_PROGRESS] += 1
    per_connection = C[C_ST_CONN_DEMAND]
    if opened and per_connection >= 0:
        work = draw(S, per_connection)
        work += _burst(S, s, j)
    else:
        work = _burst(S, s, j)
    cpu_run(S, STI[s, ST_CPU], work, j)


@njit(cache=True)
def _front_responded(S, j, ok):
    """FrontConnections.responded: keep the connection (and, prefork/worker, its worker)
    through KeepAliveTimeout, or close it.  An error response has the status set where it
    arose (503 if none), and a 503 drops the connection."""
    C, CN, counters = S.C, S.CN, S.I
    now = S.F[F_NOW]
    r = j // C[C_LEVELS]
    c = S.RI[r, R_CONN]
    child = S.RI[r, R_CHILD]
    drops = False
    if not ok:
        # the status set where the error arose, 503 if none (DEFAULT_ERROR_STATUS); a 503
        # drops the connection (ap_status_drops_connection), a 502 keeps it
        status = S.RI[r, R_STATUS]
        if status == 502:
            counters[I_FRONT_502] += 1
        elif status == 504:  # mod_jk's reply timeout (keeps the connection)
            counters[I_FRONT_504] += 1
        else:
            counters[I_FRONT_503] += 1
            drops = True
    max_requests = C[C_MAX_KA_REQUESTS]
    if (
        not drops
        and c >= 0
        and CN[c, CN_OPEN]
        and not CN[c, CN_CLIENT_CLOSED]
        and C[C_PROXY_KEEP_ALIVE]
        and (child < 0 or not S.CH[child, CH_EXITING])
        and (max_requests == 0 or CN[c, CN_REQUESTS] < max_requests)
    ):
        deadline = now + S.CF[CF_KA_TIMEOUT]
        _timer_arm(
            S,
            CN,
            S.CNF,
            c,
            CN_IDLE_SEQ,
            CN_IDLE_ENTRY,
            CNF_IDLE_AT,
            CNF_ENTRY_AT,
            deadline,
            EV_IDLE,
        )
        CN[c, CN_REFS] += 1  # the pending timeout refers to it
        if C[C_LISTENER_IDLE]:
            if child >= 0:
                CN[c, CN_KEPT] = 1
            _release_worker(S, child)
        return
    if drops and c >= 0 and CN[c, CN_OPEN]:
        counters[I_FRONT_AFTER_ERROR] += 1
    _front_server_closed(S)
    if c >= 0:
        CN[c, CN_OPEN] = 0
        CN[c, CN_HOLDS] = 0
        if CN[c, CN_CLIENT_CLOSED]:
            _connection_gone(S, child)
            _release_worker(S, child)  # the client has gone: nothing to drain
            return
    _connection_gone(S, child)
    _close_worker(S, child)


@njit(cache=True)
def _front_idle_expired(S, c):
    """KeepAliveTimeout: the server closes the idle connection (and drains it, if a worker
    holds it)."""
    CN = S.CN
    CN[c, CN_IDLE_SEQ] = -1
    CN[c, CN_OPEN] = 0
    _front_server_closed(S)
    child = CN[c, CN_CHILD]
    CN[c, CN_KEPT] = 0
    if CN[c, CN_HOLDS]:
        CN[c, CN_HOLDS] = 0
        _connection_gone(S, child)
        _close_worker(S, child)
    else:
        _connection_gone(S, child)
    _conn_unref(S, c)


@njit(cache=True)
def _front_server_closed(S):
    """The server closed a client connection; a finished workload waiting for its last
    connection stops, after the events due now."""
    counters = S.I
    counters[I_FRONT_CLOSED] += 1
    counters[I_FRONT_OPEN] -= 1
    S.F[F_LAST_CLOSE] = S.F[F_NOW]
    if counters[I_FRONT_OPEN] == 0 and counters[I_STOP_ON_CLOSE]:
        push(S, S.F[F_NOW], EV_STOP, 0)


@njit(cache=True)
def _connection_gone(S, child):
    if child >= 0:
        _child_connection_closed(S, child)


@njit(cache=True)
def _close_worker(S, child):
    """The lingering close holds the worker until the client closes, or one idle read."""
    hold = S.CF[CF_LINGER_HOLD]
    if hold > 0:
        push(S, S.F[F_NOW] + hold, EV_LINGER, max(child, 0))
    else:
        _release_worker(S, child)


@njit(cache=True)
def _release_worker(S, child):
    if S.C[C_CHILDREN]:
        _child_free(S, child)
    else:
        pool_release(S, S.STI[S.C[C_FRONT], ST_POOL])


# --------------------------------------------------------------------------- backend pools
# `sim.tiers.proxy.backend_pool.BackendPool` (mod_proxy): the front's connections to each node,
# one pool per child and node (apr_reslist) or, for an unbounded front, one per node.  In the
# reference these calls nest: a response hands its connection to a waiting request, whose node
# may refuse it, whose error goes back up before the first response does.  numba's cache cannot
# load recursive functions, so what runs below `reply_up` or a pool's hand-over uses variants
# that cannot answer (`_nested`).  A new connection the node can neither take nor queue waits
# for SYN retransmissions and may fail and put the worker in error state, a mechanism of its
# own (`proxy.backend_pool.connect_failures`) that keeps such a model on the reference engine:
# here the node never refuses a connection.  Should it happen anyway, the run stops loudly.
@njit(cache=True)
def _forward(S, j, s, member):
    """A call to node station s: through the front's pool of connections to it, if built."""
    node = S.STI[s, ST_NODE]
    if node >= 0 and S.BN[node, BN_POOLED]:
        _bp_serve(S, j, s, member)
    else:
        arrive(S, j, s, member, -1)


@njit(cache=True)
def _bp_unanswerable(S):
    S.I[I_UNSUPPORTED] = 1
    S.I[I_STOP] = 1


@njit(cache=True)
def _bp_reset(S, ch):
    """A new child's pools: empty (the reference makes them at the child's first request)."""
    if not S.C[C_BACKEND_POOLS]:
        return
    BP = S.BP
    n = S.C[C_N_NODES]
    for node in range(n):
        pool = ch * n + node
        BP[pool, BP_OPEN] = 0
        BP[pool, BP_IDLE_HEAD] = -1
        BP[pool, BP_IDLE_TAIL] = -1
        BP[pool, BP_WAIT_HEAD] = -1
        BP[pool, BP_WAIT_TAIL] = -1
        S.BPF[pool, BPF_JK_MAINTAINED] = -np.inf  # a new process: maintained at its first request


@njit(cache=True)
def _bp_open(S, pool, node):
    """BackendPool._open: a new connection of the pool, not yet accepted by the node."""
    S.BP[pool, BP_OPEN] += 1
    S.BN[node, BN_OPEN] += 1
    return _bp_row(S, pool, node)


@njit(cache=True)
def _bp_row(S, pool, node):
    """A free connection row of the pool, unbound (the pool's counts are the caller's)."""
    counters, BC = S.I, S.BC
    top = counters[I_BC_FREE_TOP] - 1
    counters[I_BC_FREE_TOP] = top
    counters[I_BC_USED] += 1
    c = S.BCFREE[top]
    BC[c, BC_POOL] = pool
    BC[c, BC_NODE] = node
    BC[c, BC_THREAD] = 0
    BC[c, BC_IDLE_SEQ] = -1
    BC[c, BC_READ_SEQ] = -1
    BC[c, BC_JOB] = -1
    S.BCF[c, BCF_RELEASED] = 0.0
    return c


@njit(cache=True)
def _bp_forget(S, c):
    """BackendPool._forget: the connection no longer counts; its row is free (read it first)."""
    counters = S.I
    S.BP[S.BC[c, BC_POOL], BP_OPEN] -= 1
    S.BN[S.BC[c, BC_NODE], BN_OPEN] -= 1
    top = counters[I_BC_FREE_TOP]
    S.BCFREE[top] = c
    counters[I_BC_FREE_TOP] = top + 1
    counters[I_BC_USED] -= 1


@njit(cache=True)
def _bp_idle_push(S, pool, c):
    BC, BP = S.BC, S.BP
    tail = BP[pool, BP_IDLE_TAIL]
    BC[c, BC_PREV] = tail
    BC[c, BC_NEXT] = -1
    if tail >= 0:
        BC[tail, BC_NEXT] = c
    else:
        BP[pool, BP_IDLE_HEAD] = c
    BP[pool, BP_IDLE_TAIL] = c
    S.BN[BC[c, BC_NODE], BN_IDLE] += 1


@njit(cache=True)
def _bp_idle_remove(S, c):
    BC, BP = S.BC, S.BP
    pool = BC[c, BC_POOL]
    before, after = BC[c, BC_PREV], BC[c, BC_NEXT]
    if before >= 0:
        BC[before, BC_NEXT] = after
    else:
        BP[pool, BP_IDLE_HEAD] = after
    if after >= 0:
        BC[after, BC_PREV] = before
    else:
        BP[pool, BP_IDLE_TAIL] = before
    S.BN[BC[c, BC_NODE], BN_IDLE] -= 1


@njit(cache=True)
def _bp_wait(S, pool, node, j):
    """The request waits for a connection of its pool (FIFO)."""
    JI, BP = S.JI, S.BP
    tail = BP[pool, BP_WAIT_TAIL]
    JI[j, J_BW_PREV] = tail
    JI[j, J_BW_NEXT] = -1
    if tail >= 0:
        JI[tail, J_BW_NEXT] = j
    else:
        BP[pool, BP_WAIT_HEAD] = j
    BP[pool, BP_WAIT_TAIL] = j
    S.BN[node, BN_WAITERS] += 1


@njit(cache=True)
def _bp_unwait(S, j):
    """The request leaves its pool's waiters; its `acquire` timer goes stale."""
    JI, BP = S.JI, S.BP
    pool = JI[j, J_BPOOL]
    before, after = JI[j, J_BW_PREV], JI[j, J_BW_NEXT]
    if before >= 0:
        JI[before, J_BW_NEXT] = after
    else:
        BP[pool, BP_WAIT_HEAD] = after
    if after >= 0:
        JI[after, J_BW_PREV] = before
    else:
        BP[pool, BP_WAIT_TAIL] = before
    S.BN[pool % S.C[C_N_NODES], BN_WAITERS] -= 1
    JI[j, J_BTIMER] = -1


@njit(cache=True)
def _bp_serve(S, j, s, member):
    """BackendPool.serve: the last released idle connection of the request's child's pool, a
    new one while fewer than `max` are open, or a wait for one (mod_proxy `acquire`)."""
    JI, C = S.JI, S.C
    node = S.STI[s, ST_NODE]
    JI[j, J_STATION] = s
    JI[j, J_VIA_MEMBER] = member
    JI[j, J_VIA_POOL] = -1
    JI[j, J_BCONN] = -1
    child = S.RI[j // C[C_LEVELS], R_CHILD] if C[C_CHILDREN] else 0
    pool = child * C[C_N_NODES] + node
    JI[j, J_BPOOL] = pool
    jk = C[C_MOD_JK]
    if jk and S.BNF[node, BNF_JK_POOL_TIMEOUT] >= 0:
        _jk_maintain_due(S, pool, node)
    c = _bp_pop_idle(S, pool)
    if c < 0:
        limit = S.BN[node, BN_MAX]
        if limit < 0 or S.BP[pool, BP_OPEN] < limit:
            c = _bp_open(S, pool, node)
    if c >= 0:
        if jk:
            _jk_send(S, c, j)
        else:
            _bp_send(S, c, j)
        return
    if jk:  # mod_jk looks again every JK_SLEEP_DEF instead of waiting in line
        _jk_poll(S, j, 1)
        return
    acquire = S.BNF[node, BNF_ACQUIRE]
    JI[j, J_BTIMER] = push(S, S.F[F_NOW] + acquire, EV_ACQUIRE, j) if acquire >= 0 else -1
    _bp_wait(S, pool, node, j)


@njit(cache=True)
def _bp_pop_idle(S, pool):
    """BackendPool._pop_idle: the last released idle connection, its idle timeout cancelled;
    one idle for `ttl` or longer is closed instead."""
    BC, BP = S.BC, S.BP
    now = S.F[F_NOW]
    while BP[pool, BP_IDLE_TAIL] >= 0:
        c = BP[pool, BP_IDLE_TAIL]
        _bp_idle_remove(S, c)
        node = BC[c, BC_NODE]
        ttl = S.BNF[node, BNF_TTL]
        if ttl >= 0 and now - S.BCF[c, BCF_RELEASED] >= ttl:
            S.BN[node, BN_TTL_CLOSES] += 1
            _bp_close(S, c)
            continue
        BC[c, BC_IDLE_SEQ] = -1
        return c
    return -1


@njit(cache=True)
def _bp_bind(S, c, j):
    """A new connection asks the node for what it pins (`pins.acquire`): GRANTED, REFUSED, or
    QUEUED in the node's accept queue under the front's read timeout."""
    BC = S.BC
    node = BC[c, BC_NODE]
    p = S.BN[node, BN_PINS]
    if p < 0:  # Unpinned: nothing to take
        BC[c, BC_THREAD] = 1
        return GRANTED
    S.JI[j, J_BCONN] = c  # the hand-over (`_bp_bound`) finds the connection by the visit
    status = pool_acquire(S, p, j)
    if status == GRANTED:
        BC[c, BC_THREAD] = 1
    elif status == QUEUED:
        BC[c, BC_JOB] = j
        read = S.BNF[node, BNF_READ]
        if read >= 0:
            BC[c, BC_READ_SEQ] = push(S, S.F[F_NOW] + read, EV_READ, c)
    return status


@njit(cache=True)
def _bp_send(S, c, j):
    """BackendPool._send, from the front's own call: the request goes to the node on c (a
    connection the node cannot queue is the reference's: see above)."""
    JI = S.JI
    if S.BC[c, BC_THREAD]:
        JI[j, J_BCONN] = c
        arrive(S, j, JI[j, J_STATION], JI[j, J_VIA_MEMBER], -1)
        return
    status = _bp_bind(S, c, j)
    if status == GRANTED:
        JI[j, J_BCONN] = c
        arrive(S, j, JI[j, J_STATION], JI[j, J_VIA_MEMBER], -1)
    elif status == REFUSED:
        _bp_unanswerable(S)


@njit(cache=True)
def _bp_node_nested(S, c, j):
    """Station.serve on the node for a visit on the bound connection c, where the node cannot
    refuse it (see above)."""
    JI, STI = S.JI, S.STI
    JI[j, J_BCONN] = c
    s = JI[j, J_STATION]
    _open_visit(S, j, s, JI[j, J_VIA_MEMBER], -1)
    p = STI[s, ST_POOL]
    status = GRANTED if p < 0 else pool_acquire(S, p, j)
    if status == GRANTED:
        STI[s, ST_IN_PROGRESS] += 1
        cpu_run(S, STI[s, ST_CPU], _burst(S, s, j), j)
    elif status == REFUSED:
        STI[s, ST_FAILED] += 1
        _bp_unanswerable(S)


@njit(cache=True)
def _bp_send_nested(S, c, j):
    """BackendPool._send below a response or a hand-over (see above)."""
    if S.BC[c, BC_THREAD]:
        _bp_node_nested(S, c, j)
        return
    status = _bp_bind(S, c, j)
    if status == GRANTED:
        _bp_node_nested(S, c, j)
    elif status == REFUSED:
        _bp_unanswerable(S)


@njit(cache=True)
def _bp_bound(S, j):
    """BackendPool._bound: the node took the connection out of its accept queue."""
    if S.C[C_MOD_JK]:
        _jk_accepted(S, j)
        return
    BC = S.BC
    c = S.JI[j, J_BCONN]
    BC[c, BC_JOB] = -1
    BC[c, BC_THREAD] = 1
    BC[c, BC_READ_SEQ] = -1  # the read timeout goes stale
    _bp_node_nested(S, c, j)


@njit(cache=True)
def _bp_next_waiter(S, pool, node):
    """BackendPool._next_waiter: a connection of the pool closed; a waiting request opens one."""
    j = S.BP[pool, BP_WAIT_HEAD]
    limit = S.BN[node, BN_MAX]
    if j >= 0 and (limit < 0 or S.BP[pool, BP_OPEN] < limit):
        _bp_unwait(S, j)
        _bp_send_nested(S, _bp_open(S, pool, node), j)


@njit(cache=True)
def _bp_released(S, c):
    """BackendPool.released: the response came back on c; it goes to the pool's oldest waiting
    request, or back to the pool (its thread or slot stays pinned) under the node's idle
    timeout; with disablereuse it closes."""
    if S.C[C_DISABLE_REUSE]:
        _bp_close(S, c)
        return
    BC = S.BC
    pool = BC[c, BC_POOL]
    j = S.BP[pool, BP_WAIT_HEAD]
    if j >= 0:
        _bp_unwait(S, j)
        _bp_send_nested(S, c, j)
        return
    now = S.F[F_NOW]
    S.BCF[c, BCF_RELEASED] = now
    idle = S.BNF[BC[c, BC_NODE], BNF_IDLE]
    if idle >= 0:
        deadline = now + idle
        _timer_arm(
            S,
            BC,
            S.BCF,
            c,
            BC_IDLE_SEQ,
            BC_IDLE_ENTRY,
            BCF_IDLE_AT,
            BCF_ENTRY_AT,
            deadline,
            EV_BACKEND_IDLE,
        )
    _bp_idle_push(S, pool, c)


@njit(cache=True)
def _bp_close(S, c):
    """BackendPool._close: the connection closes, freeing what it pinned (which may bind a
    waiting connection at once); a request waiting for a connection may open one."""
    BC = S.BC
    BC[c, BC_IDLE_SEQ] = -1
    pool, node, bound = BC[c, BC_POOL], BC[c, BC_NODE], BC[c, BC_THREAD]
    _bp_forget(S, c)
    p = S.BN[node, BN_PINS]
    if bound and p >= 0:
        pool_release(S, p)
    _bp_next_waiter(S, pool, node)


@njit(cache=True)
def _bp_idle_expired(S, c):
    """The node's idle timeout (connectionTimeout / keepAliveTimeout) closes the connection."""
    S.BC[c, BC_IDLE_SEQ] = -1
    _bp_idle_remove(S, c)
    S.BN[S.BC[c, BC_NODE], BN_IDLE_CLOSES] += 1
    _bp_close(S, c)


@njit(cache=True)
def _bp_acquire_expired(S, j):
    """mod_proxy `acquire`: no connection came in time, 503."""
    pool = S.JI[j, J_BPOOL]
    _bp_unwait(S, j)
    S.BN[pool % S.C[C_N_NODES], BN_ACQUIRE_TIMEOUTS] += 1
    S.RI[j // S.C[C_LEVELS], R_STATUS] = 503
    reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def _bp_read_expired(S, c):
    """The front's read timeout: the node never took the connection; the front gives up on
    it (withdrawn from the accept queue) and answers 502 (http) or 503 (ajp)."""
    BC = S.BC
    j, pool, node = BC[c, BC_JOB], BC[c, BC_POOL], BC[c, BC_NODE]
    BC[c, BC_READ_SEQ] = -1
    BC[c, BC_JOB] = -1
    pool_withdraw(S, S.BN[node, BN_PINS], j)
    S.BN[node, BN_READ_TIMEOUTS] += 1
    S.JI[j, J_BCONN] = -1
    _bp_forget(S, c)
    _bp_next_waiter(S, pool, node)
    S.RI[j // S.C[C_LEVELS], R_STATUS] = S.C[C_READ_STATUS]
    reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def _bp_child_exited(S, ch):
    """BackendPool._child_exited: the child's idle connections close with it (it exits only
    when it serves nothing), oldest first."""
    C, BC, BP = S.C, S.BC, S.BP
    if not C[C_BACKEND_POOLS]:
        return
    n = C[C_N_NODES]
    for node in range(n):
        if not S.BN[node, BN_POOLED]:
            continue
        pool = ch * n + node
        c = BP[pool, BP_IDLE_HEAD]
        BP[pool, BP_IDLE_HEAD] = -1
        BP[pool, BP_IDLE_TAIL] = -1
        while c >= 0:
            after = BC[c, BC_NEXT]
            S.BN[node, BN_IDLE] -= 1
            S.BN[node, BN_EXIT_CLOSES] += 1
            _bp_close(S, c)
            c = after


# --------------------------------------------------------------------------- mod_jk
# `sim.tiers.proxy.mod_jk.JkBackendPool` (mod_jk's ajp13 worker) on the pools above: the same
# endpoint cache per child and node, but a request that finds no free endpoint looks again
# every JK_SLEEP_DEF (`_jk_poll`) instead of waiting in line, connection_pool_timeout acts at
# each process's maintenance (`_jk_maintain`), and each request's `JkCall` makes up to
# `retries` attempts, each under `reply_timeout`, a connect whose SYNs the node's full accept
# queue drops retransmitting them.  The request's job at the node's level is the call (the
# endpoint, the attempt, its timers); each attempt's visit to the node runs on a *carrier*, a
# request row of its own at the same level (`_jk_carrier`), because the node keeps working on
# an attempt mod_jk gave up on while the next attempt is already there.  `reply_up` hands the
# answer of a carrier's visit to the call (`_jk_answered`).  mod_jk's timers share one
# calendar kind (EV_MOD_JK), the job and the timer's kind in its argument.
JK_LOOK, JK_GIVE_UP, JK_SYN, JK_CONNECT_FAILED, JK_RETRY, JK_REPLY = range(6)
JK_KIND_BITS = 3
JK_KIND_MASK = 7


@njit(cache=True)
def _jk_after(S, time, timer, j):
    return push(S, time, EV_MOD_JK, (j << JK_KIND_BITS) | timer)


@njit(cache=True)
def _jk_event(S, arg, seq):
    j = arg >> JK_KIND_BITS
    timer = arg & JK_KIND_MASK
    if timer == JK_LOOK:
        _jk_look(S, j)
    elif timer == JK_GIVE_UP:
        _jk_give_up(S, j)
    elif timer == JK_SYN:
        _jk_connect(S, j, S.JF[j, JF_JK_CONNECT_AT], S.JI[j, J_JK_SYNS])
    elif timer == JK_CONNECT_FAILED:
        S.BN[_jk_node(S, j), BN_JK_CONNECT_FAILURES] += 1
        _jk_attempt_failed(S, j, 503, True)
    elif timer == JK_RETRY:
        _jk_attempt(S, j)
    elif S.JI[j, J_JK_TIMER] == seq:  # JK_REPLY, not cancelled by the answer
        _jk_reply_expired(S, j)


@njit(cache=True)
def _jk_node(S, j):
    return S.JI[j, J_BPOOL] % S.C[C_N_NODES]


@njit(cache=True)
def _jk_maintain_due(S, pool, node):
    """JkBackendPool.serve: the process runs its maintenance (`wc_maintain`) at a request at
    least `worker.maintain` after its previous run, or at its first."""
    now = S.F[F_NOW]
    if now - S.BPF[pool, BPF_JK_MAINTAINED] >= S.BNF[node, BNF_JK_MAINTAIN]:
        S.BPF[pool, BPF_JK_MAINTAINED] = now
        _jk_maintain(S, pool, node, now)


@njit(cache=True)
def _jk_maintain(S, pool, node, now):
    """`ajp_maintain`: close the idle connections unused for longer than
    connection_pool_timeout, oldest first, until connection_pool_minsize are open.  (The idle
    list is in release order, which is the reference's sort by release time.)"""
    BC, BN = S.BC, S.BN
    timeout = S.BNF[node, BNF_JK_POOL_TIMEOUT]
    open_now = S.BP[pool, BP_OPEN]
    floor = BN[node, BN_JK_MIN_SIZE]
    closed = 0
    c = S.BP[pool, BP_IDLE_HEAD]
    while c >= 0:
        after = BC[c, BC_NEXT]
        if now - S.BCF[c, BCF_RELEASED] > timeout:
            _bp_idle_remove(S, c)
            BN[node, BN_TTL_CLOSES] += 1
            closed += 1
            _bp_close(S, c)
        if open_now <= floor + closed:
            break
        c = after


@njit(cache=True)
def _jk_poll(S, j, looks):
    """BackendPool._poll: no free endpoint at the look; sleep, then look again while looks x
    JK_SLEEP_DEF < connection_acquire_timeout, else give up."""
    node = _jk_node(S, j)
    S.JI[j, J_JK_LOOKS] = looks
    poll = S.BNF[node, BNF_JK_POLL]
    acquire = S.BNF[node, BNF_ACQUIRE]
    later = S.F[F_NOW] + poll
    if acquire >= 0 and float(looks) * poll >= acquire:
        _jk_after(S, later, JK_GIVE_UP, j)
    else:
        _jk_after(S, later, JK_LOOK, j)


@njit(cache=True)
def _jk_look(S, j):
    """BackendPool._look_again."""
    pool = S.JI[j, J_BPOOL]
    node = pool % S.C[C_N_NODES]
    c = _bp_pop_idle(S, pool)
    if c < 0:
        limit = S.BN[node, BN_MAX]
        if limit < 0 or S.BP[pool, BP_OPEN] < limit:
            c = _bp_open(S, pool, node)
    if c >= 0:
        _jk_send(S, c, j)
    else:
        _jk_poll(S, j, S.JI[j, J_JK_LOOKS] + 1)


@njit(cache=True)
def _jk_give_up(S, j):
    """JkBackendPool._give_up: no endpoint within connection_acquire_timeout, 503."""
    S.BN[_jk_node(S, j), BN_ACQUIRE_TIMEOUTS] += 1
    S.RI[j // S.C[C_LEVELS], R_STATUS] = 503
    reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def _jk_send(S, c, j):
    """JkBackendPool._send: the request holds endpoint c; its `ajp_service` starts."""
    JI = S.JI
    JI[j, J_JK_ENDPOINT] = c
    JI[j, J_JK_ATTEMPT] = 1
    JI[j, J_JK_VISIT] = -1
    JI[j, J_JK_TIMER] = -1
    _jk_attempt(S, j)


@njit(cache=True)
def _jk_attempt(S, j):
    """JkBackendPool._attempt: send on the endpoint's connection, or connect it first."""
    S.BN[_jk_node(S, j), BN_JK_ATTEMPTS] += 1
    c = S.JI[j, J_JK_ENDPOINT]
    if S.BC[c, BC_THREAD]:
        _jk_exchange(S, j, c, _jk_carrier(S, j))
    else:
        _jk_connect(S, j, S.F[F_NOW], 0)


@njit(cache=True)
def _jk_carrier(S, j):
    """A request row to carry an attempt of call j to the node: its job at j's level."""
    levels = S.C[C_LEVELS]
    r = _alloc_request(S, -1, 0, S.F[F_NOW])
    S.RI[r, R_STATE] = CARRIER
    S.RI[r, R_JK_CALL] = j
    S.RI[r, R_JK_ABANDONED] = 0
    # the node serves the call's own request (the reference passes it): its class's work
    S.RI[r, R_CLASS] = S.RI[j // levels, R_CLASS]
    visit = r * levels + j % levels
    S.JI[visit, J_STATION] = S.JI[j, J_STATION]
    S.JI[visit, J_VIA_MEMBER] = -1  # the call answers the balancer
    S.JI[visit, J_VIA_POOL] = -1
    return visit


@njit(cache=True)
def _jk_connect(S, j, started, syns):
    """JkBackendPool._connect: the node's connector accepts the new connection onto what it
    pins, queues it (the request is sent; the node serves it once it takes the connection),
    or its full accept queue drops the SYN: retransmitted after 1, 3, 7 ... s from the start,
    connect() giving up at socket_connect_timeout or after the last retransmission."""
    JI, BC = S.JI, S.BC
    now = S.F[F_NOW]
    c = JI[j, J_JK_ENDPOINT]
    node = BC[c, BC_NODE]
    visit = _jk_carrier(S, j)
    JI[visit, J_BCONN] = c
    p = S.BN[node, BN_PINS]
    status = GRANTED if p < 0 else pool_acquire(S, p, visit)
    if status == GRANTED:
        BC[c, BC_THREAD] = 1
        _jk_exchange(S, j, c, visit)
    elif status == QUEUED:
        JI[j, J_JK_VISIT] = visit
        _jk_start_timer(S, j)
    else:
        _free_request(S, visit // S.C[C_LEVELS])
        BNF = S.BNF
        give_up = BNF[node, BNF_JK_CONNECT]
        next_syn = BNF[node, BNF_JK_SYN_RTO] * float(2 ** (syns + 1) - 1)
        if syns < BNF[node, BNF_JK_SYN_RETRIES] and next_syn < give_up:
            JF = S.JF
            JF[j, JF_JK_CONNECT_AT] = started
            JI[j, J_JK_SYNS] = syns + 1
            _jk_after(S, now + (started + next_syn - now), JK_SYN, j)
        else:
            _jk_after(S, now + (started + give_up - now), JK_CONNECT_FAILED, j)


@njit(cache=True)
def _jk_accepted(S, visit):
    """JkBackendPool._accepted: a node thread took the connection out of the accept queue and
    serves its request, even if mod_jk has given up on it (it is in the socket's buffer)."""
    c = S.JI[visit, J_BCONN]
    S.BC[c, BC_THREAD] = 1
    _bp_node_nested(S, c, visit)


@njit(cache=True)
def _jk_exchange(S, j, c, visit):
    """JkBackendPool._exchange: the attempt's request goes to the node on c, under the reply
    timeout."""
    S.JI[j, J_JK_VISIT] = visit
    _jk_start_timer(S, j)
    S.JI[visit, J_BCONN] = c
    arrive(S, visit, S.JI[visit, J_STATION], -1, -1)


@njit(cache=True)
def _jk_start_timer(S, j):
    reply = S.BNF[_jk_node(S, j), BNF_JK_REPLY]
    if reply >= 0:
        S.JI[j, J_JK_TIMER] = _jk_after(S, S.F[F_NOW] + reply, JK_REPLY, j)


@njit(cache=True)
def _jk_reply_expired(S, j):
    """JkBackendPool._reply_expired: no reply within reply_timeout; mod_jk closes the
    connection, the node keeps the request.  The endpoint stays in the pool without a socket
    (the abandoned connection's count passes to it): the next attempt connects."""
    JI, BC, BN = S.JI, S.BC, S.BN
    JI[j, J_JK_TIMER] = -1
    visit = JI[j, J_JK_VISIT]
    JI[j, J_JK_VISIT] = -1
    S.RI[visit // S.C[C_LEVELS], R_JK_ABANDONED] = 1
    node = _jk_node(S, j)
    BN[node, BN_JK_REPLY_TIMEOUTS] += 1
    BN[node, BN_JK_ABANDONED] += 1
    old = JI[j, J_JK_ENDPOINT]
    JI[j, J_JK_ENDPOINT] = _bp_row(S, BC[old, BC_POOL], BC[old, BC_NODE])
    _jk_attempt_failed(S, j, 504, BN[node, BN_JK_RECOVERABLE] != 0)


@njit(cache=True)
def _jk_attempt_failed(S, j, status, recoverable):
    """JkBackendPool._attempt_failed: retry after retry_interval while attempts are left,
    else the endpoint goes back without a socket and the request fails with `status`."""
    JI = S.JI
    node = _jk_node(S, j)
    if recoverable and JI[j, J_JK_ATTEMPT] < S.BN[node, BN_JK_RETRIES]:
        JI[j, J_JK_ATTEMPT] += 1
        _jk_after(S, S.F[F_NOW] + S.BNF[node, BNF_JK_RETRY_INTERVAL], JK_RETRY, j)
        return
    # (no request ever waits in line for a mod_jk endpoint: `_next_waiter` finds none)
    _bp_forget(S, JI[j, J_JK_ENDPOINT])
    S.RI[j // S.C[C_LEVELS], R_STATUS] = status
    JI[j, J_BCONN] = -1
    reply_up(S, j, REPLY_FAIL)


@njit(cache=True)
def _jk_answered(S, visit):
    """JkBackendPool._answered: the node finished the visit of an attempt.  Abandoned, its
    response goes into a closed socket and the node closes the connection, freeing what it
    pinned; else the call's connection returns to the pool as `reply_up` goes on from the
    call's job (returned; -1: nothing more to answer)."""
    BC = S.BC
    r = visit // S.C[C_LEVELS]
    j = S.RI[r, R_JK_CALL]
    abandoned = S.RI[r, R_JK_ABANDONED]
    c = S.JI[visit, J_BCONN]
    S.JI[visit, J_BCONN] = -1
    _free_request(S, r)
    if abandoned:
        node = BC[c, BC_NODE]
        S.BN[node, BN_JK_ABANDONED_SERVED] += 1
        bound = BC[c, BC_THREAD]
        BC[c, BC_THREAD] = 0
        p = S.BN[node, BN_PINS]
        if bound and p >= 0:
            pool_release(S, p)  # may hand the thread to a connection in the accept queue
        _bp_free_row(S, c)
        return -1
    JI = S.JI
    JI[j, J_JK_VISIT] = -1
    JI[j, J_JK_TIMER] = -1  # the reply timeout goes stale
    JI[j, J_BCONN] = c
    return j


@njit(cache=True)
def _bp_free_row(S, c):
    """A connection row back to the free rows, without the pool's counts (an abandoned socket,
    whose count passed to its endpoint)."""
    counters = S.I
    top = counters[I_BC_FREE_TOP]
    S.BCFREE[top] = c
    counters[I_BC_FREE_TOP] = top + 1
    counters[I_BC_USED] -= 1


@njit(cache=True)
def reply_up(S, j, code):
    """The visit j answers its caller; a failure travels up the nested visits."""
    JI, JF, STI, BI = S.JI, S.JF, S.STI, S.BI
    levels = S.C[C_LEVELS]
    now = S.F[F_NOW]
    carriers = S.C[C_MOD_JK]
    while True:
        if carriers:
            r = j // levels
            if S.RI[r, R_STATE] == CARRIER and j % levels == S.RI[r, R_JK_CALL] % levels:
                # a mod_jk attempt's visit answered: on to its call, unless mod_jk gave up
                j = _jk_answered(S, j)
                if j < 0:
                    return
        c = JI[j, J_BCONN]
        if c >= 0:  # the response came back on a pooled connection: it returns first
            JI[j, J_BCONN] = -1
            _bp_released(S, c)
        via_pool = JI[j, J_VIA_POOL]
        if via_pool >= 0:  # the JDBC connection goes back before the caller resumes
            pool_release(S, via_pool)
        member = JI[j, J_VIA_MEMBER]
        if member >= 0:
            BI[member, B_OUTSTANDING] -= 1
        if j % levels == 0:
            _client_replied(S, j // levels, code)
            return
        caller = j - 1
        JF[caller, JF_DOWNSTREAM] += now - JF[caller, JF_CALL_STARTED]
        if code == REPLY_OK:
            s = JI[caller, J_STATION]
            cpu_run(S, STI[s, ST_CPU], _burst(S, s, caller), caller)
            return
        _close_visit(S, caller, False)
        j = caller
        code = REPLY_FAIL


@njit(cache=True)
def _finish(S, j, ok):
    _close_visit(S, j, ok)
    reply_up(S, j, REPLY_OK if ok else REPLY_FAIL)


@njit(cache=True)
def _disk_start(S, j):
    STI = S.STI
    s = S.JI[j, J_STATION]
    if pool_acquire(S, STI[s, ST_DISK_POOL], j) == GRANTED:
        push(S, S.F[F_NOW] + draw(S, STI[s, ST_DISK_STREAM]), EV_DISK, j)


@njit(cache=True)
def _computed(S, j):
    """A burst of visit j ended: the next downstream call, the non-CPU wait, the disk, the
    session replication, or done; or a replication burst ended."""
    JI, JF, STI = S.JI, S.JF, S.STI
    phase = JI[j, J_PHASE]
    if phase == PHASE_SERIALIZE:
        _serialized(S, j)
        return
    if phase == PHASE_APPLY:
        _applied(S, j)
        return
    if phase == PHASE_CLIENT:
        _host_done(S, j)
        return
    s = JI[j, J_STATION]
    if JI[j, J_CALLS_LEFT] > 0:
        JI[j, J_CALLS_LEFT] -= 1
        JF[j, JF_CALL_STARTED] = S.F[F_NOW]
        if STI[s, ST_DOWN] == DOWN_BALANCER:
            _dispatch(S, j + 1)
            return
        target = STI[s, ST_TARGET]
        p = STI[s, ST_JDBC]
        if p < 0:
            _forward(S, j + 1, target, -1)
            return
        status = pool_acquire(S, p, j)
        if status == GRANTED:
            arrive(S, j + 1, target, -1, p)
        elif status == REFUSED:
            _finish(S, j, False)
        return
    io = STI[s, ST_IO]
    if io >= 0:
        push(S, S.F[F_NOW] + draw(S, io), EV_IO, j)
    elif STI[s, ST_DISK_POOL] >= 0:
        _disk_start(S, j)
    elif STI[s, ST_NODE] >= 0 and (S.C[C_N_TIERS] > 0 or STI[s, ST_JVM] >= 0):
        _after_request(S, j)
    else:
        _finish(S, j, True)


# --------------------------------------------------------------------------- replication
@njit(cache=True)
def _replicate(S, j, tier):
    """AfterRequest: each replicated tier in turn (from `tier`) replicates what visit j's
    request changed, with the probability its trigger gives, once per invocation; then the
    visit ends (its thread held throughout: synchronous replication)."""
    RP, JI, JF = S.RP, S.JI, S.JF
    while tier < S.C[C_N_TIERS]:
        count = 0
        stream = int(RP[tier, RP_STREAM])
        fraction = RP[tier, RP_FRACTION]
        writes = _writes_session(S, j)
        if writes < 0:  # the tier's trigger decides, a draw per invocation
            for _ in range(int(RP[tier, RP_INVOCATIONS])):
                if draw(S, stream) < fraction:
                    count += 1
        elif writes:  # a class that writes the session replicates every invocation
            count = int(RP[tier, RP_INVOCATIONS])
        if count:
            JI[j, J_REP_TIER] = tier
            JI[j, J_REP_LEFT] = count
            JF[j, JF_REP_STARTED] = S.F[F_NOW]
            _serialize(S, j)
            return
        tier += 1
    _finish(S, j, True)


@njit(cache=True)
def _serialize(S, j):
    """The sender serializes one message on its own CPU (Replicator._next)."""
    S.JI[j, J_PHASE] = PHASE_SERIALIZE
    c = S.STI[S.JI[j, J_STATION], ST_CPU]
    cpu_run(S, c, S.RP[S.JI[j, J_REP_TIER], RP_SERIALIZE_S], j)


@njit(cache=True)
def _holds_replica(S, home, member):
    """SessionTable.replicated: does `member` hold a copy of the sessions made on `home`?
    Every web-tier replication sends them to its receivers."""
    RP = S.RP
    n = S.C[C_N_NODES]
    for t in range(S.C[C_N_TIERS]):
        if RP[t, RP_WEB]:
            buddies = int(RP[t, RP_BUDDIES])
            if buddies == 0 or 1 <= (member - home) % n <= buddies:
                return True
    return False


@njit(cache=True)
def _node_of(S, j):
    return S.STI[S.JI[j, J_STATION], ST_NODE]


@njit(cache=True)
def _tx(S, node):
    return S.C[C_NET_TX0] + (node if S.C[C_NET_SWITCHED] else 0)


@njit(cache=True)
def _rx(S, node):
    return S.C[C_NET_RX0] + (node if S.C[C_NET_SWITCHED] else 0)


@njit(cache=True)
def _serialized(S, j):
    """Replicator._send (sync): the message goes out to every receiver, and the thread
    waits for all their acknowledgements."""
    RP, JI = S.RP, S.JI
    tier = JI[j, J_REP_TIER]
    nbytes = RP[tier, RP_BYTES]
    RP[tier, RP_REPLICATED] += 1
    RP[tier, RP_BYTES_SENT] += nbytes
    sender = _node_of(S, j)
    n = S.C[C_N_NODES]
    buddies = int(RP[tier, RP_BUDDIES])
    JI[j, J_PENDING] = (n - 1) if buddies == 0 else buddies
    if S.C[C_MULTICAST]:
        _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, -1)
    else:
        # one unicast copy per receiver, in the receivers' order
        if buddies == 0:
            for r in range(n):
                if r != sender:
                    _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, r)
        else:
            for step in range(1, buddies + 1):
                _link_send(S, _tx(S, sender), nbytes, FRAME_OUT, j, (sender + step) % n)


@njit(cache=True)
def _aux_job(S):
    """A job row of its own for a frame or a receiver's work (a request row taken for it)."""
    return _alloc_request(S, -1, 0, 0.0) * S.C[C_LEVELS]


@njit(cache=True)
def _link_send(S, link, nbytes, phase, owner, peer):
    """Link.send: the frame waits for the link (FIFO), takes nbytes x 8 / bandwidth on it,
    then the latency in flight."""
    JI, JF = S.JI, S.JF
    f = _aux_job(S)
    JI[f, J_PHASE] = phase
    JI[f, J_OWNER] = owner
    JI[f, J_PEER] = peer
    JI[f, J_LINK] = link
    JF[f, JF_TX_S] = nbytes * S.CF[CF_NET_S_PER_BYTE]
    if pool_acquire(S, link, f) == GRANTED:
        push(S, S.F[F_NOW] + JF[f, JF_TX_S], EV_LINK_SENT, f)


@njit(cache=True)
def _arrived(S, owner, receiver):
    """A message reached a receiver, which applies it on its CPU."""
    JI = S.JI
    a = _aux_job(S)
    station = S.BI[receiver, B_STATION]
    JI[a, J_STATION] = station
    JI[a, J_PHASE] = PHASE_APPLY
    JI[a, J_OWNER] = owner
    JI[a, J_PEER] = receiver
    cpu_run(S, S.STI[station, ST_CPU], S.RP[JI[owner, J_REP_TIER], RP_APPLY_S], a)


@njit(cache=True)
def _applied(S, a):
    """The receiver acknowledges, back over the network (Network.reply)."""
    JI = S.JI
    owner, receiver = JI[a, J_OWNER], JI[a, J_PEER]
    _free_request(S, a // S.C[C_LEVELS])
    ack = S.RP[JI[owner, J_REP_TIER], RP_ACK_BYTES]
    if S.C[C_NET_SWITCHED]:
        _link_send(S, _tx(S, receiver), ack, FRAME_ACK_OUT, owner, -1)
    else:
        _link_send(S, _tx(S, receiver), ack, FRAME_ACK_IN, owner, -1)


@njit(cache=True)
def _link_arrived(S, f):
    """A frame came out of its link's latency: fan out, apply, relay the ack, or count it."""
    JI = S.JI
    phase, owner, peer = JI[f, J_PHASE], JI[f, J_OWNER], JI[f, J_PEER]
    _free_request(S, f // S.C[C_LEVELS])
    if phase == FRAME_OUT:  # Network._fan_out
        tier = JI[owner, J_REP_TIER]
        nbytes = S.RP[tier, RP_BYTES]
        switched = S.C[C_NET_SWITCHED]
        if peer >= 0:
            if switched:
                _link_send(S, _rx(S, peer), nbytes, FRAME_IN, owner, peer)
            else:
                _arrived(S, owner, peer)
            return
        sender = _node_of(S, owner)
        n = S.C[C_N_NODES]
        buddies = int(S.RP[tier, RP_BUDDIES])
        count = n - 1 if buddies == 0 else buddies
        for i in range(count):
            # every other node in order, or the next buddies in ring order
            r = (i if i < sender else i + 1) if buddies == 0 else (sender + i + 1) % n
            if switched:
                _link_send(S, _rx(S, r), nbytes, FRAME_IN, owner, r)
            else:
                _arrived(S, owner, r)
    elif phase == FRAME_IN:
        _arrived(S, owner, peer)
    elif phase == FRAME_ACK_OUT:  # Network._to_rx: on to the sender's incoming link
        ack = S.RP[JI[owner, J_REP_TIER], RP_ACK_BYTES]
        _link_send(S, _rx(S, _node_of(S, owner)), ack, FRAME_ACK_IN, owner, -1)
    else:
        _acked(S, owner)


@njit(cache=True)
def _acked(S, j):
    """Replicator._acked (sync): with the last acknowledgement the thread goes on: the next
    invocation's message, the next tier, or the end of the visit."""
    JI = S.JI
    JI[j, J_PENDING] -= 1
    if JI[j, J_PENDING]:
        return
    left = JI[j, J_REP_LEFT] - 1
    JI[j, J_REP_LEFT] = left
    if left:
        _serialize(S, j)
        return
    tier = JI[j, J_REP_TIER]
    S.RP[tier, RP_WAIT_SUM] += S.F[F_NOW] - S.JF[j, JF_REP_STARTED]
    JI[j, J_PHASE] = PHASE_VISIT
    _replicate(S, j, tier + 1)


# --------------------------------------------------------------------------- the JVM, ab run again
# `sim.tiers.appserver.jvm`: a node's heap, its young and full collections as stop-the-world
# pauses of the node's CPU (`ProcessorSharingCPU.pause`), the sessions it holds (its own and
# the replicas of other nodes'), OutOfMemoryError and the JIT's warm-up; and `ab` run again
# (`ApacheBench` with `repeat`), whose runs are windows of their own.  A JVM's sessions are
# its `OrderedDict` of expiry times, least recently accessed first: a queue of places
# (JSE[v, head:tail]) in access order.  Clients that keep no cookies make a new session per
# request (NO_KEY).  With cookies a session's key is user x nodes + node (a closed user, or
# a session client's row; `JM[v, key]` its place): a session touched again takes a new
# place at the end and leaves its old one DEAD, which the sweep skips, as
# `OrderedDict.move_to_end` moves it.  When a session client's row is freed for a new
# session, the old session's places lose their key (`_jvm_session_ended`): it stays held
# until it expires, as the reference's (node, session number) does.
(
    JV_CPU,  # the node's CPU
    JV_YOUNG_GCS,
    JV_FULL_GCS,
    JV_OVER_LIMIT,  # full collections in a row over both GC overhead limits
    JV_OOM,  # OutOfMemoryError: 0 none, OOM_HEAP_SPACE, OOM_OVERHEAD
    JV_SERVED,  # requests served (the JIT's warm-up)
    JV_SESS_HEAD,  # the sessions' places: JSE[v, head:tail] (some DEAD with cookies)
    JV_SESS_TAIL,
    JV_SESSIONS,  # sessions held (the places not DEAD)
    JV_NODE,  # the node's index (its sessions' keys with cookies)
    JV_CREATES,  # jvm.creates_sessions
    JV_OVERHEAD_LIMIT,  # -XX:+UseGCOverheadLimit
    JV_WARMS,  # jvm.jit_warmup_requests > 0
    JV_HOLDERS,  # JVMs holding replicas of its sessions: JH[v, :this]
    JV_PAUSED,  # its CPU is inside a stop-the-world pause
    JV_RESUME,  # the sequence number of the pause's end (EV_CPU_RESUME)
    JV_FROZEN_HEAD,  # the bursts the pause holds, in order (linked by J_NEXT; work in JF_TAG)
    JV_FROZEN_TAIL,
    N_JV,
) = range(19)
NO_KEY, DEAD = -1, -2  # JQK: a session nobody touches again; a place its session left
(
    JVF_HEAP,  # [bytes]
    JVF_YOUNG,
    JVF_EDEN,
    JVF_OLD_CAPACITY,
    JVF_BASELINE,
    JVF_SESSION_BYTES,
    JVF_ALLOCATION,
    JVF_SESSION_TIMEOUT,  # [s]
    JVF_EXPIRY_CHECK,
    JVF_YOUNG_PAUSE,
    JVF_YOUNG_PER_MB,
    JVF_FULL_PAUSE,
    JVF_FULL_PER_MB,
    JVF_TIME_LIMIT,
    JVF_FREE_LIMIT,
    JVF_NON_HEAP_MB,
    JVF_COLD,
    JVF_WARM,
    JVF_WARMUP,
    JVF_EDEN_USED,  # the heap's state [bytes]
    JVF_NEW_LIVE,
    JVF_OLD_USED,
    JVF_YOUNG_RESIDENT,
    JVF_HIGH_WATER,
    JVF_TOUCHED,
    JVF_FACTOR,  # the JIT's demand multiplier now
    JVF_PAUSED_UNTIL,  # the end of the latest collection
    JVF_GC_TIME,
    JVF_LAST_FULL_END,
    JVF_GC_AT_LAST_FULL,
    JVF_CPU_UNTIL,  # the end of the CPU's pause
    N_JVF,
) = range(32)
OOM_HEAP_SPACE, OOM_OVERHEAD = 1, 2
MIB = 1024.0 * 1024.0
OVERHEAD_LIMIT_COLLECTIONS = 5  # HotSpot AdaptiveSizePolicyGCTimeLimitThreshold


@njit(cache=True)
def _frozen_append(S, v, j, work):
    """A burst held by JVM v's pause (`_PausedCPU.run`): it runs `work` when the pause ends."""
    JV, JI = S.JV, S.JI
    S.JF[j, JF_TAG] = work
    JI[j, J_NEXT] = -1
    tail = JV[v, JV_FROZEN_TAIL]
    if tail >= 0:
        JI[tail, J_NEXT] = j
    else:
        JV[v, JV_FROZEN_HEAD] = j
    JV[v, JV_FROZEN_TAIL] = j


@njit(cache=True)
def _cpu_pause(S, c, until):
    """ProcessorSharingCPU.pause: freeze every burst on CPU c until `until`; bursts due now
    finish, the others keep their remaining work; a pause inside a pause extends it."""
    CPI, CPF, JI, JF, JV, JVF = S.CPI, S.CPF, S.JI, S.JF, S.JV, S.JVF
    v = CPI[c, CP_JVM]
    now = S.F[F_NOW]
    if JV[v, JV_PAUSED]:
        if until > JVF[v, JVF_CPU_UNTIL]:
            JVF[v, JVF_CPU_UNTIL] = until
            JV[v, JV_RESUME] = push(S, now + (until - now), EV_CPU_RESUME, c)
        return
    if until <= now:
        return
    _advance(S, c, now)
    speed = CPF[c, CPF_SPEED]
    if CPI[c, CP_UNSHARED]:
        kept = 0
        j = CPI[c, CP_RUN_HEAD]
        while j >= 0:
            after = JI[j, J_NEXT]
            finish = JF[j, JF_FINISH]
            if finish <= now:
                kept += 1  # its calendar entry is due at this instant
            else:
                _run_remove(S, c, j)
                JI[j, J_BURST_SEQ] = -1  # its calendar entry is stale
                _frozen_append(S, v, j, (finish - now) * speed)
            j = after
        CPI[c, CP_N] = kept
    else:
        CPI[c, CP_WAKEUP] = -1
        heap = S.CPH[c]
        size = CPI[c, CP_HEAP_N]
        virtual = CPF[c, CPF_VIRTUAL]
        while size > 0:  # in (tag, sequence) order
            j = heap[0]
            size -= 1
            if size > 0:
                heap[0] = heap[size]
                _tag_siftup(heap, JF, JI, size, 0)
            left = JF[j, JF_TAG] - virtual
            _frozen_append(S, v, j, left if left > 0.0 else 0.0)
        CPI[c, CP_HEAP_N] = 0
        CPI[c, CP_UNSHARED] = 1
        CPI[c, CP_N] = 0
        CPF[c, CPF_RATE] = 0.0
    JVF[v, JVF_CPU_UNTIL] = until
    JV[v, JV_RESUME] = push(S, now + (until - now), EV_CPU_RESUME, c)
    JV[v, JV_PAUSED] = 1


@njit(cache=True)
def _cpu_resumed(S, c):
    """ProcessorSharingCPU._resumed: the held bursts run, in the order they were held."""
    JV, JI = S.JV, S.JI
    v = S.CPI[c, CP_JVM]
    JV[v, JV_PAUSED] = 0
    JV[v, JV_RESUME] = -1
    S.CPF[c, CPF_LAST] = S.F[F_NOW]
    j = JV[v, JV_FROZEN_HEAD]
    JV[v, JV_FROZEN_HEAD] = -1
    JV[v, JV_FROZEN_TAIL] = -1
    while j >= 0:
        after = JI[j, J_NEXT]
        cpu_run(S, c, S.JF[j, JF_TAG], j)
        j = after


@njit(cache=True)
def _jvm_start(S):
    """Each JVM that creates sessions starts its expiry sweep (Jvm.__init__), node by node."""
    JV, JVF = S.JV, S.JVF
    now = S.F[F_NOW]
    for v in range(S.C[C_N_JVMS]):
        if JV[v, JV_CREATES]:
            push(S, now + JVF[v, JVF_EXPIRY_CHECK], EV_SWEEP, v)


@njit(cache=True)
def _jvm_sweep(S, v):
    """Jvm._sweep: expired sessions become garbage in the old generation."""
    JV, JSE, JQK = S.JV, S.JSE, S.JQK
    now = S.F[F_NOW]
    head, tail = JV[v, JV_SESS_HEAD], JV[v, JV_SESS_TAIL]
    while head < tail:
        key = JQK[v, head]
        if key != DEAD:
            if JSE[v, head] > now:
                break
            if key >= 0:
                S.JM[v, key] = -1
            JV[v, JV_SESSIONS] -= 1
        head += 1
    JV[v, JV_SESS_HEAD] = head
    push(S, now + S.JVF[v, JVF_EXPIRY_CHECK], EV_SWEEP, v)


@njit(cache=True)
def _jvm_hold(S, v, key, expires):
    """Jvm._hold: create or touch the session `key` (NO_KEY: a new one); returns the live
    bytes newly allocated for it."""
    JV, JQK = S.JV, S.JQK
    tail = JV[v, JV_SESS_TAIL]
    S.JSE[v, tail] = expires
    JQK[v, tail] = key
    JV[v, JV_SESS_TAIL] = tail + 1
    if key >= 0:
        JM = S.JM
        held = JM[v, key]
        JM[v, key] = tail
        if held >= 0:  # touched: from its place to the end (OrderedDict.move_to_end)
            JQK[v, held] = DEAD
            return 0.0
    JV[v, JV_SESSIONS] += 1
    return S.JVF[v, JVF_SESSION_BYTES]


@njit(cache=True)
def _jvm_session_ended(S, row):
    """A session client's row is free (its session and every request of it ended): the
    session's sessions in the JVMs keep their places but no longer answer to the row's keys,
    which the row's next session will use."""
    JM, JQK = S.JM, S.JQK
    nodes = S.C[C_N_NODES]
    for v in range(S.C[C_N_JVMS]):
        for node in range(nodes):
            key = row * nodes + node
            if key < JM.shape[1]:
                held = JM[v, key]
                if held >= 0:
                    JQK[v, held] = NO_KEY
                    JM[v, key] = -1


@njit(cache=True)
def _jvm_needs_room(S):
    """Room for the sessions of the worst event: every live visit ending on a node at once,
    each taking at most one place (a session, its own or a replica) in a JVM; and, with
    cookies, room for the keys of every user (or session client's row)."""
    if S.C[C_JVM_COOKIES] and S.UI.shape[0] * S.C[C_N_NODES] > S.JM.shape[1]:
        return True
    JV = S.JV
    last = 0
    for v in range(S.C[C_N_JVMS]):
        last = max(last, JV[v, JV_SESS_TAIL])
    return last + S.C[C_LEVELS] * S.I[I_REQ_USED] + 8 > S.JSE.shape[1]


@njit(cache=True)
def _jvm_live(S, v):
    """Jvm.live_bytes: the baseline and every session held."""
    JVF = S.JVF
    return JVF[v, JVF_BASELINE] + S.JV[v, JV_SESSIONS] * JVF[v, JVF_SESSION_BYTES]


@njit(cache=True)
def _jvm_full_collection(S, v, begin, young_pause):
    """Jvm._full_collection: mark-sweep-compact after a failed promotion; returns its pause."""
    JV, JVF = S.JV, S.JVF
    live = _jvm_live(S, v)
    pause = JVF[v, JVF_FULL_PAUSE] + JVF[v, JVF_FULL_PER_MB] * live / MIB
    JV[v, JV_FULL_GCS] += 1
    capacity = JVF[v, JVF_OLD_CAPACITY]
    old = live if live <= capacity else capacity
    JVF[v, JVF_OLD_USED] = old
    if old > JVF[v, JVF_HIGH_WATER]:
        JVF[v, JVF_HIGH_WATER] = old
    resident = live - old
    JVF[v, JVF_YOUNG_RESIDENT] = resident
    if resident >= JVF[v, JVF_EDEN]:
        JV[v, JV_OOM] = OOM_HEAP_SPACE
        return pause
    # -XX:+UseGCOverheadLimit, judged over the time since the previous full collection
    end = begin + young_pause + pause
    gc_time_at_end = JVF[v, JVF_GC_TIME] + young_pause + pause
    elapsed = end - JVF[v, JVF_LAST_FULL_END]
    in_gc = (gc_time_at_end - JVF[v, JVF_GC_AT_LAST_FULL]) / elapsed if elapsed > 0 else 1.0
    heap = JVF[v, JVF_HEAP]
    over = in_gc > JVF[v, JVF_TIME_LIMIT] and heap - live < JVF[v, JVF_FREE_LIMIT] * heap
    JV[v, JV_OVER_LIMIT] = JV[v, JV_OVER_LIMIT] + 1 if over else 0
    if JV[v, JV_OVERHEAD_LIMIT] and JV[v, JV_OVER_LIMIT] >= OVERHEAD_LIMIT_COLLECTIONS:
        JV[v, JV_OOM] = OOM_OVERHEAD
    JVF[v, JVF_LAST_FULL_END] = end
    JVF[v, JVF_GC_AT_LAST_FULL] = gc_time_at_end
    return pause


@njit(cache=True)
def _jvm_allocate(S, v, nbytes, live):
    """Jvm._allocate: a full eden triggers a young collection (and perhaps a full one), a
    pause of the node's CPU; returns how long from now the node is paused (0: none)."""
    JV, JVF = S.JV, S.JVF
    JVF[v, JVF_EDEN_USED] += nbytes
    JVF[v, JVF_NEW_LIVE] += live
    if JVF[v, JVF_EDEN_USED] < JVF[v, JVF_EDEN] - JVF[v, JVF_YOUNG_RESIDENT]:
        return 0.0
    now = S.F[F_NOW]
    paused_until = JVF[v, JVF_PAUSED_UNTIL]
    begin = paused_until if paused_until > now else now  # after a pause under way
    JVF[v, JVF_TOUCHED] = JVF[v, JVF_YOUNG]
    promoted = JVF[v, JVF_NEW_LIVE]
    young_pause = JVF[v, JVF_YOUNG_PAUSE] + JVF[v, JVF_YOUNG_PER_MB] * promoted / MIB
    JV[v, JV_YOUNG_GCS] += 1
    JVF[v, JVF_EDEN_USED] = 0.0
    JVF[v, JVF_NEW_LIVE] = 0.0
    pause = young_pause
    if JVF[v, JVF_OLD_USED] + promoted <= JVF[v, JVF_OLD_CAPACITY]:
        JVF[v, JVF_OLD_USED] += promoted
        if JVF[v, JVF_OLD_USED] > JVF[v, JVF_HIGH_WATER]:
            JVF[v, JVF_HIGH_WATER] = JVF[v, JVF_OLD_USED]
    else:
        pause += _jvm_full_collection(S, v, begin, young_pause)
    until = begin + pause
    JVF[v, JVF_PAUSED_UNTIL] = until
    JVF[v, JVF_GC_TIME] += pause
    _cpu_pause(S, JV[v, JV_CPU], until)
    return until - now


@njit(cache=True)
def _jvm_served(S, v, r):
    """Jvm.served: request r ends on JVM v's node: the JIT's count, its session (and the
    replicas), its allocation.  Returns how long its response waits for a collection it
    triggered (0: none), or -1 once the JVM has thrown OutOfMemoryError."""
    JV, JVF = S.JV, S.JVF
    if JV[v, JV_OOM]:
        return -1.0
    JV[v, JV_SERVED] += 1
    if JV[v, JV_WARMS]:
        cold, warm = JVF[v, JVF_COLD], JVF[v, JVF_WARM]
        JVF[v, JVF_FACTOR] = warm + (cold - warm) * math.exp(-JV[v, JV_SERVED] / JVF[v, JVF_WARMUP])
    live = 0.0
    if JV[v, JV_CREATES]:
        expires = S.F[F_NOW] + JVF[v, JVF_SESSION_TIMEOUT]
        # with cookies the key (node name, user); else a new session
        cookies = S.C[C_JVM_COOKIES]
        owner = r
        if S.RI[r, R_STATE] == CARRIER:  # a mod_jk attempt: the call's request is served
            owner = S.RI[r, R_JK_CALL] // S.C[C_LEVELS]
        key = S.RI[owner, R_USER] * S.C[C_N_NODES] + JV[v, JV_NODE] if cookies else NO_KEY
        live = _jvm_hold(S, v, key, expires)
        for i in range(JV[v, JV_HOLDERS]):  # Jvm.hold_replica
            h = S.JH[v, i]
            if JV[h, JV_OOM]:
                continue
            replica = _jvm_hold(S, h, key, expires)
            if replica:
                _jvm_allocate(S, h, replica, replica)
    wait = _jvm_allocate(S, v, JVF[v, JVF_ALLOCATION], live)
    if JV[v, JV_OOM]:
        return -1.0
    return wait


@njit(cache=True)
def _after_request(S, j):
    """Station.post of a node: the JVM's accounting (JvmAfterRequest), holding the thread
    through a collection the request triggered, then session replication."""
    v = S.STI[S.JI[j, J_STATION], ST_JVM]
    if v >= 0:
        wait = _jvm_served(S, v, j // S.C[C_LEVELS])
        if wait < 0:
            _finish(S, j, False)  # OutOfMemoryError: the container answers 500
            return
        if wait > 0:
            push(S, S.F[F_NOW] + wait, EV_JVM_RESUME, j)
            return
    _replicate(S, j, 0)


@njit(cache=True)
def _jvm_snapshot(S, row, k):
    """Each JVM's counters (`Jvm.counters`) into `row` from column k; the next column."""
    JV, JVF = S.JV, S.JVF
    v = row
    for m in range(S.C[C_N_JVMS]):
        v[k] = JV[m, JV_YOUNG_GCS]
        v[k + 1] = JV[m, JV_FULL_GCS]
        v[k + 2] = JVF[m, JVF_GC_TIME]
        v[k + 3] = JV[m, JV_SESSIONS]
        v[k + 4] = _jvm_live(S, m) / MIB
        v[k + 5] = JVF[m, JVF_OLD_USED] / MIB
        touched, eden = JVF[m, JVF_TOUCHED], JVF[m, JVF_EDEN_USED]
        v[k + 6] = (
            JVF[m, JVF_NON_HEAP_MB]
            + ((touched if touched >= eden else eden) + JVF[m, JVF_HIGH_WATER]) / MIB
        )
        v[k + 7] = 1.0 if JV[m, JV_OOM] else 0.0
        k += 8
    return k


@njit(cache=True)
def _ab_queue(S, loop):
    """An ab loop to send once the current continuation returns (`_ab_send_queued`)."""
    counters = S.I
    queue = S.UFREE
    tail = (counters[I_AB_HEAD] + counters[I_AB_WAITING]) % queue.shape[0]
    queue[tail] = loop
    counters[I_AB_WAITING] += 1


@njit(cache=True)
def _ab_mark(S):
    """ab run again: the recorder's row and histogram at a run's start or end
    (`_record_batches`' marks)."""
    counters = S.I
    m = counters[I_AB_MARKS]
    _snapshot(S, S.BROWS[m])
    _copy_histogram(S.HIST, S.BHIST, m)
    counters[I_AB_MARKS] = m + 1


@njit(cache=True)
def _ab_run_ended(S):
    """ApacheBench.done at a run's last outcome: its window ends; ab starts again (its -c
    loops in order, the servers' state carried over) until `repeat` runs were made."""
    C, counters = S.C, S.I
    if C[C_REPEAT] > 1:
        _ab_mark(S)
    if counters[I_AB_BATCH] >= C[C_REPEAT]:
        _clients_finished(S)
        return
    counters[I_AB_BATCH] += 1
    counters[I_ISSUED] = 0
    counters[I_OUTCOMES] = 0
    for loop in range(C[C_USERS]):
        _ab_queue(S, loop)


# --------------------------------------------------------------------------- balancer
@njit(cache=True)
def _pick(S):
    C, counters = S.C, S.I
    n = C[C_N_MEMBERS]
    policy = C[C_POLICY]
    if policy == POLICY_ROUND_ROBIN:
        index = counters[I_RR_NEXT]
        counters[I_RR_NEXT] = (index + 1) % n
        return index
    if policy == POLICY_RANDOM:
        return int(draw(S, C[C_ST_BALANCER]) * n)
    if policy == POLICY_BYREQUESTS:
        BF = S.BF
        total = 0.0
        best = -1
        for i in range(n):
            BF[i, BF_LBSTATUS] += BF[i, BF_WEIGHT]
            total += BF[i, BF_WEIGHT]
            if best < 0 or BF[i, BF_LBSTATUS] > BF[best, BF_LBSTATUS]:
                best = i
        BF[best, BF_LBSTATUS] -= total
        return best
    if policy in (POLICY_SQF, POLICY_LEAST_OUTSTANDING):
        return _pick_by_load(S, policy)
    return 0  # static: the first active member


@njit(cache=True)
def _dispatch(S, j):
    """The balancer sends the request of job j's row to a member (j is the member's visit)."""
    C, UI, BI, counters = S.C, S.UI, S.BI, S.I
    user = S.RI[j // C[C_LEVELS], R_USER]
    keeps = C[C_KEEPS_SESSIONS]
    member = -1
    if keeps:
        route = UI[user, U_ROUTE]
        if route >= 0 and C[C_STICKY]:
            member = route
            if C[C_POLICY] == POLICY_BYREQUESTS:  # a sticky request still counts
                BF = S.BF
                total = 0.0
                for i in range(C[C_N_MEMBERS]):
                    BF[i, BF_LBSTATUS] += BF[i, BF_WEIGHT]
                    total += BF[i, BF_WEIGHT]
                BF[member, BF_LBSTATUS] -= total
    if member < 0:
        member = _pick(S)
    BI[member, B_OUTSTANDING] += 1
    BI[member, B_DISPATCHED] += 1
    if keeps:
        # The session table: a session found on another member is lost and made anew.
        route = UI[user, U_ROUTE]
        if route != member:
            if route < 0:
                counters[I_SESS_CREATED] += 1
            elif not _holds_replica(S, route, member):
                counters[I_SESS_LOST] += 1
                counters[I_SESS_CREATED] += 1
            UI[user, U_ROUTE] = member
    _forward(S, j, BI[member, B_STATION], member)


# --------------------------------------------------------------------------- clients
@njit(cache=True)
def _alloc_request(S, user, attempt, sent):
    counters, RI, RF = S.I, S.RI, S.RF
    top = counters[I_RFREE_TOP] - 1
    counters[I_RFREE_TOP] = top
    counters[I_REQ_USED] += 1
    r = S.RFREE[top]
    RI[r, R_STATE] = PENDING
    RI[r, R_USER] = user
    RI[r, R_ATTEMPT] = attempt
    RI[r, R_SYN] = 0
    RI[r, R_TIMER] = -1
    RI[r, R_CONN] = -1
    RI[r, R_CHILD] = -1
    RI[r, R_STATUS] = 0
    RI[r, R_CLASS] = -1
    RF[r, RF_SENT] = sent
    JI, levels = S.JI, S.C[C_LEVELS]
    for j in range(r * levels, r * levels + levels):
        JI[j, J_BCONN] = -1
    if user >= 0 and S.C[C_CLIENT] == CLIENT_SESSIONS:
        S.UI[user, U_REFS] += 1
    return r


@njit(cache=True)
def _free_request(S, r):
    counters = S.I
    S.RI[r, R_STATE] = FREE
    c = S.RI[r, R_CONN]
    if c >= 0:
        S.RI[r, R_CONN] = -1
        _conn_unref(S, c)
    user = S.RI[r, R_USER]
    if user >= 0 and S.C[C_CLIENT] == CLIENT_SESSIONS:
        _session_unref(S, user)
    top = counters[I_RFREE_TOP]
    S.RFREE[top] = r
    counters[I_RFREE_TOP] = top + 1
    counters[I_REQ_USED] -= 1


@njit(cache=True)
def _session_unref(S, session):
    """One reference to the session's row fewer; with none left the row is free."""
    UI, counters = S.UI, S.I
    UI[session, U_REFS] -= 1
    if UI[session, U_REFS] == 0:
        if S.C[C_JVM_COOKIES]:  # nothing of the session is left to touch its sessions
            _jvm_session_ended(S, session)
        top = counters[I_UFREE_TOP]
        S.UFREE[top] = session
        counters[I_UFREE_TOP] = top + 1
        counters[I_USR_USED] -= 1


@njit(cache=True)
def _enter(S, r):
    C = S.C
    j = r * C[C_LEVELS]
    if C[C_ENTRY_KIND] == ENTRY_BALANCER:
        _dispatch(S, j)
    else:
        arrive(S, j, C[C_ENTRY_TARGET], -1, -1)


@njit(cache=True)
def _send(S, r):
    counters, C, CF, RI = S.I, S.C, S.CF, S.RI
    now = S.F[F_NOW]
    inside = counters[I_ARRIVED] - counters[I_COMPLETED] - counters[I_ERRORS] - counters[I_LATE]
    if inside > C[C_MAX_INSIDE]:
        counters[I_RUNAWAY] = inside
        counters[I_STOP] = 1
        return
    new_connection = True
    if C[C_CLIENT_KEEP_ALIVE]:
        new_connection = _connection_for(S, r)
    RI[r, R_STATE] = IN_FLIGHT
    counters[I_IN_FLIGHT] += 1
    counters[I_ARRIVED] += 1
    if RI[r, R_ATTEMPT]:
        counters[I_RETRIED] += 1
    if C[C_CLASSES]:
        _choose_class(S, r)
    if C[C_HAS_TIMEOUT]:
        # The timer covers the whole attempt, connection set-up included.
        RI[r, R_TIMER] = push(S, now + CF[CF_TIMEOUT], EV_TIMEOUT, r)
    if C[C_HOST_STATION] >= 0:
        _host_run(S, r, new_connection)
    elif new_connection and C[C_ST_CONNECT] >= 0:
        push(S, now + draw(S, C[C_ST_CONNECT]), EV_CONNECTED, r)
    else:
        _enter(S, r)


@njit(cache=True)
def _record(S, response):
    """Recorder.complete: counts, the histogram, batch boundaries, the stop rule."""
    counters, F, CF = S.I, S.F, S.CF
    counters[I_COMPLETED] += 1
    F[F_RESPONSE_SUM] += response
    hist = S.HIST
    if response < CF[CF_BIN_MIN]:
        index = 0
    else:
        raw = math.floor(math.log(response / CF[CF_BIN_MIN]) / CF[CF_BIN_LOG_GROWTH]) + 1
        last = hist.shape[0] - 1
        index = int(raw) if raw < last else last
    hist[index] += 1
    if counters[I_RECORDING]:
        counters[I_PENDING] += 1
        if counters[I_PENDING] >= counters[I_BATCH]:
            _boundary(S)
            counters[I_PENDING] = 0
    marks = S.MARKS
    m = counters[I_MARK_NEXT]
    if m < marks.shape[0] and counters[I_COMPLETED] >= marks[m]:
        # points of a grid of completions (Recorder.at_completions), after the batch row
        while m < marks.shape[0] and counters[I_COMPLETED] >= marks[m]:
            _take(S)
            m += 1
        counters[I_MARK_NEXT] = m
    if counters[I_COMPLETED] >= counters[I_STOP_AT]:
        counters[I_STOP_AT] = NEVER
        counters[I_STOP] = 1


@njit(cache=True)
def _done(S, user):
    """The user's request has had its final outcome (answered, or given up)."""
    C, counters, UI = S.C, S.I, S.UI
    now = S.F[F_NOW]
    kind = C[C_CLIENT]
    if kind == CLIENT_CLOSED:
        counters[I_THINKING] += 1
        push(S, now + draw(S, _think_stream(S, user)), EV_THINK, user)
    elif kind == CLIENT_SESSIONS:
        if UI[user, U_REMAINING] > 0:
            push(S, now + draw(S, _think_stream(S, user)), EV_SESSION_THINK, user)
        else:
            counters[I_SESS_ENDED] += 1
            c = UI[user, U_CONN]
            if c >= 0:  # the session's connection lives on only for the front
                UI[user, U_CONN] = -1
                _conn_unref(S, c)
            UI[user, U_ROUTE] = -1  # the balancer forgets the session
            _session_unref(S, user)
            if counters[I_SESS_ENDED] == C[C_TOTAL]:  # clients.total_sessions
                _clients_finished(S)
    elif kind == CLIENT_OPEN:
        counters[I_OUTCOMES] += 1
        if counters[I_OUTCOMES] == C[C_TOTAL]:  # clients.total_requests
            _clients_finished(S)
    else:  # ab: the loop sends its next request at once, until -n requests had an outcome
        counters[I_OUTCOMES] += 1
        if counters[I_OUTCOMES] < C[C_TOTAL]:
            # Queued, and sent by the loop as soon as the continuation that ended the request
            # returns (`_ab_send_queued`): sending from here would make the compiled functions
            # recursive (send -> reply -> done -> send), which numba's cache cannot load.  A
            # loop with nothing left to send is not queued (ab's `_issue` returns at once): a
            # run that starts again before the queue is served must not send for it.
            if counters[I_ISSUED] < C[C_TOTAL]:
                _ab_queue(S, user)
        else:
            _ab_run_ended(S)


@njit(cache=True)
def _clients_finished(S):
    """A finite workload's last outcome (`Clients._finish`): the observation window and
    `makespan` end now, and so does the run (`Kernel.stop`: after the current event)."""
    counters = S.I
    counters[I_FINISHED] = 1
    S.F[F_FINISHED_AT] = S.F[F_NOW]
    _finish_recording(S)
    if S.C[C_FRONT] >= 0 and counters[I_FRONT_OPEN] > 0:
        # the run goes on until the front has closed its last client connection
        counters[I_STOP_ON_CLOSE] = 1
    else:
        counters[I_STOP] = 1


@njit(cache=True)
def _closed_issue(S, user):
    """ClosedPopulation._issue: with clients.requests_per_user a user that has sent its
    requests stops, and the last user to stop ends the workload."""
    C, counters, UI = S.C, S.I, S.UI
    per_user = C[C_PER_USER]
    if per_user >= 0:
        sent = UI[user, U_SENT]
        if sent >= per_user:
            counters[I_USERS_DONE] += 1
            if counters[I_USERS_DONE] == C[C_USERS]:
                _clients_finished(S)
            return
        UI[user, U_SENT] = sent + 1
    _send(S, _alloc_request(S, user, 0, S.F[F_NOW]))


@njit(cache=True)
def _ab_send_queued(S):
    """The ab loops whose request has ended, in that order, each sending its next one (which
    may end at once, refused, and queue its loop again)."""
    counters = S.I
    queue = S.UFREE
    while counters[I_AB_WAITING]:
        head = counters[I_AB_HEAD]
        loop = queue[head]
        counters[I_AB_HEAD] = (head + 1) % queue.shape[0]
        counters[I_AB_WAITING] -= 1
        _ab_issue(S, loop)


@njit(cache=True)
def _ab_issue(S, loop):
    """ApacheBench._issue: one of ab's -c loops sends, while fewer than -n were sent."""
    counters = S.I
    if counters[I_ISSUED] >= S.C[C_TOTAL]:
        return
    counters[I_ISSUED] += 1
    _send(S, _alloc_request(S, loop, 0, S.F[F_NOW]))


@njit(cache=True)
def _after_failure(S, r, retry_allowed):
    C, CF, RI, counters = S.C, S.CF, S.RI, S.I
    attempt = RI[r, R_ATTEMPT]
    user = RI[r, R_USER]
    if retry_allowed and attempt < C[C_MAX_RETRIES]:
        delay = min(CF[CF_BACKOFF] * CF[CF_MULTIPLIER] ** float(attempt), CF[CF_MAX_BACKOFF])
        again = _alloc_request(S, user, attempt + 1, S.RF[r, RF_SENT])
        RI[again, R_CLASS] = RI[r, R_CLASS]  # a retry keeps its request's class
        push(S, S.F[F_NOW] + delay, EV_RESEND, again)
    else:
        counters[I_FAILED] += 1  # the user gives up on this request
        _class_count(S, r, K_FAILED)
        _done(S, user)


@njit(cache=True)
def _client_replied(S, r, code):
    C, CF, RI, counters = S.C, S.CF, S.RI, S.I
    now = S.F[F_NOW]
    if RI[r, R_STATE] != IN_FLIGHT:
        counters[I_LATE] += 1  # the server finished a request its client had abandoned
        _class_count(S, r, K_LATE)
        _free_request(S, r)
        return
    if code == REPLY_REFUSED:
        # The SYN was dropped at a full listen queue: the kernel retransmits it after
        # 1, 2, 4 ... initial RTOs while the attempt (and its timer) stays in flight, and
        # after the last retransmission waits one more doubled RTO before connect() fails
        # (EV_SYN with R_SYN past the retries: 127 s with Linux's 6).
        syn = RI[r, R_SYN]
        RI[r, R_SYN] = syn + 1
        push(S, now + CF[CF_RTO] * float(2**syn), EV_SYN, r)
        return
    RI[r, R_STATE] = ANSWERED
    counters[I_IN_FLIGHT] -= 1
    RI[r, R_TIMER] = -1
    if code == REPLY_OK:
        response = now - S.RF[r, RF_SENT]
        _record(S, response)
        _class_completed(S, r, response)
        _done(S, RI[r, R_USER])
    else:
        counters[I_ERRORS] += 1
        _class_count(S, r, K_ERRORS)
        _after_failure(S, r, C[C_RETRY_ON_ERROR])
    _free_request(S, r)


@njit(cache=True)
def _next_session_request(S, session):
    S.UI[session, U_REMAINING] -= 1
    _send(S, _alloc_request(S, session, 0, S.F[F_NOW]))


# --------------------------------------------------------------------------- the load generator
# The load generator's CPU (`clients.host`, `Clients.send`): before a request is sent, its
# client computes `clients.host.demand` (plus `connection_demand` on a new connection) on the
# generator's processor-shared cores -- ab's one process on one core queues its loops' work --
# and only then connects (`clients.connect`) or sends.  The timer started before, so the queue
# counts in the client's response time.  The work is the request's level-0 job (free until the
# request enters the servers) in phase PHASE_CLIENT, on a station row past the probed ones
# (C_HOST_STATION: no pool, no probe; the loop's burst events read its CPU from it).
@njit(cache=True)
def _host_run(S, r, new_connection):
    """Request r's work on the generator's CPU; it connects or is sent when that is done."""
    C, JI = S.C, S.JI
    work = draw(S, C[C_ST_HOST_DEMAND])
    if new_connection and C[C_ST_HOST_CONNECTION] >= 0:
        work += draw(S, C[C_ST_HOST_CONNECTION])
    j = r * C[C_LEVELS]
    s = C[C_HOST_STATION]
    JI[j, J_STATION] = s
    JI[j, J_PHASE] = PHASE_CLIENT
    JI[j, J_CALLS_LEFT] = 1 if new_connection else 0  # whether it connects next
    cpu_run(S, S.STI[s, ST_CPU], work, j)


@njit(cache=True)
def _host_done(S, j):
    """`Clients._host_done_connect` / `_connected`: the generator's work for the request is
    done; it connects (a new connection with a set-up time) or goes to the servers now."""
    C, JI = S.C, S.JI
    r = j // C[C_LEVELS]
    new_connection = JI[j, J_CALLS_LEFT]
    JI[j, J_PHASE] = PHASE_VISIT
    if new_connection and C[C_ST_CONNECT] >= 0:
        push(S, S.F[F_NOW] + draw(S, C[C_ST_CONNECT]), EV_CONNECTED, r)
    else:
        _enter(S, r)


# The load-aware policies (`sim.tiers.balancer.policies.least_load`), over the live count of
# requests each member has not answered yet (B_OUTSTANDING: the dispatcher's `outstanding`;
# without `balancer.report_interval_s`, which stays on the reference engine, it is what they
# read).  Every member is usable: members fail only through `backends.N.events`.
@njit(cache=True)
def _pick_by_load(S, policy):
    """lighttpd `sqf` (ShortestQueueFirst): the fewest outstanding, the first on ties; or
    `least_outstanding` (LeastOutstanding): the fewest, ties to the first from a start that
    rotates by one at every pick."""
    BI = S.BI
    n = S.C[C_N_MEMBERS]
    start = 0
    if policy == POLICY_LEAST_OUTSTANDING:
        counters = S.I
        start = counters[I_RR_NEXT] % n
        counters[I_RR_NEXT] = start + 1
    best = start
    best_load = BI[best, B_OUTSTANDING]
    for offset in range(1, n):
        i = (start + offset) % n
        if BI[i, B_OUTSTANDING] < best_load:
            best, best_load = i, BI[i, B_OUTSTANDING]
    return best


# --------------------------------------------------------------------------- request classes
# `sim.tiers.classed` and `sim.tiers.clients.scripts`: a request's class (R_CLASS) picks its
# burst stream and downstream calls at each station (KST), and the clients count its outcomes
# per class (KF, `sim.observe.classes.ClassStats`); the response times are logged in order
# (KLOG) and binned by the driver, with the log's length at each recorder row (KROWS), so a
# class's percentiles have the reference's windows.  A script's path is fixed (no Markov chain
# between the steps): a closed user or ab loop walks it from U_STEP and starts it again when
# used up; a session's step follows from its requests left.  A script with a Markov chain
# draws each path in the driver (SCRIPTS), step by step, and U_STEP keeps the latest step.
# per class (KF): `sim.observe.classes.OUTCOMES` in order, then the mix's cumulative
# probability (mix_by = "request") or last user + 1 (mix_by = "user"), then whether the class
# writes the replicated session (-1: the trigger decides, 0: never, 1: always)
(
    K_ARRIVED,
    K_COMPLETED,
    K_RESPONSE_SUM,
    K_TIMED_OUT,
    K_ERRORS,
    K_FAILED,
    K_RETRIED,
    K_LATE,
    K_MIX,
    K_WRITES,
    N_KF,
) = range(11)
N_OUTCOMES = K_MIX
CHOICE_MIX, CHOICE_USERS, CHOICE_SCRIPT, CHOICE_CHAIN = range(4)
STEP_CLASS, STEP_THINK, N_STEP = range(3)


@njit(cache=True, inline="always")  # numba's own inlining: LLVM left it a call (2-3 %)
def _burst(S, s, j):
    """Visit j's next burst at station s: its class's sampler (`ClassedVisit.burst`), times
    its node's JVM's JIT factor of the moment (`Jvm.burst_sampler` wraps the classes' samplers
    too)."""
    C = S.C
    stream = S.STI[s, ST_BURST] if C[C_CLASSES] == 0 else S.KST[s, S.RI[j // C[C_LEVELS], R_CLASS]]
    demand = draw(S, stream)
    v = S.STI[s, ST_JVM]
    if v >= 0:
        return demand * S.JVF[v, JVF_FACTOR]
    return demand


@njit(cache=True)
def _calls(S, s, j):
    """Visit j's downstream calls at station s: its class's (`classed._start`)."""
    C = S.C
    if C[C_CLASSES] == 0:
        return S.STI[s, ST_CALLS]
    return S.KST[s, C[C_CLASSES] + S.RI[j // C[C_LEVELS], R_CLASS]]


@njit(cache=True)
def _bound(S, n, value):
    """bisect_right over the classes' bounds (KF[:, K_MIX]), the last class at most."""
    KF = S.KF
    k = 0
    while k < n - 1 and KF[k, K_MIX] <= value:
        k += 1
    return k


@njit(cache=True)
def _script_step(S, user):
    """ScriptChoice.choose: the user's next step (a new path when its own is used up)."""
    C, UI = S.C, S.UI
    if C[C_CLIENT] == CLIENT_SESSIONS:  # drawn whole at the session's start: its length
        return C[C_PATH_LEN] - 1 - UI[user, U_REMAINING]
    step = UI[user, U_STEP]
    if step < 0 or step >= C[C_PATH_LEN]:
        step = 0
    UI[user, U_STEP] = step + 1
    return step


@njit(cache=True)
def _choose_class(S, r):
    """`Clients.send` with classes: the first attempt picks the request's class (a retry
    keeps it), which counts the arrival (and the retry)."""
    C, RI, KF = S.C, S.RI, S.KF
    n = C[C_CLASSES]
    if RI[r, R_CLASS] < 0:
        choice = C[C_CLASS_CHOICE]
        if choice == CHOICE_MIX:  # MixPerRequest
            klass = _bound(S, n, draw(S, C[C_ST_MIX]))
        elif choice == CHOICE_USERS:  # MixPerUser: the first n_1 users are class 1, ...
            klass = _bound(S, n, float(RI[r, R_USER]))
        elif choice == CHOICE_CHAIN:  # ScriptChoice with transitions
            user = RI[r, R_USER]
            step = _chain_choose(S.TOKEN, user)
            S.UI[user, U_STEP] = step
            klass = S.KSTEP[step, STEP_CLASS]
        else:
            klass = S.KSTEP[_script_step(S, RI[r, R_USER]), STEP_CLASS]
        RI[r, R_CLASS] = klass
    klass = RI[r, R_CLASS]
    KF[klass, K_ARRIVED] += 1
    if RI[r, R_ATTEMPT]:
        KF[klass, K_RETRIED] += 1


@njit(cache=True)
def _think_stream(S, user):
    """ClassChoice.think: a script's step has its own think time, else the population's."""
    C = S.C
    choice = C[C_CLASS_CHOICE]
    if C[C_CLASSES] == 0 or choice < CHOICE_SCRIPT:
        return C[C_ST_THINK]
    if choice == CHOICE_CHAIN:
        last = S.UI[user, U_STEP]
    elif C[C_CLIENT] == CLIENT_SESSIONS:
        last = C[C_PATH_LEN] - 1 - S.UI[user, U_REMAINING]
    else:
        last = S.UI[user, U_STEP] - 1
    return S.KSTEP[last, STEP_THINK]


@njit(cache=True)
def _chain_choose(token, user):
    """ScriptChoice.choose in the driver: the user's next step (a new path when used up)."""
    with objmode(step="int64"):
        step = script_choose(token, user)
    return step


@njit(cache=True)
def _chain_begin(token, session):
    """ScriptChoice.begin in the driver: a session's path, drawn whole; its length."""
    with objmode(length="int64"):
        length = script_begin(token, session)
    return length


@njit(cache=True)
def _class_count(S, r, outcome):
    """One more `outcome` (a K_* column) for request r's class."""
    if S.C[C_CLASSES]:
        S.KF[S.RI[r, R_CLASS], outcome] += 1


@njit(cache=True)
def _class_completed(S, r, response):
    """ClassStats.complete, after the recorder's (a batch row taken now precedes it)."""
    if S.C[C_CLASSES] == 0:
        return
    KF = S.KF
    klass = S.RI[r, R_CLASS]
    KF[klass, K_COMPLETED] += 1
    KF[klass, K_RESPONSE_SUM] += response
    n = S.I[I_KLOG_N]
    S.KLOG[n, 0] = klass
    S.KLOG[n, 1] = response
    S.I[I_KLOG_N] = n + 1


@njit(cache=True)
def _writes_session(S, j):
    """ClassedAfterRequest: whether visit j's class writes the replicated session (-1: the
    tier's trigger decides, as without classes)."""
    C = S.C
    if C[C_CLASSES] == 0:
        return -1
    return int(S.KF[S.RI[j // C[C_LEVELS], R_CLASS], K_WRITES])


@njit(cache=True)
def _snapshot_classes(S, v, k):
    """The classes' probes (`ClassProbe.counters`), the last columns of the recorder's row."""
    KF = S.KF
    for klass in range(S.C[C_CLASSES]):
        for outcome in range(N_OUTCOMES):
            v[k + outcome] = KF[klass, outcome]
        k += N_OUTCOMES


# --------------------------------------------------------------------------- recorder
@njit(cache=True)
def _snapshot(S, v):
    """The recorder's row (`Recorder.snapshot`) into v: the base counts, then each probe's
    fields in the reference's order (`plan.STATION_FIELDS`, ...).  It only reads the state: a
    CPU's clock is not advanced, as the reference's `counters` does not advance it."""
    counters, F, C = S.I, S.F, S.C
    STI, STF, POI, POF, CPI, CPF = S.STI, S.STF, S.POI, S.POF, S.CPI, S.CPF
    now = F[F_NOW]
    v[0] = now
    v[1] = counters[I_COMPLETED]
    v[2] = F[F_RESPONSE_SUM]
    v[3] = counters[I_ARRIVED]
    v[4] = counters[I_TIMED_OUT]
    v[5] = counters[I_ERRORS]
    v[6] = counters[I_FAILED]
    v[7] = counters[I_RETRIED]
    v[8] = counters[I_LATE]
    v[9] = counters[I_SYN]
    k = 10
    for s in range(C[C_N_STATIONS]):
        v[k] = STI[s, ST_VISITS]
        v[k + 1] = STF[s, STF_WAIT]
        v[k + 2] = STF[s, STF_RESIDENCE]
        v[k + 3] = STF[s, STF_DOWNSTREAM]
        v[k + 4] = STI[s, ST_FAILED]
        v[k + 5] = STI[s, ST_IN_PROGRESS]
        k += 6
    for p in range(C[C_N_POOLS]):
        v[k] = POF[p, POF_BUSY] + POI[p, PO_IN_USE] * now
        v[k + 1] = POF[p, POF_QUEUE] + POI[p, PO_WAITING] * now
        v[k + 2] = POI[p, PO_ACQUIRED]
        v[k + 3] = POI[p, PO_REFUSED]
        v[k + 4] = POF[p, POF_WAIT]
        v[k + 5] = POI[p, PO_IN_USE]
        v[k + 6] = POI[p, PO_WAITING]
        k += 7
    for c in range(C[C_N_CPUS]):
        n = CPI[c, CP_N]
        if CPI[c, CP_DEDICATED]:
            area = CPF[c, CPF_SIGNED] + n * now
            v[k] = area
            v[k + 1] = area
        else:
            dt = now - CPF[c, CPF_LAST]
            if dt != 0.0 and n:
                cores = CPI[c, CP_CORES]
                v[k] = CPF[c, CPF_BUSY] + (n if n < cores else cores) * dt
                v[k + 1] = CPF[c, CPF_JOBS] + n * dt
            else:
                v[k] = CPF[c, CPF_BUSY]
                v[k + 1] = CPF[c, CPF_JOBS]
        v[k + 2] = CPI[c, CP_COMPLETED]
        k += 3
    RP = S.RP
    for t in range(C[C_N_TIERS]):  # replication.<tier>: ReplicationProbe's fields
        v[k] = RP[t, RP_REPLICATED]
        v[k + 1] = RP[t, RP_BYTES_SENT]
        v[k + 2] = RP[t, RP_WAIT_SUM]
        v[k + 3] = RP[t, RP_CREDIT_WAITS]
        k += 4
    if C[C_FRONT] >= 0:
        # proxy.connections (opened, closed, closed_after_error, closed_no_worker, open) and
        # proxy.responses (500, 502, 503, 504)
        v[k] = counters[I_FRONT_OPENED]
        v[k + 1] = counters[I_FRONT_CLOSED]
        v[k + 2] = counters[I_FRONT_AFTER_ERROR]
        v[k + 3] = counters[I_FRONT_NO_WORKER]
        v[k + 4] = counters[I_FRONT_OPEN]
        v[k + 5] = 0.0
        v[k + 6] = counters[I_FRONT_502]
        v[k + 7] = counters[I_FRONT_503]
        v[k + 8] = counters[I_FRONT_504]
        k += 9
    k = _jvm_snapshot(S, v, k)  # each JVM's probe (`Jvm.fields`)
    BN = S.BN
    for node in range(C[C_N_NODES]):
        if BN[node, BN_POOLED]:  # the node's BackendPool probe (plan.BACKEND_FIELDS)
            v[k] = BN[node, BN_READ_TIMEOUTS]
            v[k + 1] = BN[node, BN_ACQUIRE_TIMEOUTS]
            v[k + 2] = BN[node, BN_IDLE_CLOSES]
            v[k + 3] = BN[node, BN_TTL_CLOSES]
            v[k + 4] = BN[node, BN_EXIT_CLOSES]
            v[k + 5] = BN[node, BN_OPEN]
            v[k + 6] = BN[node, BN_IDLE]
            station = S.BI[node, B_STATION]
            awaiting = BN[node, BN_OPEN] - BN[node, BN_IDLE] - STI[station, ST_IN_PROGRESS]
            v[k + 7] = awaiting if awaiting > 0 else 0
            v[k + 8] = BN[node, BN_WAITERS]
            k += 9
            if C[C_MOD_JK]:  # JkBackendPool's own fields (plan.JK_FIELDS)
                v[k] = BN[node, BN_JK_ATTEMPTS]
                v[k + 1] = BN[node, BN_JK_REPLY_TIMEOUTS]
                v[k + 2] = BN[node, BN_JK_CONNECT_FAILURES]
                v[k + 3] = BN[node, BN_JK_ABANDONED]
                v[k + 4] = BN[node, BN_JK_ABANDONED_SERVED]
                k += 5
    if C[C_HAS_DISPATCHER]:
        BI = S.BI
        for m in range(C[C_N_MEMBERS]):
            v[k] = BI[m, B_DISPATCHED]
            k += 1
        for _ in range(4):  # failovers, refused_down, unavailable, sticky_refused
            v[k] = 0.0
            k += 1
        v[k] = counters[I_SESS_CREATED]
        v[k + 1] = counters[I_SESS_LOST]
        k += 2
    _snapshot_classes(S, v, k)


@njit(cache=True)
def _copy_histogram(histogram, rows, row):
    """rows[row, :] = histogram, element by element, so that numba never has to convert a
    borrowed array into its own array type."""
    for b in range(histogram.shape[0]):
        rows[row, b] = histogram[b]


@njit(cache=True)
def _take(S):
    """A point of the progress grid (`sim.observe.checkpoints.Checkpoints._take`): time,
    completions and summed response always; the full row and the histogram at the candidate
    window starts (the first points)."""
    counters = S.I
    n = counters[I_CK_N]
    grid = S.CKF
    if n >= grid.shape[0]:
        return
    grid[n, 0] = S.F[F_NOW]
    grid[n, 1] = counters[I_COMPLETED]
    grid[n, 2] = S.F[F_RESPONSE_SUM]
    if n < S.C[C_CANDIDATES]:
        _snapshot(S, S.CKROWS[n])
        _copy_histogram(S.HIST, S.CKHIST, n)
    counters[I_CK_N] = n + 1


@njit(cache=True)
def _append_row(S):
    counters = S.I
    row = counters[I_NROWS]
    _snapshot(S, S.ROWS[row])
    _copy_histogram(S.HIST, S.HROWS, row)
    S.KROWS[row] = counters[I_KLOG_N]
    counters[I_NROWS] = row + 1


@njit(cache=True)
def _boundary(S):
    counters = S.I
    _append_row(S)
    n = counters[I_NROWS]
    if n > 2 * S.C[C_MAX_BATCHES]:
        # Merge adjacent batches: keep the base row and every second boundary.
        rows, hrows = S.ROWS, S.HROWS
        kept = 0
        for i in range(0, n, 2):
            rows[kept, :] = rows[i, :]
            hrows[kept, :] = hrows[i, :]
            S.KROWS[kept] = S.KROWS[i]
            kept += 1
        counters[I_NROWS] = kept
        counters[I_BATCH] *= 2


@njit(cache=True)
def _start_recording(S):
    counters = S.I
    counters[I_RECORDING] = 1
    if counters[I_STOP_AFTER] >= 0:
        counters[I_STOP_AT] = counters[I_COMPLETED] + counters[I_STOP_AFTER]
    counters[I_PENDING] = 0
    _append_row(S)


@njit(cache=True)
def _finish_recording(S):
    counters = S.I
    if not counters[I_RECORDING]:
        _start_recording(S)
        return
    last = S.ROWS[counters[I_NROWS] - 1]
    if S.F[F_NOW] > last[0] or counters[I_COMPLETED] > last[1]:
        _append_row(S)


# --------------------------------------------------------------------------- the loop
@njit(cache=True)
def _start(S):
    C, CF, counters, UI = S.C, S.CF, S.I, S.UI
    now = S.F[F_NOW]
    _jvm_start(S)  # the JVMs' session sweeps, scheduled as the nodes are built
    if C[C_CHILDREN]:  # ChildProcesses, made with the components: StartServers children
        _fork(S, C[C_START_CHILDREN])
        if C[C_MANAGED]:  # the parent's clock: the ticks before the load, then the next one
            before = int(np.floor(CF[CF_UPTIME]))
            for _ in range(before):
                _tick(S)
            push(S, now + before + 1.0 - CF[CF_UPTIME], EV_MAINTAIN, 0)
    if C[C_WARMUP] == WARMUP_FIXED:
        if CF[CF_WARMUP_S] > 0:
            push(S, now + CF[CF_WARMUP_S], EV_WARMUP, 0)
        else:
            _start_recording(S)
    else:
        _start_recording(S)
    if C[C_SAMPLE]:  # the first sample's window starts here, before the clients start
        _sample(S, 1)
        push(S, now + CF[CF_SAMPLE_INTERVAL], EV_SAMPLE, 0)
    grid = C[C_GRID]
    if grid != GRID_NONE:  # sim.observe.checkpoints.Checkpoints, built before the clients start
        _take(S)
        if grid == GRID_TIME:
            push(S, now + CF[CF_GRID_STEP], EV_CHECKPOINT, 1)
    kind = C[C_CLIENT]
    if C[C_REPEAT] > 1:  # ab run again: the first run's window starts here
        _ab_mark(S)
    if kind == CLIENT_CLOSED:
        for user in range(C[C_USERS]):
            UI[user, U_ROUTE] = -1
            UI[user, U_SENT] = 0
            _closed_issue(S, user)
    elif kind == CLIENT_AB:
        for loop in range(C[C_USERS]):
            _ab_issue(S, loop)
    elif kind == CLIENT_OPEN:
        push(S, now + draw(S, C[C_ST_ARRIVALS]), EV_ARRIVAL, 0)
    else:
        push(S, now + draw(S, C[C_ST_ARRIVALS]), EV_SESSION_ARRIVAL, 0)
    counters[I_STARTED] = 1


@njit(cache=True)
def _needs_room(S):
    """Room for the worst event: every live job continuing at once, a CPU unsharing."""
    counters, C = S.I, S.C
    used = counters[I_REQ_USED]
    if 2 * used + 8 > S.RI.shape[0]:
        return True
    if counters[I_HEAP_N] + 4 * C[C_LEVELS] * used + C[C_MAX_CORES] + 64 > S.HT.shape[0]:
        return True
    if C[C_CLIENT_KEEP_ALIVE] and 2 * counters[I_CN_USED] + max(C[C_USERS], 1) + 16 > S.CN.shape[0]:
        return True  # an event opens at most a connection per user (ab's loops at once)
    if C[C_CHILDREN] and counters[I_CH_PRESENT] + 40 > S.CH.shape[0]:
        return True  # a tick forks at most 32 children
    if C[C_BACKEND_POOLS] and counters[I_BC_USED] + S.RI.shape[0] + 16 > S.BC.shape[0]:
        return True  # an event opens at most a backend connection per request
    if C[C_CLASSES] and counters[I_KLOG_N] + used + 8 > S.KLOG.shape[0]:
        return True  # an event completes at most the requests in use
    if C[C_N_JVMS] and _jvm_needs_room(S):
        return True
    return C[C_CLIENT] == CLIENT_SESSIONS and 2 * counters[I_USR_USED] + 8 > S.UI.shape[0]


def _borrow_typer(typingctx, array):
    """The same array as a `BorrowedArray`, with a null meminfo (views taken of it count no
    references either).  Valid while the driver holds the array, which it does for the whole
    call of `run_events`."""
    borrowed = BorrowedArray(array.dtype, array.ndim, array.layout)

    def codegen(context, builder, signature, args):
        source = context.make_array(array)(context, builder, value=args[0])
        view = context.make_array(borrowed)(context, builder)
        context.populate_array(
            view,
            data=source.data,
            shape=source.shape,
            strides=source.strides,
            itemsize=source.itemsize,
            meminfo=None,
        )
        return view._getvalue()

    return borrowed(array), codegen


_borrow: Any = intrinsic(_borrow_typer)  # called with the array alone


@njit(cache=True)
def _borrowed(S):
    """The state with every table borrowed (`_borrow`)."""
    return State(
        _borrow(S.I),
        _borrow(S.F),
        _borrow(S.C),
        _borrow(S.CF),
        _borrow(S.HT),
        _borrow(S.HS),
        _borrow(S.HP),
        _borrow(S.RI),
        _borrow(S.RF),
        _borrow(S.JI),
        _borrow(S.JF),
        _borrow(S.STI),
        _borrow(S.STF),
        _borrow(S.POI),
        _borrow(S.POF),
        _borrow(S.CPI),
        _borrow(S.CPF),
        _borrow(S.CPH),
        _borrow(S.BI),
        _borrow(S.BF),
        _borrow(S.UI),
        _borrow(S.RFREE),
        _borrow(S.UFREE),
        _borrow(S.DRAW),
        _borrow(S.DPOS),
        _borrow(S.SKIND),
        _borrow(S.SVAL),
        _borrow(S.ROWS),
        _borrow(S.HROWS),
        _borrow(S.HIST),
        _borrow(S.SCRATCH),
        _borrow(S.CKF),
        _borrow(S.CKROWS),
        _borrow(S.CKHIST),
        _borrow(S.MARKS),
        _borrow(S.RP),
        _borrow(S.TSROW),
        _borrow(S.CN),
        _borrow(S.CNF),
        _borrow(S.CNFREE),
        _borrow(S.CH),
        _borrow(S.CHFREE),
        _borrow(S.BC),
        _borrow(S.BCF),
        _borrow(S.BCFREE),
        _borrow(S.BP),
        _borrow(S.BN),
        _borrow(S.BNF),
        _borrow(S.KST),
        _borrow(S.KSTEP),
        _borrow(S.KF),
        _borrow(S.KLOG),
        _borrow(S.KROWS),
        _borrow(S.BPF),
        S.TOKEN,
        _borrow(S.JV),
        _borrow(S.JVF),
        _borrow(S.JSE),
        _borrow(S.JH),
        _borrow(S.JM),
        _borrow(S.JQK),
        _borrow(S.BROWS),
        _borrow(S.BHIST),
    )


def _unref_typer(typingctx, state):
    """The same struct as a `BorrowedStateType` (no new reference: valid while the caller
    holds `state`)."""
    borrowed = BorrowedStateType(list(state.field_dict.items()))

    def codegen(context, builder, signature, args):
        return args[0]

    return borrowed(state), codegen


_unref: Any = intrinsic(_unref_typer)  # called with the state alone


@njit(cache=True)
def _hold(state):
    """A use of `state` after the loop: numba keeps a variable alive until its last use."""
    return state.TOKEN


@njit(cache=True)
def run_events(S):
    """Run until the horizon, the stop rule, a runaway queue, or a full table (GROW: the
    driver enlarges the arrays and calls again; the run resumes exactly where it stopped)."""
    state = _borrowed(S)
    status = _run(_unref(state))
    _hold(state)
    return status


@njit(cache=True)
def _run(S):
    counters, F, C, CF = S.I, S.F, S.C, S.CF
    if not counters[I_STARTED]:
        _start(S)
    JI, STI, CPI, CPF, UI = S.JI, S.STI, S.CPI, S.CPF, S.UI
    ht = S.HT
    until = F[F_UNTIL]
    while True:
        _ab_send_queued(S)
        if counters[I_STOP]:
            break
        if _needs_room(S):
            return GROW
        if counters[I_HEAP_N] == 0 or ht[0] > until:
            F[F_NOW] = until
            break
        now, seq, payload = _pop(S)
        F[F_NOW] = now
        counters[I_EVENTS] += 1
        kind = payload & KIND_MASK
        arg = payload >> KIND_BITS
        if kind == EV_DEDICATED_BURST:
            c = STI[JI[arg, J_STATION], ST_CPU]
            CPI[c, CP_N] -= 1
            CPF[c, CPF_SIGNED] += now
            CPI[c, CP_COMPLETED] += 1
            _computed(S, arg)
        elif kind == EV_BURST:
            if JI[arg, J_BURST_SEQ] != seq:
                continue  # moved to the shared regime
            JI[arg, J_BURST_SEQ] = -1
            c = STI[JI[arg, J_STATION], ST_CPU]
            _run_remove(S, c, arg)
            n = CPI[c, CP_N]
            dt = now - CPF[c, CPF_LAST]
            if dt != 0.0:
                cores = CPI[c, CP_CORES]
                CPF[c, CPF_BUSY] += (n if n < cores else cores) * dt
                CPF[c, CPF_JOBS] += n * dt
                CPF[c, CPF_LAST] = now
            CPI[c, CP_N] = n - 1
            CPI[c, CP_COMPLETED] += 1
            _computed(S, arg)
        elif kind == EV_THINK:
            counters[I_THINKING] -= 1
            _closed_issue(S, arg)
        elif kind == EV_ARRIVAL:
            counters[I_GENERATED] += 1
            _send(S, _alloc_request(S, counters[I_GENERATED], 0, now))
            total = C[C_TOTAL]
            if total < 0 or counters[I_GENERATED] < total:
                push(S, now + draw(S, C[C_ST_ARRIVALS]), EV_ARRIVAL, 0)
        elif kind == EV_DEPART:
            c = arg
            if CPI[c, CP_WAKEUP] != seq:
                continue  # cancelled
            CPI[c, CP_WAKEUP] = -1
            _advance(S, c, now)
            JF, heap, scratch = S.JF, S.CPH[c], S.SCRATCH
            virtual = CPF[c, CPF_VIRTUAL]
            limit = virtual + EPS * (1.0 + abs(virtual))
            k = 0
            size = CPI[c, CP_HEAP_N]
            # Everything whose tag has been reached leaves now (ties and rounding).
            while size > 0 and JF[heap[0], JF_TAG] <= limit:
                scratch[k] = heap[0]
                k += 1
                size -= 1
                if size > 0:
                    heap[0] = heap[size]
                    _tag_siftup(heap, JF, JI, size, 0)
            CPI[c, CP_HEAP_N] = size
            if k > 0 and JF[scratch[k - 1], JF_TAG] > virtual:
                CPF[c, CPF_VIRTUAL] = JF[scratch[k - 1], JF_TAG]
            CPI[c, CP_N] -= k
            CPI[c, CP_COMPLETED] += k
            if CPI[c, CP_N] <= CPI[c, CP_CORES]:
                _unshare(S, c, now)
            else:
                CPF[c, CPF_RATE] = CPF[c, CPF_SPEED] * CPI[c, CP_CORES] / CPI[c, CP_N]
                _reschedule(S, c)
            for i in range(k):
                _computed(S, scratch[i])
                _ab_send_queued(S)  # before the next departure's continuation, as inside
        elif kind == EV_IO:
            s = JI[arg, J_STATION]
            if STI[s, ST_DISK_POOL] >= 0:
                _disk_start(S, arg)
            elif STI[s, ST_NODE] >= 0 and (C[C_N_TIERS] > 0 or STI[s, ST_JVM] >= 0):
                _after_request(S, arg)
            else:
                _finish(S, arg, True)
        elif kind == EV_LINK_SENT:  # Link._sent: the link is free for the next frame
            pool_release(S, JI[arg, J_LINK])
            push(S, now + CF[CF_NET_LATENCY], EV_LINK_ARRIVED, arg)
        elif kind == EV_LINK_ARRIVED:
            _link_arrived(S, arg)
        elif kind == EV_DISK:
            pool_release(S, STI[JI[arg, J_STATION], ST_DISK_POOL])
            _finish(S, arg, True)
        elif kind == EV_TIMEOUT:
            RI = S.RI
            if RI[arg, R_TIMER] != seq or RI[arg, R_STATE] != IN_FLIGHT:
                continue  # answered (the timer was cancelled), or a later request's row
            RI[arg, R_STATE] = ABANDONED  # the servers keep working on it
            RI[arg, R_TIMER] = -1
            if RI[arg, R_CONN] >= 0:  # the client hangs up on the connection
                S.CN[RI[arg, R_CONN], CN_CLIENT_CLOSED] = 1
            counters[I_IN_FLIGHT] -= 1
            counters[I_TIMED_OUT] += 1
            _class_count(S, arg, K_TIMED_OUT)
            _after_failure(S, arg, C[C_RETRY_ON_TIMEOUT])
        elif kind == EV_RESEND:
            _send(S, arg)
        elif kind == EV_SYN:
            if S.RI[arg, R_STATE] != IN_FLIGHT:
                _free_request(S, arg)  # the client gave up while its kernel backed off
                continue
            if S.RI[arg, R_SYN] > C[C_SYN_RETRIES]:
                _client_replied(S, arg, REPLY_FAIL)  # connect() fails (ETIMEDOUT)
                continue
            counters[I_SYN] += 1
            if C[C_ST_CONNECT] >= 0:
                push(S, now + draw(S, C[C_ST_CONNECT]), EV_CONNECTED, arg)
            else:
                _enter(S, arg)
        elif kind == EV_CONNECTED:
            _enter(S, arg)
        elif kind == EV_SESSION_ARRIVAL:
            top = counters[I_UFREE_TOP] - 1
            counters[I_UFREE_TOP] = top
            counters[I_USR_USED] += 1
            session = S.UFREE[top]
            counters[I_SESS_STARTED] += 1
            UI[session, U_ROUTE] = -1
            UI[session, U_REFS] = 1  # the session itself
            if C[C_FIXED_LENGTH] >= 0:
                UI[session, U_REMAINING] = C[C_FIXED_LENGTH]
            elif C[C_ST_LENGTH] >= 0:
                UI[session, U_REMAINING] = int(draw(S, C[C_ST_LENGTH]))
            else:  # a script's Markov chain: the session's path, drawn whole now
                UI[session, U_REMAINING] = _chain_begin(S.TOKEN, session)
            _next_session_request(S, session)
            total = C[C_TOTAL]
            if total < 0 or counters[I_SESS_STARTED] < total:
                push(S, now + draw(S, C[C_ST_ARRIVALS]), EV_SESSION_ARRIVAL, 0)
        elif kind == EV_SESSION_THINK:
            _next_session_request(S, arg)
        elif kind == EV_IDLE:
            CN = S.CN
            if not _timer_due(
                S,
                CN,
                S.CNF,
                arg,
                seq,
                CN_IDLE_SEQ,
                CN_IDLE_ENTRY,
                CNF_IDLE_AT,
                CNF_ENTRY_AT,
                EV_IDLE,
            ):
                continue  # the next request came in time (or the row serves another)
            _front_idle_expired(S, arg)
        elif kind == EV_MAINTAIN:
            _maintain(S)
        elif kind == EV_BACKEND_IDLE:
            BC = S.BC
            if not _timer_due(
                S,
                BC,
                S.BCF,
                arg,
                seq,
                BC_IDLE_SEQ,
                BC_IDLE_ENTRY,
                BCF_IDLE_AT,
                BCF_ENTRY_AT,
                EV_BACKEND_IDLE,
            ):
                continue  # taken again in time, or closed
            _bp_idle_expired(S, arg)
        elif kind == EV_ACQUIRE:
            if JI[arg, J_BTIMER] != seq:
                continue  # it got a connection in time
            _bp_acquire_expired(S, arg)
        elif kind == EV_READ:
            if S.BC[arg, BC_READ_SEQ] != seq:
                continue  # the node accepted the connection in time
            _bp_read_expired(S, arg)
        elif kind == EV_MOD_JK:
            _jk_event(S, arg, seq)
        elif kind == EV_LINGER:
            _release_worker(S, arg)
        elif kind == EV_CPU_RESUME:
            if S.JV[CPI[arg, CP_JVM], JV_RESUME] == seq:  # not extended since
                _cpu_resumed(S, arg)
        elif kind == EV_JVM_RESUME:
            _replicate(S, arg, 0)  # JvmAfterRequest._resume: then session replication
        elif kind == EV_SWEEP:
            _jvm_sweep(S, arg)
        elif kind == EV_WARMUP:
            _start_recording(S)
        elif kind == EV_STOP:
            counters[I_STOP] = 1
        elif kind == EV_SAMPLE:
            _sample(S, 0)
            push(S, now + CF[CF_SAMPLE_INTERVAL], EV_SAMPLE, 0)
        elif kind == EV_CHECKPOINT:
            _take(S)
            if arg + 1 < C[C_CELLS]:  # the last point is the end of the run
                push(S, now + CF[CF_GRID_STEP], EV_CHECKPOINT, arg + 1)
    if counters[I_RUNAWAY]:
        return RUNAWAY
    if counters[I_UNSUPPORTED]:
        return UNSUPPORTED
    if not counters[I_FINISHED]:
        _finish_recording(S)
    return DONE


def empty_state_sizes() -> dict[str, int]:
    """Field counts of each table, for the driver that allocates them."""
    return {
        "I": N_I,
        "F": N_F,
        "C": N_C,
        "CF": N_CF,
        "STI": N_STI,
        "STF": N_STF,
        "POI": N_POI,
        "POF": N_POF,
        "CPI": N_CPI,
        "CPF": N_CPF,
        "JI": N_JI,
        "JF": N_JF,
        "RI": N_RI,
        "RF": N_RF,
        "BI": N_BI,
        "BF": N_BF,
        "UI": N_UI,
        "RP": N_RP,
        "CN": N_CN,
        "CNF": N_CNF,
        "CH": N_CH,
        "BC": N_BC,
        "BCF": N_BCF,
        "BP": N_BP,
        "BN": N_BN,
        "BNF": N_BNF,
        "KF": N_KF,
        "KSTEP": N_STEP,
        "BPF": N_BPF,
        "JV": N_JV,
        "JVF": N_JVF,
    }


__all__ = ["REFILLS", "np", "run_events"]
