"""The model-file schema: the one place that lists every parameter, its default, unit and range.

A model file (TOML) describes a stack as data: client population(s) -> front proxy ->
balancer -> backend nodes -> database, plus run control.  Everything is validated here,
once, at the edge; the engine trusts what it is given.  Field descriptions carry the unit
and the real component's parameter name so that users can map the model to their config.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sim.model.access_log_ramp import closed_clients_from_access_log, refusal
from sim.model.access_log_schedule import schedule_from_access_log
from sim.model.autoscale import Autoscale
from sim.model.backend_pools import backend_pool_applies, jk_acts
from sim.model.classes import RequestClass, Script, check_classes
from sim.random.distributions import DistributionSpec, as_distribution
from sim.tiers.appserver.connectors import CONNECTORS, connector_class
from sim.tiers.balancer.policies import POLICIES, policies
from sim.tiers.proxy.mpm import MPMS
from sim.tiers.proxy.mpm import mpm as mpm_class

# `Literal[NAMES]` over these tuples (built at import from the registries) is what pydantic
# validates against; mypy cannot read a Literal whose values exist only at run time, hence the
# `type: ignore[valid-type]` where they are used.
POLICY_NAMES = tuple(POLICIES)
CONNECTOR_NAMES = tuple(CONNECTORS)
MPM_NAMES = tuple(MPMS)


NONE_WORD = "none"


class Strict(BaseModel):
    """Base: unknown keys are errors (a misspelt parameter must never be silently ignored).

    TOML has no null, so an optional parameter (one whose type includes none: "never",
    "unbounded", "unset") is set to none with the string "none", in a file and in `--set`
    (`--set proxy.backend_pool.timeout_s=none`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _none_word(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        optional = _optional_fields(cls)
        return {
            key: None
            if key in optional and isinstance(value, str) and value.strip().lower() == NONE_WORD
            else value
            for key, value in data.items()
        }


@cache
def _optional_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of `model` whose type admits None."""
    return frozenset(
        name for name, field in model.model_fields.items() if _admits_none(field.annotation)
    )


def _admits_none(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_none(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(_admits_none(arg) for arg in get_args(annotation))
    return annotation is type(None)


# --------------------------------------------------------------------------- clients
class Retry(Strict):
    """Client retries after a timeout or an error response, with capped exponential back-off."""

    max_retries: int = Field(
        0, ge=0, le=100, description="retries per request after the first attempt"
    )
    backoff_s: float = Field(1.0, ge=0, description="delay before the first retry [s]")
    multiplier: float = Field(2.0, ge=1, description="back-off growth factor per retry")
    max_backoff_s: float = Field(60.0, ge=0, description="cap on the back-off delay [s]")
    on_timeout: bool = Field(True, description="retry when the client timeout fires")
    on_error: bool = Field(True, description="retry on an error response (refused, 503)")


class RampStep(Strict):
    """One step of a closed-population schedule: change the number of users linearly."""

    users: int = Field(..., ge=0, description="number of users at the end of this step")
    over_s: float = Field(0.0, ge=0, description="duration of the linear ramp to `users` [s]")
    hold_s: float = Field(0.0, ge=0, description="time to hold `users` after the ramp [s]")


class RateStep(Strict):
    """One step of an open-arrival schedule: a constant Poisson rate for a while."""

    rate_per_s: float = Field(..., ge=0, description="Poisson arrival rate [requests/s]")
    duration_s: float = Field(..., gt=0, description="how long this rate holds [s]")


class Tcp(Strict):
    """The client's TCP stack: what happens when a server's listen queue is full."""

    syn_retries: int = Field(
        6,
        ge=0,
        le=20,
        description="SYN retransmissions before connect() fails (Linux net.ipv4.tcp_syn_retries, default 6)",
    )
    initial_rto_s: float = Field(
        1.0,
        gt=0,
        description="first SYN retransmission timeout, doubling after each [s] (1 s: Linux "
        ">= 2.6.39, RFC 6298; 3 s: older stacks, RFC 1122)",
    )


class ClientCommon(Strict):
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="client timeout [s]: the client abandons the request (the server keeps "
        "working on it); none = wait forever",
    )
    retry: Retry = Field(default_factory=Retry, description="retry policy")
    connect: DistributionSpec | None = Field(
        None,
        description="connection set-up time paid before a request on a new connection [s] (TCP handshake); none = 0",
    )
    keep_alive: bool = Field(
        False,
        description="persistent connections (HTTP/1.1 keep-alive; ab -k): a user's next "
        "request reuses its open connection to the front",
    )
    host: ClientHost | None = Field(
        None,
        description="the load generator's own CPU, which every request passes through (ab is "
        "one single-threaded process: its -c connections share one core); none = a client "
        "that is never the bottleneck",
    )
    close_delay_s: float | None = Field(
        0.0,
        ge=0,
        description="how long a client keeps its socket open after a response it does not "
        "follow on that connection [s]; "
        "none = never closes (seed 001's misbehaving clients waited 60 s)",
    )
    tcp: Tcp = Field(
        default_factory=Tcp,
        description="SYN retransmission when the listen queue of the server the clients connect to is full",
    )
    mix: dict[str, float] | None = Field(
        None,
        description="request classes by probability, e.g. {view = 0.7, search = 0.2, edit = 0.1} "
        "(names of the declared classes)",
    )
    mix_by: Literal["request", "user"] = Field(
        "request",
        description="request: every request draws its class from the mix; user: each user keeps one "
        "class (mix x users of each; closed and ab)",
    )
    script: Script | None = Field(
        None,
        description="session script: steps (each a class) with think times between them, optionally "
        "a Markov chain (TPC-W CBMG); closed, sessions and ab",
    )


class ClosedClients(ClientCommon):
    """N users, each: think, send, wait for the response (or the timeout), repeat."""

    kind: Literal["closed"]
    users: int = Field(..., ge=1, le=1_000_000, description="number of users N")
    think: DistributionSpec = Field(
        0.0, description="think time between a response and the next request [s] (Z)"
    )
    ramp: list[RampStep] | None = Field(
        None,
        description="optional schedule, e.g. [{users=100, over_s=900, hold_s=2700}]; `users` is then the peak; "
        'or {access_log = "FILE", log_format = "... %D"}: the users of each minute of the log, '
        "arrivals x (think mean + the log's response time) (also bin_s, scale, encoding)",
    )
    requests_per_user: int | None = Field(
        None, ge=1, description="finite workload: each user stops after this many requests"
    )

    @model_validator(mode="before")
    @classmethod
    def _ramp_from_access_log(cls, data: Any, info: ValidationInfo) -> Any:
        # a table names a log; its users per bin become the steps (and their peak the users)
        return closed_clients_from_access_log(data, (info.context or {}).get("base_dir"))

    @field_validator("ramp", mode="before")
    @classmethod
    def _refused_log(cls, value: Any) -> Any:
        why = refusal(value)
        if why is not None:
            raise ValueError(why)
        return value

    @model_validator(mode="after")
    def _ramp_peak(self) -> ClosedClients:
        if self.ramp:
            peak = max(step.users for step in self.ramp)
            if peak > self.users:
                raise ValueError(
                    f"ramp reaches {peak} users but clients.users is {self.users}; set users >= the ramp's peak"
                )
        return self


class OpenClients(ClientCommon):
    """Poisson arrivals, one request each (or a piecewise-constant rate schedule)."""

    kind: Literal["open"]
    rate_per_s: float | None = Field(None, gt=0, description="Poisson arrival rate [requests/s]")
    schedule: list[RateStep] | None = Field(
        None,
        description="piecewise-constant rate schedule, repeated cyclically; or "
        '{access_log = "FILE", log_format = "combined"}: the access log\'s arrivals per minute '
        "(also bin_s, scale, encoding)",
    )
    interarrival: DistributionSpec | None = Field(
        None, description="renewal inter-arrival time instead of Poisson [s] (e.g. deterministic)"
    )
    total_requests: int | None = Field(
        None, ge=1, description="finite workload: stop after this many arrivals"
    )

    @field_validator("schedule", mode="before")
    @classmethod
    def _from_access_log(cls, value: Any, info: ValidationInfo) -> Any:
        # a table names a log; its arrivals per bin become the steps, read once here
        if isinstance(value, dict):
            return schedule_from_access_log(value, (info.context or {}).get("base_dir"))
        return value

    @model_validator(mode="after")
    def _one_rate(self) -> OpenClients:
        given = [
            n for n in ("rate_per_s", "schedule", "interarrival") if getattr(self, n) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of clients.rate_per_s, clients.schedule, clients.interarrival"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.schedule is not None and not any(step.rate_per_s > 0 for step in self.schedule):
            # no request would ever arrive: the search for the next arrival would never end
            raise ValueError(
                "every step of clients.schedule has rate_per_s = 0, so no request ever arrives; "
                "give a step a positive rate_per_s"
            )
        return self


class SessionClients(ClientCommon):
    """Partly-open: sessions arrive (Poisson); each is a sequence of requests with think times."""

    kind: Literal["sessions"]
    session_rate_per_s: float = Field(..., gt=0, description="session arrival rate [sessions/s]")
    requests_per_session: float | None = Field(
        None,
        ge=1,
        description="mean requests per session; geometric (stay probability 1 - 1/mean) unless fixed; "
        "with a clients.script the script's path sets it",
    )
    fixed_length: bool = Field(
        False, description="every session has exactly requests_per_session requests"
    )
    think: DistributionSpec = Field(0.0, description="think time between requests of a session [s]")
    total_sessions: int | None = Field(
        None, ge=1, description="finite workload: stop after this many sessions"
    )

    @model_validator(mode="after")
    def _integral(self) -> SessionClients:
        if self.script is None and self.requests_per_session is None:
            raise ValueError(
                "clients.requests_per_session is required (or a [clients.script], whose path sets "
                "each session's length)"
            )
        if self.script is not None and self.requests_per_session is not None:
            raise ValueError(
                "clients.requests_per_session and clients.script both set a session's length: "
                "drop requests_per_session (the script's path is the session)"
            )
        if (
            self.fixed_length
            and self.requests_per_session is not None
            and self.requests_per_session != int(self.requests_per_session)
        ):
            raise ValueError("requests_per_session must be a whole number when fixed_length = true")
        return self


class AbClients(ClientCommon):
    """ApacheBench: `ab -c concurrency -n requests [-k]`: c loops, no think time, n in total."""

    kind: Literal["ab"]
    concurrency: int = Field(..., ge=1, le=100_000, description="ab -c: concurrent requests")
    requests: int = Field(..., ge=1, description="ab -n: total requests")
    repeat: int = Field(
        1,
        ge=1,
        le=1000,
        description="runs of ab one after another (a script that starts ab again when it "
        "returns: the servers' state carries over); each run's metrics are reported as batch.K.*",
    )

    @model_validator(mode="after")
    def _n_ge_c(self) -> AbClients:
        if self.requests < self.concurrency:
            raise ValueError(
                f"ab needs requests (-n {self.requests}) >= concurrency (-c {self.concurrency})"
            )
        return self


Clients = Annotated[
    ClosedClients | OpenClients | SessionClients | AbClients, Field(discriminator="kind")
]


# --------------------------------------------------------------------------- servers
class Host(Strict):
    """A server host: its CPU cores are processor-shared by all of its software threads."""

    cores: int = Field(
        1, ge=1, le=4096, description="hardware cores (processor sharing among running threads)"
    )
    speed: float = Field(1.0, gt=0, description="relative CPU speed: demands are divided by it")


class ClientHost(Host):
    """The load generator's CPU: `cores` processor-shared by its work on every request
    (building it, parsing the response: ab's one process on one core, JMeter's threads on all
    of the machine's).  The response time a client reports includes its own CPU time."""

    demand: DistributionSpec = Field(
        ...,
        description="client CPU per request [s] (writing the request, reading and parsing the "
        "response, the kernel's TCP work for it)",
    )
    connection_demand: DistributionSpec = Field(
        0.0,
        description="client CPU per new connection [s] (socket, connect(), close: paid on "
        "every request without keep-alive)",
    )


class JkLb(Strict):
    """mod_jk's lb worker (`worker.<lb>.*` in workers.properties): how a request that failed on
    one member is tried on the others, and when a failing member goes into error state."""

    retries: int = Field(
        2,
        ge=1,
        le=100,
        description="lb worker retries (default 2, JK_RETRIES): rounds over the members, the first "
        "included; a member in error state is forced back into use once per request when none is left",
    )
    lb_retries: int = Field(
        2,
        ge=1,
        le=1024,
        description="lb worker lb_retries (default 2, JK_LB_RETRIES): members tried per round",
    )
    retry_interval_s: float = Field(
        0.1,
        ge=0,
        le=3600,
        description="lb worker retry_interval (in ms; default 100) [s]: sleep between rounds",
    )
    max_reply_timeouts: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="lb worker max_reply_timeouts (default 0): a member goes into error state when more "
        "reply timeouts than this have accumulated (halved at each maintenance, worker.maintain)",
    )
    error_escalation_time_s: float | None = Field(
        None,
        ge=0,
        description="lb worker error_escalation_time (default recover_time / 2) [s]: a member failing a "
        "connect while it serves other requests is only in local error until this long after its first "
        "error; none = the default",
    )


JK_WORKER_PARAMETERS = (
    "reply_timeout_s",
    "socket_connect_timeout_s",
    "retries",
    "retry_interval_s",
    "recovery_options",
    "lb",
)


class BackendPool(Strict):
    """The front's persistent connections to each backend node (mod_proxy worker parameters;
    mod_jk ajp13 worker equivalents in brackets).  Matters with blocking backend connectors."""

    max: int | None = Field(
        None,
        ge=1,
        description="connections per child process and backend node: each child keeps its own pool "
        "(mod_proxy max, default the MPM's threads per child, 1 for prefork; mod_jk connection_pool_size, "
        "default ThreadsPerChild); none = that default (an unbounded front: unbounded)",
    )
    scheme: Literal["http", "ajp"] = Field(
        "http",
        description="the protocol to the backend (ProxyPass http:// or ajp://; mod_jk is ajp): sets the "
        "status of a read timeout (mod_proxy_http 502; mod_proxy_ajp 503 for an idempotent request, "
        "which also closes the client's connection; mod_jk: 504 after reply_timeout_s)",
    )
    ttl_s: float | None = Field(
        None,
        gt=0,
        description="an idle connection older than this is closed, not reused [s] (mod_proxy ttl; "
        "mod_jk connection_pool_timeout, default 0 = never: applied by each process's maintenance, run "
        "by a request every worker.maintain = balancer.maintain_s, down to connection_pool_minsize, "
        "with prefork too); none = never",
    )
    acquire_timeout_s: float | None = Field(
        None,
        gt=0,
        description="wait for a free pooled connection, then 503 [s] (mod_proxy acquire, default "
        "forever; mod_jk connection_acquire_timeout, default 0.2, looked for every 100 ms)",
    )
    module: Literal["mod_proxy", "mod_jk"] = Field(
        "mod_proxy",
        description="the Apache module that keeps the pool: sets the default read timeout (mod_proxy "
        "ProxyTimeout 60 s; mod_jk reply_timeout 0 = infinite) and, for mod_jk, its retries",
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="mod_proxy: read timeout, a request on a connection no backend thread has taken fails "
        "after this [s] (timeout / ProxyTimeout); unset = 60 s.  mod_jk: socket_timeout [s] (default 0 = "
        "none), which on Unix sets no read timeout (SO_RCVTIMEO is set only in builds defining "
        "USE_SO_RCVTIMEO) and is the default of socket_connect_timeout",
    )
    reply_timeout_s: float | None = Field(
        None,
        gt=0,
        description="mod_jk reply_timeout (workers.properties, in ms; default 0 = wait for ever) [s]: no "
        "reply this long after sending the request, mod_jk closes the connection (the node goes on "
        "serving the request) and retries on a new one, up to `retries` attempts; then 504",
    )
    socket_connect_timeout_s: float | None = Field(
        None,
        gt=0,
        description="mod_jk socket_connect_timeout (in ms; default socket_timeout x 1000, the same time) "
        "[s]: a connect() that a full accept queue leaves unanswered (the SYN is dropped) fails after "
        "this, 503; none = the kernel's SYN retransmissions (Linux tcp_syn_retries 6: 127 s)",
    )
    retries: int = Field(
        2,
        ge=1,
        le=100,
        description="mod_jk ajp13 worker retries (default 2, JK_RETRIES): attempts to send a request "
        "to the node, the first included, after a reply timeout or a failed connect",
    )
    retry_interval_s: float = Field(
        0.1,
        ge=0,
        le=3600,
        description="mod_jk retry_interval (in ms; default 100, JK_SLEEP_DEF) [s]: sleep before each retry",
    )
    recovery_options: int = Field(
        0,
        ge=0,
        le=31,
        description="mod_jk recovery_options bit mask (default 0): 1 = no retry once the node has the "
        "request (a reply timeout is then final), 2 = none after it sent headers, 4 = close on a client "
        "error, 8 = always retry HEAD, 16 = always retry GET (the simulated requests are GETs; 8 takes "
        "precedence over 16, as in ajp_get_reply)",
    )
    lb: JkLb = Field(
        default_factory=JkLb,
        description="mod_jk: the lb worker around the nodes' ajp13 workers (built when there is a "
        "balancer: more than one node, or backends.N.events; a single node is a plain ajp13 worker)",
    )
    disable_reuse: bool = Field(
        False,
        description="close each backend connection after its request instead of pooling it (mod_proxy "
        "disablereuse=On): a blocking connector's thread is freed with every response",
    )

    @model_validator(mode="after")
    def _jk_is_ajp(self) -> BackendPool:
        if self.module == "mod_jk" and self.scheme != "ajp" and "scheme" in self.model_fields_set:
            raise ValueError('mod_jk speaks AJP only: remove scheme or set scheme = "ajp"')
        return self

    @model_validator(mode="after")
    def _reuse_is_mod_proxy(self) -> BackendPool:
        if self.disable_reuse and self.module == "mod_jk":
            raise ValueError(
                "disable_reuse is mod_proxy's disablereuse; mod_jk always pools its endpoints: "
                'remove disable_reuse or set module = "mod_proxy"'
            )
        return self

    @model_validator(mode="after")
    def _jk_parameters_need_mod_jk(self) -> BackendPool:
        if self.module != "mod_jk":
            jk_only = sorted(set(JK_WORKER_PARAMETERS) & self.model_fields_set)
            if jk_only:
                raise ValueError(
                    f"{jk_only[0]} is a mod_jk worker property (workers.properties): "
                    f'set module = "mod_jk" or remove {jk_only[0]}'
                )
        return self

    @property
    def connect_timeout_s(self) -> float | None:
        """mod_jk socket_connect_timeout: when not set, socket_timeout x 1000 ms (ajp_init)."""
        if "socket_connect_timeout_s" in self.model_fields_set:
            return self.socket_connect_timeout_s
        return self.timeout_s

    @model_validator(mode="before")
    @classmethod
    def _module_default_timeout(cls, data):
        if not isinstance(data, dict):
            return data
        if data.get("module", "mod_proxy") == "mod_proxy":
            return {"timeout_s": 60.0, **data}  # ProxyTimeout defaults to Timeout, 60 s
        # mod_jk connection_acquire_timeout defaults to retries x retry_interval = 2 x 100 ms
        return {"acquire_timeout_s": 0.2, **data}


class Proxy(Host):
    """The front proxy (Apache httpd): a worker pool held for the whole proxied request."""

    workers: int | None = Field(
        256,
        ge=1,
        description="worker pool size (Apache MaxClients / MaxRequestWorkers); none = unbounded",
    )
    listen_backlog: int | None = Field(
        None,
        ge=0,
        description="connections waiting for a worker (Apache ListenBacklog); none = "
        "unbounded, 0 = refuse when all busy",
    )
    demand: DistributionSpec = Field(0.0, description="proxy CPU demand per request [s]")
    connection_demand: DistributionSpec = Field(
        0.0,
        description="proxy CPU demand per client TCP connection it accepts: accept(), socket and connection "
        "state set-up, close [s]; paid by the first request on each connection, so keep-alive spreads it",
    )
    mpm: Literal[MPM_NAMES] = Field(  # type: ignore[valid-type]
        "prefork",
        description="Apache multi-processing module: prefork/worker bind a worker to a connection (keep-alive idle "
        "time and lingering close hold it); event frees it after each response",
    )
    keep_alive: bool = Field(
        True, description="Apache KeepAlive (On by default; used when the clients keep alive)"
    )
    keep_alive_timeout_s: float = Field(
        5.0, gt=0, description="Apache KeepAliveTimeout: wait for the next request [s]"
    )
    max_keep_alive_requests: int = Field(
        100,
        ge=0,
        description="Apache MaxKeepAliveRequests: requests per connection (0 = unlimited)",
    )
    linger_s: float = Field(
        2.0,
        ge=0,
        description="lingering close: one idle read before the worker gives up on a client that does not close "
        "[s] (httpd SECONDS_TO_LINGER = 2, compile-time)",
    )
    threads_per_child: int = Field(
        25,
        ge=1,
        le=20000,
        description="worker/event: threads of each child process (Apache ThreadsPerChild, default 25; Debian's "
        "mpm_worker.conf / mpm_event.conf 25), at most thread_limit; MaxRequestWorkers (`workers`) is rounded "
        "down to a multiple of it (AH00316; raised to it if smaller, AH00314). Prefork children have one thread",
    )
    thread_limit: int = Field(
        64,
        ge=1,
        le=100000,
        description="worker/event: the cap on threads_per_child (Apache ThreadLimit, default 64; AH00310)",
    )
    server_limit: int | None = Field(
        None,
        ge=1,
        le=200000,
        description="child processes at most (Apache ServerLimit): caps MaxRequestWorkers / ThreadsPerChild "
        "(AH00318) or, prefork, MaxRequestWorkers; none = the MPM's default (prefork 256, worker/event 16)",
    )
    start_servers: int | None = Field(
        None,
        ge=1,
        description="child processes at the start (Apache StartServers: upstream default prefork 5, worker/event "
        "3; Debian's mpm_prefork.conf 5, mpm_worker.conf / mpm_event.conf 2); then the parent forks "
        "1, 2, 4 ... 32 children per second while too few workers are idle (min_spare_servers, "
        "min_spare_threads) and stops one per second above the maximum; none = every child ready from "
        "the start and no process management (a warm server)",
    )
    min_spare_servers: int = Field(
        5,
        ge=0,
        description="prefork: fork below this many idle children (Apache MinSpareServers, default 5; Debian 5)",
    )
    max_spare_servers: int = Field(
        10,
        ge=1,
        description="prefork: stop one idle child per second above this many (Apache MaxSpareServers, "
        "default 10; Debian 10)",
    )
    min_spare_threads: int = Field(
        75,
        ge=1,
        description="worker/event: fork children below this many idle threads across the children (Apache "
        "MinSpareThreads, default 75; Debian 25)",
    )
    max_spare_threads: int = Field(
        250,
        ge=1,
        description="worker/event: stop one child per second above this many idle threads (Apache "
        "MaxSpareThreads, default 250; Debian 75); raised to min_spare_threads + threads_per_child + 1 if "
        "lower, as httpd does",
    )
    async_request_worker_factor: float = Field(
        2.0,
        gt=0,
        description="event: a child accepts connections only while its open connections (lingering closes "
        "excepted) are fewer than ThreadsPerChild + this x its idle workers (Apache AsyncRequestWorkerFactor, "
        "default 2; httpd uses its whole part, at least 1)",
    )
    graceful_restart: bool = Field(
        False,
        description="the server was gracefully restarted (apachectl graceful) just before the run: the parent "
        "forks at 1 per second for the first 10 forking seconds before doubling (hold_off_on_exponential_spawning)",
    )
    uptime_s: float = Field(
        0.0,
        ge=0,
        description="how long httpd had been running when the load began [s] (since its start or restart): "
        "the parent's maintenance runs at whole seconds of its own clock (ap_wait_or_timeout sleeps 1 s, "
        "server_main_loop), so the first fork or stop comes ceil(uptime_s) - uptime_s s into the load, "
        "a whole second at 0; the ticks before the load act on the idle server. Only with start_servers",
    )
    forward: bool = Field(
        True, description="forward requests to the backends (false: the proxy serves them itself)"
    )
    backend_pool: BackendPool = Field(
        default_factory=BackendPool, description="connections to each backend node"
    )

    @model_validator(mode="after")
    def _spawning(self) -> Proxy:
        _check_proxy(self)
        return self

    @property
    def processes(self) -> Processes | None:
        """httpd's own reading of the process directives (`*_check_config` in prefork.c,
        worker.c, event.c); None for an unbounded front."""
        return None if self.workers is None else Processes.of(self)


PREFORK_ONLY = ("min_spare_servers", "max_spare_servers")
THREADED_ONLY = ("threads_per_child", "thread_limit", "min_spare_threads", "max_spare_threads")


def _check_proxy(proxy: Proxy) -> None:
    given = proxy.model_fields_set
    foreign = PREFORK_ONLY if proxy.mpm != "prefork" else THREADED_ONLY
    for name in foreign:
        if name in given:
            raise ValueError(
                f"proxy.{name} does not apply to mpm = {proxy.mpm!r} (prefork: "
                f"{', '.join(PREFORK_ONLY)}; worker/event: {', '.join(THREADED_ONLY)})"
            )
    if "async_request_worker_factor" in given and proxy.mpm != "event":
        raise ValueError(
            f'proxy.async_request_worker_factor is the event MPM\'s; mpm is {proxy.mpm!r}: set mpm = "event"'
        )
    if proxy.start_servers is not None and proxy.workers is None:
        raise ValueError(
            "proxy.start_servers needs a finite proxy.workers (MaxRequestWorkers): set workers, "
            "or start_servers = none"
        )
    if "uptime_s" in given and proxy.uptime_s > 0 and proxy.start_servers is None:
        raise ValueError(
            "proxy.uptime_s times the parent's process management, which needs proxy.start_servers "
            "(StartServers): set start_servers, or remove uptime_s"
        )
    if proxy.mpm != "prefork" and proxy.min_spare_threads > proxy.max_spare_threads:
        raise ValueError(
            f"proxy.min_spare_threads ({proxy.min_spare_threads}) must be <= "
            f"proxy.max_spare_threads ({proxy.max_spare_threads})"
        )
    if proxy.min_spare_servers > proxy.max_spare_servers:
        raise ValueError(
            f"proxy.min_spare_servers ({proxy.min_spare_servers}) must be <= "
            f"proxy.max_spare_servers ({proxy.max_spare_servers})"
        )


@dataclass(frozen=True)
class Processes:
    """The child processes httpd runs for the proxy's directives, after its start-up checks:
    ThreadsPerChild capped by ThreadLimit (AH00310), MaxRequestWorkers raised to ThreadsPerChild
    (AH00314) and rounded down to a multiple of it (AH00316), the children capped by
    ServerLimit (AH00318; prefork AH00180), MaxSpareThreads raised to MinSpareThreads +
    ThreadsPerChild + 1 (worker_run / event_run)."""

    threads_per_child: int  # 1 for prefork
    max_children: int  # ap_daemons_limit: scoreboard slots
    start: int  # children at the start
    min_spare: int  # idle children (prefork) or idle threads (worker, event)
    max_spare: int
    async_factor: int | None  # event: the whole part of AsyncRequestWorkerFactor; else None
    notes: tuple[str, ...]  # what httpd would log about the adjustments

    @property
    def workers(self) -> int:
        return self.max_children * self.threads_per_child

    @classmethod
    def of(cls, proxy: Proxy) -> Processes:
        notes: list[str] = []
        workers = proxy.workers
        assert workers is not None
        kind = mpm_class(proxy.mpm)
        if kind.single_threaded_children:  # prefork: a child is a worker
            limit = proxy.server_limit or 256
            if workers > limit:
                notes.append(
                    f"AH00180: MaxRequestWorkers of {workers} exceeds ServerLimit value of {limit}, "
                    f"decreasing to match"
                )
            children = min(workers, limit)
            start = children if proxy.start_servers is None else min(proxy.start_servers, children)
            return cls(
                1,
                children,
                start,
                proxy.min_spare_servers,
                max(proxy.max_spare_servers, proxy.min_spare_servers + 1),
                None,
                tuple(notes),
            )
        per_child = proxy.threads_per_child
        if per_child > proxy.thread_limit:
            notes.append(
                f"AH00310: ThreadsPerChild of {per_child} exceeds ThreadLimit of "
                f"{proxy.thread_limit}, decreasing to match"
            )
            per_child = proxy.thread_limit
        if workers < per_child:
            notes.append(
                f"AH00314: MaxRequestWorkers of {workers} is less than ThreadsPerChild of "
                f"{per_child}, increasing to {per_child}"
            )
            workers = per_child
        children = workers // per_child
        if workers % per_child:
            notes.append(
                f"AH00316: MaxRequestWorkers of {workers} is not an integer multiple of "
                f"ThreadsPerChild of {per_child}, decreasing to nearest multiple "
                f"{children * per_child}, for a maximum of {children} servers"
            )
        limit = proxy.server_limit or 16
        if children > limit:
            notes.append(
                f"AH00318: MaxRequestWorkers of {children * per_child} would require {children} "
                f"servers and would exceed ServerLimit of {limit}, decreasing to {limit * per_child}"
            )
            children = limit
        start = children if proxy.start_servers is None else min(proxy.start_servers, children)
        min_spare = proxy.min_spare_threads
        max_spare = max(proxy.max_spare_threads, min_spare + per_child + 1)
        factor = None
        if kind.limits_connections_by_idle_workers:  # event: AsyncRequestWorkerFactor
            factor = max(1, int(proxy.async_request_worker_factor * 16) // 16)
        return cls(per_child, children, start, min_spare, max_spare, factor, tuple(notes))


class BackendEvent(Strict):
    """Something that happens to a backend node at a given time."""

    at_s: float = Field(..., ge=0, description="when [s]")
    kind: Literal["crash", "recover", "slow"] = Field(
        ...,
        description="crash: the process dies (requests in flight fail, connections refused, sessions lost); "
        "recover: it is back at its configured speed; slow: its CPU bursts take `factor` times as long",
    )
    factor: float = Field(1.0, gt=0, description="slow: how many times longer each CPU burst takes")
    node: int | None = Field(
        None, ge=1, description="which node of the group (1 = the first); none = every node"
    )

    @model_validator(mode="after")
    def _factor_for_slow(self) -> BackendEvent:
        if self.kind != "slow" and "factor" in self.model_fields_set:
            raise ValueError(f"factor applies to kind = 'slow' only, not {self.kind!r}")
        return self


class Jvm(Strict):
    """The HotSpot JVM of each node of a backend group: heap, garbage collection, sessions held
    in the heap, JIT warm-up (`sim.tiers.appserver.jvm`).  Sizes in MiB as `-Xmx96m` counts them."""

    heap_mb: float = Field(..., gt=0, description="heap size, -Xmx (= -Xms) [MiB]")
    young_mb: float | None = Field(
        None,
        gt=0,
        description="young generation, -Xmn [MiB]; none = heap / 8 (JDK 6 with "
        "-XX:+UseConcMarkSweepGC: NewRatio 7, arguments.cpp set_cms_and_parnew_gc_flags)",
    )
    survivor_ratio: int = Field(
        8, ge=1, le=65536, description="-XX:SurvivorRatio: eden / one survivor space"
    )
    baseline_mb: float = Field(
        ...,
        ge=0,
        description="live heap without sessions: the container's and the application's long-lived "
        "objects (caches, loaded data) [MiB]",
    )
    creates_sessions: bool = Field(
        False,
        description="the application calls request.getSession() on every request: a client that keeps "
        "cookies reuses its session, one that does not (ab, open arrivals) gets a new session per request",
    )
    session_bytes: int = Field(
        2048,
        ge=0,
        description="heap per live session: the session object, its attribute map and attributes, "
        "the manager's table entry [bytes] (also the size of each replica this node holds)",
    )
    session_timeout_s: float = Field(
        1800.0,
        gt=0,
        description="web.xml <session-timeout> (30 min default in Tomcat and Jetty) [s]",
    )
    expiry_check_s: float = Field(
        60.0,
        gt=0,
        description="period of the expiry sweep: Tomcat backgroundProcessorDelay (10 s) x "
        "ManagerBase.processExpiresFrequency (6); Jetty HashSessionManager scavengePeriod [s]",
    )
    allocation_kb: float = Field(
        ...,
        ge=0,
        description="bytes allocated per request, short-lived (request, response, strings, "
        "rendering buffers) [KiB]: fills eden, so it sets how often young collections run",
    )
    young_pause_s: float = Field(
        0.002, ge=0, description="young collection (ParNew): fixed stop-the-world part [s]"
    )
    young_s_per_mb: float = Field(
        0.01,
        ge=0,
        description="young collection: copying cost per MiB of live young objects promoted [s/MiB]",
    )
    full_pause_s: float = Field(
        0.02, ge=0, description="full collection (mark-sweep-compact): fixed part [s]"
    )
    full_s_per_mb: float = Field(
        0.01,
        ge=0,
        description="full collection: marking and compacting cost per MiB of live data [s/MiB]",
    )
    gc_overhead_limit: bool = Field(
        True,
        description="-XX:+UseGCOverheadLimit: OutOfMemoryError after 5 full collections in a row over "
        "both gc_time_limit and gc_heap_free_limit",
    )
    gc_time_limit: float = Field(
        0.98, gt=0, le=1, description="-XX:GCTimeLimit=98, as a fraction of time"
    )
    gc_heap_free_limit: float = Field(
        0.02, ge=0, lt=1, description="-XX:GCHeapFreeLimit=2, as a fraction of the heap"
    )
    non_heap_mb: float = Field(
        0.0,
        ge=0,
        description="resident memory outside the heap: VM code, JIT compilers and code cache, "
        "-XX:PermSize, thread stacks [MiB] (only for the resident-memory metric)",
    )
    jit_cold_factor: float = Field(
        1.0,
        gt=0,
        description="CPU demand multiplier of the first request (interpreted code) relative to `cpu`",
    )
    jit_warm_factor: float = Field(
        1.0,
        gt=0,
        description="CPU demand multiplier once compiled: 1 for the VM `cpu` was measured on; e.g. "
        "> 1 for -client's C1 code against -server's C2",
    )
    jit_warmup_requests: float = Field(
        0.0,
        ge=0,
        description="requests served over which the multiplier falls from cold to warm (e-folding: "
        "exp(-k / this)); 0 = no warm-up, the warm factor from the start. Method compilation thresholds: "
        "-XX:CompileThreshold 10000 (-server), 1500 (-client)",
    )

    @property
    def young_bytes(self) -> float:
        return (self.heap_mb / 8 if self.young_mb is None else self.young_mb) * 1024.0 * 1024.0

    @model_validator(mode="after")
    def _fits(self) -> Jvm:
        young = self.young_bytes / (1024.0 * 1024.0)
        if young >= self.heap_mb:
            raise ValueError(
                f"jvm.young_mb = {young:g} must be below jvm.heap_mb = {self.heap_mb:g} (-Xmn < -Xmx)"
            )
        if self.baseline_mb >= self.heap_mb - young:
            raise ValueError(
                f"jvm.baseline_mb = {self.baseline_mb:g} does not fit in the old generation "
                f"({self.heap_mb - young:g} MiB = heap_mb - young_mb): raise heap_mb or lower baseline_mb"
            )
        if (
            "jit_warmup_requests" not in self.model_fields_set
            and self.jit_cold_factor != self.jit_warm_factor
        ):
            raise ValueError(
                "jvm.jit_cold_factor differs from jit_warm_factor: give jvm.jit_warmup_requests "
                "(how many requests the warm-up takes)"
            )
        return self


class Backend(Host):
    """A group of identical application-server nodes (Tomcat / Jetty / JBoss)."""

    name: str = Field(
        "node",
        pattern=r"^[A-Za-z][A-Za-z0-9_-]*$",
        description="group name; nodes are name1..nameK",
    )
    count: int = Field(1, ge=1, le=1024, description="number of nodes in the group")
    threads: int | None = Field(
        200,
        ge=1,
        description="request thread pool (Tomcat maxThreads, Jetty QueuedThreadPool.maxThreads); none = unbounded",
    )
    accept_queue: int | None = Field(
        None,
        ge=0,
        description="requests waiting for a thread (Tomcat acceptCount, Jetty acceptQueueSize); none = unbounded",
    )
    acceptors: int = Field(
        0,
        ge=0,
        le=1024,
        description="threads of `threads` the connector's acceptors hold for ever (Jetty's connector "
        "acceptors run on the server's QueuedThreadPool: AbstractConnector default 1, so 1 for Jetty 7/8 "
        "SocketConnector / Ajp13SocketConnector; Jetty 7.6/8 SelectChannelConnector max(1, (cores + 3) / 4); "
        "Jetty 9+ ServerConnector acceptors); 0 = none (Tomcat's Acceptor threads are not from maxThreads)",
    )
    selectors: int = Field(
        0,
        ge=0,
        le=1024,
        description="threads of `threads` the connector's selector loops hold for ever (Jetty 7.6/8 "
        "SelectChannelConnector: one select set per acceptor, each on a pool thread; Jetty 9+ ServerConnector "
        "selectors); 0 = none (blocking connectors; Tomcat's Poller threads are not from maxThreads)",
    )
    demand: DistributionSpec = Field(
        ..., description="CPU demand per request on this node [s] (was backends.N.cpu)"
    )
    io_wait: DistributionSpec = Field(
        0.0,
        description="non-CPU wait per request (disk, remote calls): holds a thread, not a core [s]",
    )
    db_calls: int = Field(
        0, ge=0, le=1000, description="database calls per request (visits to the database)"
    )
    jdbc_pool: int | None = Field(
        None,
        ge=1,
        description="JDBC connection pool per node (maxActive / max-pool-size); none = unbounded",
    )
    jdbc_connect: DistributionSpec | None = Field(
        None,
        description="the time to open one JDBC connection (PostgreSQL forks a backend and "
        "authenticates it: pgbench --connect measures it), paid by the request that finds no "
        "idle connection while fewer than jdbc_pool are open; none = connections cost nothing "
        "to open [s]",
    )
    jdbc_initial_size: int = Field(
        0,
        ge=0,
        description="connections the pool opens when the node starts, before it serves (DBCP "
        "initialSize, default 0; HikariCP fills to minimumIdle)",
    )
    weight: float = Field(
        1.0, gt=0, description="balancer weight (mod_jk lbfactor, mod_proxy loadfactor)"
    )
    connector: str = Field(
        "nonblocking",
        description="blocking: a thread per connection for the connection's life, idle or not (Tomcat BIO, Jetty "
        "SocketConnector / Ajp13SocketConnector); nonblocking: a thread per request "
        "(Tomcat NIO, Jetty SelectChannelConnector)",
        json_schema_extra={"enum": list(CONNECTOR_NAMES)},
    )
    connection_idle_timeout_s: float | None = Field(
        None,
        gt=0,
        description="the backend closes a connection idle this long, freeing a blocking connector's thread [s] "
        "(Tomcat keepAliveTimeout / connectionTimeout, infinite for AJP; Jetty maxIdleTime); none = never",
    )
    connection_setup: DistributionSpec = Field(
        0.0,
        description="per new connection from the front's pool, a set-up serialised on the node before its first "
        "request: the connection's thread waits its turn at one node-wide lock and holds it this long, no core "
        "(Tomcat 5.5 JK `HandlerRequest.checkRequest`: each new AJP connection's RequestProcessor is registered "
        "in JMX under a static lock, `registerRequests` default true; JBoss 4's MBeanServer) [s]; 0 = none",
    )
    max_connections: int | None = Field(
        None,
        ge=1,
        description="nonblocking connector: connections the node keeps open at once, idle or busy (Tomcat NIO "
        "maxConnections, 10000 in Tomcat 7); one beyond it waits in the accept queue, holding nothing, until a "
        "connection closes; none = unbounded. A blocking connector's limit is its threads",
    )
    jvm: Jvm | None = Field(
        None,
        description="the nodes' JVM: heap, garbage collection, sessions, JIT warm-up; none = not modelled",
    )
    events: list[BackendEvent] = Field(
        default_factory=list,
        description='crashes, recoveries and slow-downs at given times, e.g. {at_s = 60, kind = "crash"}',
    )
    autoscale: Autoscale | None = Field(
        None,
        description="a Kubernetes HPA on the group and the life of the nodes it adds (the "
        "reference engine runs it); none = a fixed count",
    )

    @field_validator("connector")
    @classmethod
    def _known_connector(cls, kind: str) -> str:
        # read live: a connector class defined after import (a plug-in, a test) is known too
        if kind not in CONNECTORS:
            raise ValueError(f"unknown connector; one of: {', '.join(repr(n) for n in CONNECTORS)}")
        return kind

    @model_validator(mode="after")
    def _connection_limit(self) -> Backend:
        if self.max_connections is not None and self.connector == "blocking":
            raise ValueError(
                "max_connections is for a nonblocking connector (Tomcat NIO maxConnections); a "
                "blocking connector holds a thread per connection, so its limit is `threads`: "
                'remove max_connections or set connector = "nonblocking"'
            )
        return self

    @model_validator(mode="after")
    def _thread_budget(self) -> Backend:
        held = self.acceptors + self.selectors
        if held and self.threads is not None and self.threads <= held:
            raise ValueError(
                f"threads = {self.threads} leaves no request thread after {self.acceptors} acceptors "
                f'and {self.selectors} selectors (Jetty: "insufficient maxThreads configured"): '
                f"raise threads above {held}"
            )
        return self

    @property
    def request_threads(self) -> int | None:
        """The usable thread budget: maxThreads less the pool threads the connector's acceptors
        and selectors hold for ever (Jetty's QueuedThreadPool); none = unbounded."""
        if self.threads is None:
            return None
        return self.threads - self.acceptors - self.selectors

    @model_validator(mode="after")
    def _jdbc_connections(self) -> Backend:
        opening = self.jdbc_connect is not None or "jdbc_initial_size" in self.model_fields_set
        if opening and (self.jdbc_pool is None or not self.db_calls):
            raise ValueError(
                "jdbc_connect and jdbc_initial_size are the JDBC pool's: give jdbc_pool (DBCP "
                "maxTotal) and db_calls, or remove them"
            )
        if "jdbc_initial_size" in self.model_fields_set and self.jdbc_connect is None:
            raise ValueError(
                "jdbc_initial_size is the connections open from the start, which matters only "
                "where opening one costs time: give jdbc_connect, or remove jdbc_initial_size"
            )
        if self.jdbc_pool is not None and self.jdbc_initial_size > self.jdbc_pool:
            raise ValueError(
                f"jdbc_initial_size = {self.jdbc_initial_size} is above jdbc_pool = "
                f"{self.jdbc_pool} (DBCP refuses initialSize > maxTotal): lower it"
            )
        return self

    @model_validator(mode="after")
    def _event_nodes(self) -> Backend:
        for event in self.events:
            if event.node is not None and event.node > self.count:
                raise ValueError(
                    f"an event names node {event.node} but the group has count = {self.count}"
                )
        return self


class DatabaseLock(Strict):
    """A serialised section of the database shared by every node (`[database.lock]`): a hot
    row every transaction updates (PostgreSQL's row lock: a second `UPDATE` of the row waits,
    `log_lock_waits`, until the first transaction's `COMMIT`), a sequence, a table lock.

    A database call that takes it (`share` of the calls) waits first-come first-served for
    one of `permits`, holding its JDBC connection and request thread; it then holds the lock
    through `hold` (the statements and round trips between the locking statement and the
    `COMMIT`) and through its own CPU and disk work (the commit's WAL flush: PostgreSQL
    `synchronous_commit = on` waits for the flush before releasing its locks).  The lock's
    busy share (`database.lock.utilization`) is what bounds a cluster sharing one database:
    adding nodes adds waiters, not throughput.

    `order` is who gets the lock next.  The order does not change the lock's throughput nor the
    mean wait, but it sets the wait's tail: served in random order, a waiter among n others
    is passed over again and again, so the p95 grows with the number of waiters -- the waiters
    a third node adds.

    `wake_per_waiter_s` is what the waiters cost the holder.  At a hot row's `COMMIT`
    PostgreSQL wakes the old version's waiters one after another (the tuple lock's queue:
    each returns `TM_Updated` from `heap_update`, gives up its place and re-locks the newest
    version through `EvalPlanQual`), on the same cores as the new holder's statements and
    round trips: the more waiters, the longer the section.  A lock manager that grants one
    waiter and lets the rest sleep (InnoDB's queue, `LOCK TABLE`) has none."""

    share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="share of the database calls that take the lock (a transaction modelled as one "
        "call that updates the hot row: 1; one of db_calls = 3 statements: 1/3)",
    )
    permits: int = Field(
        1, ge=1, le=4096, description="holders at once: 1 for a row, a sequence or a table lock"
    )
    hold: DistributionSpec = Field(
        0.0,
        description="time the lock is held before the call's own CPU and disk work [s]: the "
        "statements and round trips between the locking statement and the COMMIT",
    )
    order: Literal["fifo", "random"] = Field(
        "fifo",
        description="which waiter a released lock goes to: 'fifo', the oldest (a lock manager's "
        "queue: PostgreSQL's LOCK TABLE, a SELECT ... FOR UPDATE of one row version); "
        "'random', any waiter alike (PostgreSQL's hot row updated by every transaction: each "
        "COMMIT makes a new row version and its waiters race for it again, README.tuplock)",
    )
    wake_per_waiter_s: float = Field(
        0.0,
        ge=0,
        le=1,
        description="time added to a holder's section for each waiter still queued when it is "
        "granted the lock [s]: PostgreSQL wakes every waiter of a hot row at each COMMIT (each "
        "returns TM_Updated from heap_update and re-locks the new version through "
        "EvalPlanQual), work that competes with the new holder's; 0 = none",
    )


class Database(Host):
    """The shared database host."""

    connections: int | None = Field(
        None,
        ge=1,
        description="server-side connection limit (e.g. PostgreSQL max_connections); none = unbounded",
    )
    demand: DistributionSpec = Field(..., description="CPU demand per database call [s]")
    disk_demand: DistributionSpec = Field(
        0.0,
        description="disk service time per database call, after its CPU work, holding its connection [s]; "
        "0 = the working set is cached in memory",
    )
    disks: int = Field(
        1,
        ge=1,
        le=4096,
        description="disk spindles serving the calls' I/O, each one at a time (FCFS)",
    )
    lock: DatabaseLock | None = Field(
        None,
        description="a serialised section shared by every node (a hot row, a sequence, a table "
        "lock); none = no call waits for another",
    )


class Balancer(Strict):
    """How the proxy picks a backend node, and what it does about sessions and failures.

    Keys beyond the fields below are a policy's own parameters (`Policy.Parameters`): they
    are accepted only for the policy that declares them (`policy_parameters_own`).

    Policies (`policy`), by the names their users know them by: round_robin (strict
    rotation), random (uniform), least_outstanding (fewest in flight, ties by rotation),
    lighttpd_round_robin (lighttpd 1.5 `balancer = "round-robin"`: uniform random among active
    backends), sqf (lighttpd shortest queue first: fewest open backend connections), static
    (lighttpd: first active), byrequests (mod_proxy_balancer `lbmethod`; smooth weighted round
    robin, nginx's default), bytraffic, bybusyness (mod_proxy_balancer), mod_jk_request /
    mod_jk_session / mod_jk_traffic / mod_jk_busyness (mod_jk `method` R/S/T/B with `lb_value`
    accounting), carp (CARP: highest hash score, load-factor multipliers), consistent_hash
    (ketama ring, HAProxy `hash-balance-factor` bounded loads), power_of_d (d random choices,
    fewest outstanding), p2c_peak_ewma (Finagle), join_idle_queue, jboss_round_robin,
    jboss_random_robin, jboss_first_available, jboss_first_available_identical_all_proxies
    (JBoss smart-stub policies).  Member weights are `backends.N.weight`.
    """

    # a policy's own parameters are extra keys, checked against its declaration
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    policy: str = Field(
        "round_robin",
        description="balancing policy: " + ", ".join(POLICY_NAMES),
        json_schema_extra={"enum": list(POLICY_NAMES)},
    )
    members: list[str] | None = Field(
        None,
        description="backend groups the balancer sends to (lighttpd proxy-core.backends, mod_proxy "
        "BalancerMember); none = every group.  Groups left out are not built",
    )
    report_interval_s: float | None = Field(
        None,
        gt=0,
        description="the policy sees requests outstanding per member only as reported every this many "
        "seconds (stale load information, as with backend heartbeats); none = live counts",
    )
    sticky_session: bool = Field(
        False,
        description="route a request carrying a session id to the member named by its route suffix "
        "(mod_jk sticky_session, mod_proxy_balancer stickysession, Tomcat jvmRoute)",
    )
    sticky_session_force: bool = Field(
        False,
        description="if the session's member is in error, answer 503 instead of failing over and losing "
        "the session (mod_jk sticky_session_force, mod_proxy_balancer nofailover=On)",
    )
    retry_s: float = Field(
        60.0,
        ge=0,
        description="a member whose connections fail stays in error state this long before real "
        "traffic tries it again [s] (mod_proxy retry, default 60; mod_jk recover_time, 60; lighttpd disable-time, 1); "
        "also a lone mod_proxy worker's error state after a connect that timed out",
    )
    max_attempts: int | None = Field(
        None,
        ge=1,
        description="members tried per request when connections are refused (the first included; "
        "mod_proxy_balancer maxattempts + 1); none = every member",
    )
    choices: int = Field(
        2,
        ge=2,
        le=64,
        description="power_of_d: members drawn per request (d; HAProxy random(draws))",
    )
    decay_s: float = Field(
        10.0,
        gt=0,
        description="p2c_peak_ewma: decay time of the latency EWMA [s] (Finagle decayTime)",
    )
    maintain_s: float = Field(
        60.0, gt=0, description="mod_jk_*: lb_value halving interval [s] (mod_jk worker.maintain)"
    )
    hash_key: Literal["url", "session"] = Field(
        "url", description="carp, consistent_hash: hash the request URL or the client's session"
    )
    urls: int = Field(
        1000, ge=1, le=10_000_000, description="carp, consistent_hash: distinct URLs requested"
    )
    url_zipf_s: float = Field(
        1.0,
        ge=0,
        le=5,
        description="carp, consistent_hash: Zipf exponent of URL popularity (0 = uniform)",
    )
    ring_points: int = Field(
        160,
        ge=1,
        le=10_000,
        description="consistent_hash: ring points per unit of weight (ketama 160)",
    )
    hash_balance_factor: int = Field(
        0,
        ge=0,
        le=100_000,
        description="consistent_hash: no member takes more than this percentage of the mean "
        "load (HAProxy hash-balance-factor; 0 = off, else > 100, e.g. 125)",
    )
    response_bytes: DistributionSpec = Field(
        1000.0, description="bytraffic, mod_jk_traffic: bytes read plus written per request [bytes]"
    )

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        # read live: a policy class defined after import (a plug-in, a test) is known too
        known = policies()
        if name not in known:
            raise ValueError(f"unknown policy; one of: {', '.join(repr(n) for n in known)}")
        return name

    @model_validator(mode="after")
    def _parameters_of_the_policy(self) -> Balancer:
        known = policies()
        self.policy_parameters_own()  # a policy's own fields: declared by it, and valid
        uses = set(known[self.policy][1])
        specific = {name for _, params in known.values() for name in params}
        foreign = sorted(name for name in self.model_fields_set & specific if name not in uses)
        if foreign:
            raise ValueError(
                f"balancer.{foreign[0]} does not apply to policy {self.policy!r}"
                + (
                    f" (its parameters: {', '.join(sorted(uses))})"
                    if uses
                    else " (it has no parameters of its own)"
                )
            )
        if 0 < self.hash_balance_factor <= 100:
            raise ValueError("balancer.hash_balance_factor must be 0 (off) or above 100 (e.g. 125)")
        if self.sticky_session_force and not self.sticky_session:
            raise ValueError("balancer.sticky_session_force needs sticky_session = true")
        return self

    def policy_parameters_own(self) -> dict[str, Any]:
        """The values of the fields the policy declares itself (`Policy.Parameters`), defaults
        filled in; a key of `[balancer]` that neither this schema nor the policy declares is
        an error, as everywhere in a model file."""
        given = dict(self.model_extra or {})
        own = policies()[self.policy][0].Parameters
        if own is None:
            if given:
                raise ValueError(
                    f"unknown parameter balancer.{sorted(given)[0]} (policy {self.policy!r} "
                    "declares no parameters of its own)"
                )
            return {}
        unknown = sorted(set(given) - set(own.model_fields))
        if unknown:
            raise ValueError(
                f"unknown parameter balancer.{unknown[0]} (policy {self.policy!r} declares: "
                + ", ".join(sorted(own.model_fields))
                + ")"
            )
        try:
            return dict(own.model_validate(given))
        except ValueError as exc:  # pydantic's ValidationError: one line per field
            first = exc.errors()[0] if hasattr(exc, "errors") else None
            if first is None:
                raise
            field = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"balancer.{field} = {given.get(field)!r}: {first['msg']}") from None

    def parameters_of(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The `[balancer]` parameters a policy class reads (`Policy.parameters`), by name."""
        own = self.policy_parameters_own()
        return {name: own[name] if name in own else getattr(self, name) for name in names}


# --------------------------------------------------------------------------- run control
class Precision(Strict):
    """Sequential stopping: add replications until a metric's relative half-width is small enough."""

    metric: str = Field(
        "response.mean", description="metric name, e.g. response.mean, throughput, response.p95"
    )
    relative_half_width: float = Field(0.05, gt=0, lt=1, description="target half-width / mean")
    max_replications: int = Field(
        100, ge=2, le=10_000, description="give up after this many replications"
    )


class Run(Strict):
    """Run control: how long, how many replications, warm-up, seed."""

    duration_s: float | None = Field(
        None, gt=0, description="simulated time per replication [s] (steady-state runs)"
    )
    requests: int | None = Field(
        None,
        ge=1,
        description="stop each replication after this many completed responses (steady-state "
        "runs); with duration_s too, whichever is reached first ends it (a note says which)",
    )
    max_duration_s: float = Field(
        1e7, gt=0, description="safety limit on simulated time for finite workloads [s]"
    )
    warmup: Literal["mser", "none"] | float = Field(
        "mser",
        description="warm-up removal: 'mser' (MSER-5 truncation, White 1997), 'none', or a fixed time [s]",
    )
    replications: int = Field(10, ge=1, le=10_000, description="independent replications")
    seed: int = Field(1, ge=0, lt=2**63, description="root seed; every stream derives from it")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="confidence level of the intervals")
    precision: Precision | None = Field(None, description="optional sequential stopping rule")
    timeseries_interval_s: float = Field(1.0, gt=0, description="interval of --timeseries rows [s]")
    max_in_flight: int = Field(
        1_000_000,
        ge=1,
        description="abort a replication whose requests in flight exceed this (runaway queue)",
    )
    engine: Literal["auto", "reference", "compiled"] = Field(
        "auto",
        description="simulation engine: 'compiled' (numba; the queueing core: clients, pools, "
        "processor-shared CPUs, state-blind balancing, JDBC, database), 'reference' (SimPy "
        "calendar; every mechanism), 'auto' = compiled when the model is in its core",
    )
    max_events: float | None = Field(
        1e8,
        gt=0,
        description="refuse a run estimated (before it starts) to simulate more requests and "
        "periodic events than this over all its replications (about 10 000 a second on one "
        "core: 1e8 is hours); none = no limit",
    )


class Meta(Strict):
    name: str = Field("unnamed model", description="short name shown in reports")
    description: str = Field("", description="what the model represents")
    provenance: dict[str, str] = Field(
        default_factory=dict,
        description="parameter path -> where its value comes from (documented default, seed, calibrated)",
    )


class SessionReplication(Strict):
    """Replication of conversational state between the backend nodes after a request.

    Web tier: the HTTP session (JBoss `CacheMode` REPL_SYNC / REPL_ASYNC, Tomcat `DeltaManager`
    / `BackupManager`); EJB tier: stateful session beans, replicated after each method
    invocation that changed them (JBoss SFSB `isModified`)."""

    tier: Literal["web", "ejb"] = Field(
        "web", description="web: HTTP session; ejb: stateful session beans"
    )
    enabled: bool = Field(
        True,
        description="false keeps the settings but replicates nothing (a `<distributable/>` application "
        "deployed without clustering), e.g. to compare with and without replication from one model file",
    )
    mode: Literal["sync", "async"] = Field(
        "sync",
        description="sync: the request thread waits for every replica's acknowledgement (REPL_SYNC, Tomcat "
        "channelSendOptions with ack); async: it does not, but blocks when the flow-control credits are used up "
        "(REPL_ASYNC, JGroups FC)",
    )
    scope: Literal["all", "buddy"] = Field(
        "all",
        description="all: every other node holds a copy (total replication, DeltaManager); buddy: the next "
        "`buddies` nodes in ring order (JBoss buddy replication numBuddies, Tomcat BackupManager = 1)",
    )
    buddies: int = Field(1, ge=1, description="copies with scope = buddy (JBoss numBuddies)")
    granularity: Literal["session", "attribute"] = Field(
        "session",
        description="what is sent: the whole session (JBoss replication-granularity SESSION) or only the "
        "changed attributes (ATTRIBUTE / FIELD, Tomcat DeltaManager deltas)",
    )
    trigger: Literal["set", "set_and_non_primitive_get", "set_and_get"] = Field(
        "set_and_non_primitive_get",
        description="which requests replicate (JBoss replication-trigger): SET = those that call setAttribute; "
        "SET_AND_NON_PRIMITIVE_GET (default) = also those that read a mutable attribute; SET_AND_GET = every "
        "request that touches the session",
    )
    set_fraction: float = Field(
        1.0, ge=0, le=1, description="fraction of requests that call setAttribute"
    )
    non_primitive_get_fraction: float = Field(
        0.0,
        ge=0,
        le=1,
        description="fraction of the other requests that read a non-primitive attribute",
    )
    session_bytes: int = Field(4096, ge=1, description="serialized session (or bean) size [bytes]")
    changed_bytes: int = Field(
        512, ge=1, description="serialized changed attributes with granularity = attribute [bytes]"
    )
    invocations: int = Field(
        1,
        ge=1,
        le=100,
        description="replications per request: 1 for the web tier; stateful-bean method invocations "
        "per request for the EJB tier (each replicates the bean)",
    )
    serialize_s_per_kb: float = Field(
        5e-5, ge=0, description="sender CPU to serialize 1 KiB [s] (Java serialization)"
    )
    apply_s_per_kb: float = Field(
        5e-5, ge=0, description="receiver CPU to deserialize and apply 1 KiB [s]"
    )
    message_cpu_s: float = Field(
        1e-4,
        ge=0,
        description="CPU per message on the sender and on each receiver, whatever its size: the group "
        "communication stack (JGroups protocol layers, Tomcat Tribes) [s]",
    )
    ack_bytes: int = Field(64, ge=1, description="acknowledgement / credit message size [bytes]")
    max_credits_bytes: int = Field(
        500_000,
        ge=1,
        description="async: bytes a sender may have unacknowledged before it blocks (JGroups FC "
        "max_credits, 500000 in JGroups 2.x)",
    )

    @property
    def replicate_fraction(self) -> float:
        """The probability that a request replicates, from the trigger."""
        if self.trigger == "set_and_get":
            return 1.0
        if self.trigger == "set":
            return self.set_fraction
        return self.set_fraction + (1.0 - self.set_fraction) * self.non_primitive_get_fraction

    @property
    def message_bytes(self) -> int:
        return self.session_bytes if self.granularity == "session" else self.changed_bytes


class Cluster(Strict):
    """The cluster's own network and the state replicated over it (backend nodes only)."""

    replication: list[SessionReplication] = Field(
        default_factory=list,
        description="replicated state ([[cluster.replication]]; one per tier, e.g. web and ejb)",
    )
    network: Literal["switched", "shared"] = Field(
        "switched",
        description="switched: each node has its own full-duplex link (a frame waits only for its "
        "sender's and receiver's links); shared: one segment carries every frame (a hub, or a saturated switch uplink)",
    )
    bandwidth_bps: float = Field(
        100e6, gt=0, description="link bandwidth [bit/s] (100 Mbit Ethernet = 1e8)"
    )
    latency_s: float = Field(1e-4, ge=0, description="one-way propagation and switching delay [s]")
    multicast: bool = Field(
        True,
        description="one transmission reaches every receiver (JGroups UDP multicast); false = one unicast "
        "copy per receiver (JGroups TCP, Tomcat Tribes)",
    )

    @property
    def active(self) -> list[tuple[int, SessionReplication]]:
        """(index in `replication`, spec) of the enabled replications."""
        return [(i, spec) for i, spec in enumerate(self.replication) if spec.enabled]


class Model(Strict):
    """A whole stack: clients -> proxy -> balancer -> backends -> database, plus run control."""

    meta: Meta = Field(default_factory=Meta)
    clients: Clients
    proxy: Proxy | None = Field(
        None, description="front proxy; omit to send clients straight to the backends"
    )
    balancer: Balancer = Field(default_factory=Balancer)
    backends: list[Backend] = Field(
        default_factory=list, description="backend node groups ([[backends]])"
    )
    database: Database | None = None
    cluster: Cluster = Field(
        default_factory=Cluster, description="replication between the backend nodes"
    )
    run: Run = Field(default_factory=Run)
    classes: list[RequestClass] = Field(
        default_factory=list,
        description="request classes, each one's demand per tier where it differs from the "
        "tier's (a list of tables in TOML); empty = one implicit class",
    )
    # Not a parameter: of a `tiersim from-config` model, the file it was read from and the
    # placeholders nothing filled there (`sim.load_model` / `sim.parse_model` set it), so that
    # every call taking the Model refuses it as it refuses the file (`sim.api.placeholders`).
    _placeholders: tuple[str, tuple[str, ...]] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _topology(self) -> Model:
        serves = self.proxy is not None and not self.proxy.forward
        if not self.backends and not serves:
            raise ValueError(
                "the model has no server: add [[backends]], or a [proxy] with forward = false"
            )
        if self.proxy is not None and not self.proxy.forward and self.backends:
            raise ValueError(
                "proxy.forward = false but [[backends]] are given; set forward = true or drop the backends"
            )
        names = [b.name for b in self.backends]
        if len(set(names)) != len(names):
            raise ValueError(f"backend group names must be unique, got {names}")
        blocking = [b.name for b in self.backends if b.connector == "blocking"]
        if blocking and (self.proxy is None or not self.proxy.forward):
            raise ValueError(
                f"backends {blocking} have connector = blocking, which this version models behind a [proxy] only; "
                "add a [proxy] or use connector = nonblocking"
            )
        if blocking and any(b.threads is None for b in self.backends if b.connector == "blocking"):
            raise ValueError(
                "a blocking connector needs a finite backends.N.threads (a thread per connection)"
            )
        _check_balancer(self)
        nodes = sum(b.count for b in self.backends)
        for i, replication in self.cluster.active:
            if nodes < 2:
                raise ValueError(
                    f"cluster.replication.{i}: replication needs at least 2 backend nodes, the model has "
                    f"{nodes}; raise backends.N.count or drop [[cluster.replication]]"
                )
            if replication.scope == "buddy" and replication.buddies > nodes - 1:
                raise ValueError(
                    f"cluster.replication.{i}.buddies = {replication.buddies}: at most nodes - 1 = "
                    f"{nodes - 1} other nodes can hold a copy"
                )
        _check_connection_setup(self)
        if any(b.db_calls for b in self.backends) and self.database is None:
            raise ValueError("a backend has db_calls > 0 but there is no [database]")
        if (
            self.database is not None
            and self.database.lock is not None
            and not any(b.db_calls for b in self.backends)
        ):
            # a lock no call takes would do nothing: say so rather than ignore it
            raise ValueError(
                "database.lock: no backend calls the database (backends.N.db_calls = 0); set "
                "db_calls or drop [database.lock]"
            )
        check_classes(self)
        finite = _is_finite(self.clients)
        if not finite and self.run.duration_s is None and self.run.requests is None:
            raise ValueError(
                "a steady-state run needs run.duration_s or run.requests (or give the clients a finite workload)"
            )
        return self

    @property
    def finite(self) -> bool:
        """True for finite workloads (ab -n, requests_per_user, total_*): run to completion, no warm-up."""
        return _is_finite(self.clients)


def _check_connection_setup(model: Model) -> None:
    """A connection set-up is paid by connections the front pools: refuse it where there are
    none, rather than let it do nothing."""

    for index, group in enumerate(model.backends):
        if as_distribution(group.connection_setup).mean == 0:
            continue
        pins = connector_class(group.connector).pins_per_connection(group)
        if model.proxy is None or not backend_pool_applies(model, pins, jk_acts(model)):
            raise ValueError(
                f"backends.{index}.connection_setup is paid by each new connection of the front's "
                "pool, and this model has none to that group: it needs a [proxy] and a connector "
                "whose connections pin the node's threads or slots (connector = blocking, or "
                "max_connections); drop it or set one of those"
            )


def _check_balancer(model: Model) -> None:
    balancer = model.balancer
    names = [b.name for b in model.backends]
    if balancer.members is not None:
        unknown = [m for m in balancer.members if m not in names]
        if unknown or not balancer.members:
            raise ValueError(
                f"balancer.members {balancer.members} must name backend groups ({', '.join(names)})"
            )
    if balancer.policy.startswith("mod_jk") or balancer.policy == "consistent_hash":
        fractional = [b.name for b in model.backends if b.weight != int(b.weight)]
        if fractional:
            raise ValueError(
                f"policy {balancer.policy!r} takes whole-number weights (mod_jk lbfactor, HAProxy weight); "
                f"backends {fractional} have fractional ones"
            )


def _is_finite(clients) -> bool:
    return (
        isinstance(clients, AbClients)
        or getattr(clients, "requests_per_user", None) is not None
        or getattr(clients, "total_requests", None) is not None
        or getattr(clients, "total_sessions", None) is not None
    )
