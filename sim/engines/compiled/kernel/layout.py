"""The tables of the compiled loop's state: their columns (the constants below) and codes.

A mechanism's module (the database's shared lock: `lock`) declares the columns, pool roles
and event kinds it adds, as counts, in a literal `LAYOUT` at its top level (`{"C": 5, "CF":
2, "JI": 1, "ROLE": 1, "EV": 1}`), and takes its own numbers from `declared(module, table)`.
They follow the columns below, in the order of the modules' names; they are read from the
modules' source (`declarations`), so that every `N_*` is final when this module is imported.

Rows of the 2-D tables are entities (requests, jobs = one request's visit at one level of the
stack, stations, pools, CPUs, balancer members, users or sessions, connections, children, JVMs)
and columns are their fields.  A calendar entry is (time, sequence number, payload = argument *
32 + kind); a cancelled entry stays in the heap and is recognised as stale by its sequence
number when it comes due, as the reference's `Wakeup.cancel` is lazy.
"""

from __future__ import annotations

from sim.engines.compiled.kernel.declarations import declared as _declared

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
    I_UNSUPPORTED,  # a refusal where the engine cannot answer it (see `backend_pool._unanswerable`)
    I_KLOG_N,  # request classes: completions logged in KLOG
    I_FRONT_504,  # error responses with status 504 (mod_jk's reply timeout)
    I_AB_BATCH,  # ab run again: the run under way (1-based)
    I_AB_MARKS,  # ab run again: rows taken in BROWS
    I_PAUSE_AT,  # the driver's pause point: the loop returns PAUSE at this many events (0: never)
    I_RAMP_SEQ,  # a closed ramp: the first of the sequence numbers its changes took at the start
    N_I,
) = range(68)

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
    C_RAMP_CHANGES,  # clients.ramp: its users' calls and retirements (RAMP rows); -1: no ramp
    C_RATE_STEPS,  # clients.schedule: its steps (RATES rows); 0: none
    _C_BASE,  # the mechanisms' columns follow (`declared`)
) = range(73)

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
    _CF_BASE,
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
    _JI_BASE,
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
# U_RETIRED, U_CYCLING: a closed user retired by its ramp (it stops when its cycle ends), and
# whether its think-request cycle is under way (`ClosedPopulation._retired`, `_cycling`): 0
# no, 1 yes, STOPPED when it has sent its requests_per_user and is done for good (`_stopped`)
U_ROUTE, U_REMAINING, U_SENT, U_CONN, U_REFS, U_STEP, U_RETIRED, U_CYCLING, N_UI = range(9)

# a closed ramp's changes (`sim.tiers.clients.populations.ramp_changes`), in calendar order:
# when, which user, whether it is called (1) or retired (0), and its place in the order the
# reference schedules them at the start (its sequence number is I_RAMP_SEQ + that place)
RAMP_AT, RAMP_USER, RAMP_CALLED, RAMP_ORDER, N_RAMP = range(5)

STOPPED = 2  # U_CYCLING of a closed user that sent its requests_per_user

# an open schedule's steps (`clients.schedule`): where each ends in the cycle [s], its rate [1/s]
RATE_END, RATE_PER_S, N_RATE = range(3)

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
    CN_IDLE_ENTRY,  # the calendar entry that stands for its KeepAliveTimeout (`calendar.timer_arm`)
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
    BC_IDLE_ENTRY,  # the calendar entry that stands for its idle timeout (`calendar.timer_arm`)
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

# the load-aware policies (`dispatcher._pick_by_load`)
POLICY_SQF, POLICY_LEAST_OUTSTANDING = range(4, 6)

# a mechanism's pool roles (`declared(module, "ROLE")`) are ROLE_DECLARED and after
ROLE_STATION, ROLE_JDBC, ROLE_DISK, ROLE_LINK, ROLE_PIN, ROLE_DECLARED = range(6)

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

# CARRIER: a row that carries one mod_jk attempt's visit to a node (`mod_jk._carrier`)
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
    EV_MOD_JK,  # mod_jk's timers, their kind in the argument's low bits (`mod_jk.event`)
    EV_CPU_RESUME,  # a JVM's stop-the-world pause ends: its CPU's bursts go on
    EV_JVM_RESUME,  # a request held through the collection it triggered goes on
    EV_SWEEP,  # a JVM's session manager expires sessions
    _EV_BASE,
) = range(30)

KIND_BITS = 5

KIND_MASK = 31

DONE, GROW, RUNAWAY, UNSUPPORTED, PAUSE = range(5)

NEVER = 2**62

EPS = 1e-12  # the reference CPU's tolerance for departures due at the same virtual time

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
# session, the old session's places lose their key (`jvm.session_ended`): it stays held
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


# --------------------------------------------------------------------------- the mechanisms'
_SPANS: dict[tuple[str, str], range] = {}
_ENDS = {"C": _C_BASE, "CF": _CF_BASE, "JI": _JI_BASE, "ROLE": ROLE_DECLARED, "EV": _EV_BASE}
for _module, _found in _declared().items():
    for _table, _count in _found.get("LAYOUT", {}).items():
        _SPANS[_module, _table] = range(_ENDS[_table], _ENDS[_table] + _count)
        _ENDS[_table] += _count
N_C, N_CF, N_JI = _ENDS["C"], _ENDS["CF"], _ENDS["JI"]
N_ROLES, N_EVENTS = _ENDS["ROLE"], _ENDS["EV"]
assert N_EVENTS <= KIND_MASK + 1  # a calendar entry's kind fits in KIND_BITS


def declared(module: str, table: str) -> range:
    """The numbers of `table` ("C", "CF", "JI", "ROLE" or "EV") that the kernel module
    `module` (its `__name__`) declared in its `LAYOUT`, in order."""
    return _SPANS.get((module.rpartition(".")[2], table), range(0))
