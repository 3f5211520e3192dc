"""The upstream defaults of what a configuration leaves unset, by version, each with where it
is documented or defined (the value a server uses when its files say nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Default:
    value: Any
    reference: str  # "httpd 2.4 default (server/mpm/event/mpm_default.h DEFAULT_START_DAEMON)"


def httpd_release(version: tuple[int, int, int]) -> str:
    return f"httpd {version[0]}.{version[1]}"


def httpd_core(version: tuple[int, int, int]) -> dict[str, Default]:
    """core.c / http_core.c defaults (the directive reference of each release)."""
    release = httpd_release(version)
    timeout = 60 if version >= (2, 4, 0) else 300  # DEFAULT_TIMEOUT, httpd.h
    return {
        "Timeout": Default(
            timeout, f"{release} default Timeout {timeout} (httpd.h DEFAULT_TIMEOUT)"
        ),
        "KeepAlive": Default(True, f"{release} default KeepAlive On (http_core.c)"),
        "KeepAliveTimeout": Default(
            5, f"{release} default KeepAliveTimeout 5 (httpd.h DEFAULT_KEEPALIVE_TIMEOUT)"
        ),
        "MaxKeepAliveRequests": Default(
            100, f"{release} default MaxKeepAliveRequests 100 (httpd.h DEFAULT_KEEPALIVE)"
        ),
        "ListenBacklog": Default(
            511, f"{release} default ListenBacklog 511 (mpm_common.h DEFAULT_LISTENBACKLOG)"
        ),
        "linger": Default(
            2.0, f"{release} lingering close: SECONDS_TO_LINGER 2 (compile-time, http_connection.c)"
        ),
    }


def httpd_mpm(mpm: str, version: tuple[int, int, int]) -> dict[str, Default]:
    """The MPM's compiled defaults (server/mpm/<mpm>/mpm_default.h and its *_pre_config)."""
    release = httpd_release(version)
    header = f"server/mpm/{mpm}/mpm_default.h"
    workers = "MaxRequestWorkers" if version >= (2, 3, 13) else "MaxClients"
    if mpm == "prefork":
        return {
            "StartServers": Default(
                5, f"{release} prefork default StartServers 5 ({header} DEFAULT_START_DAEMON)"
            ),
            "MinSpareServers": Default(
                5, f"{release} prefork default MinSpareServers 5 (DEFAULT_MIN_FREE_DAEMON)"
            ),
            "MaxSpareServers": Default(
                10, f"{release} prefork default MaxSpareServers 10 (DEFAULT_MAX_FREE_DAEMON)"
            ),
            "ServerLimit": Default(
                256, f"{release} prefork default ServerLimit 256 (DEFAULT_SERVER_LIMIT)"
            ),
            workers: Default(
                256, f"{release} prefork default {workers} 256 (DEFAULT_SERVER_LIMIT)"
            ),
        }
    defaults = {
        "StartServers": Default(
            3, f"{release} {mpm} default StartServers 3 ({header} DEFAULT_START_DAEMON)"
        ),
        "MinSpareThreads": Default(
            75, f"{release} {mpm} default MinSpareThreads 75 (DEFAULT_MIN_FREE_DAEMON 3 x 25)"
        ),
        "MaxSpareThreads": Default(
            250, f"{release} {mpm} default MaxSpareThreads 250 (DEFAULT_MAX_FREE_DAEMON 10 x 25)"
        ),
        "ThreadsPerChild": Default(
            25, f"{release} {mpm} default ThreadsPerChild 25 (DEFAULT_THREADS_PER_CHILD)"
        ),
        "ThreadLimit": Default(
            64, f"{release} {mpm} default ThreadLimit 64 (DEFAULT_THREAD_LIMIT)"
        ),
        "ServerLimit": Default(
            16, f"{release} {mpm} default ServerLimit 16 (DEFAULT_SERVER_LIMIT)"
        ),
        # *_pre_config: max_workers = ap_daemons_limit x threads_per_child with both at their
        # defaults, before the configuration is read: 400 whatever ThreadsPerChild says
        workers: Default(
            400,
            f"{release} {mpm} default {workers} 400 ({mpm}.c pre_config: DEFAULT_SERVER_LIMIT 16 x "
            "DEFAULT_THREADS_PER_CHILD 25)",
        ),
    }
    if mpm == "event":
        defaults["AsyncRequestWorkerFactor"] = Default(
            2, f"{release} event default AsyncRequestWorkerFactor 2 (event.c WORKER_FACTOR_SCALE)"
        )
    return defaults


# mod_proxy worker parameters (ProxyPass key=value, BalancerMember, ProxySet): the mod_proxy
# reference, docs/manual/mod/mod_proxy.html#proxypass.
PROXY_WORKER = {
    "ttl": Default(None, "mod_proxy ttl unset: idle connections are never closed for age"),
    "acquire": Default(None, "mod_proxy acquire unset: wait for a pooled connection without limit"),
    "disablereuse": Default(False, "mod_proxy disablereuse default Off"),
    "retry": Default(60.0, "mod_proxy retry default 60 s (a worker in error is retried after it)"),
    "loadfactor": Default(1.0, "mod_proxy loadfactor default 1"),
    "lbmethod": Default("byrequests", "mod_proxy_balancer lbmethod default byrequests"),
}


def proxy_max(mpm: str, threads_per_child: int) -> Default:
    if mpm == "prefork":
        return Default(1, "mod_proxy max unset: 1 per child (prefork has one thread a child)")
    return Default(
        threads_per_child,
        f"mod_proxy max unset: ThreadsPerChild ({threads_per_child}) per child (AP_MPMQ_MAX_THREADS)",
    )


# mod_jk worker properties (the workers.properties reference,
# tomcat.apache.org/connectors-doc/reference/workers.html; native/common/jk_ajp_common.h,
# jk_lb_worker.h, jk_util.c).
JK = {
    "port": Default(8009, "mod_jk port default 8009 (AJP13_DEF_PORT)"),
    "host": Default("localhost", "mod_jk host default localhost (AJP13_DEF_HOST)"),
    "socket_timeout": Default(
        0,
        "mod_jk socket_timeout default 0: no timeout (on Unix it sets none anyway: SO_RCVTIMEO "
        "only with USE_SO_RCVTIMEO)",
    ),
    "reply_timeout": Default(
        0, "mod_jk reply_timeout default 0 (AJP_DEF_REPLY_TIMEOUT): wait for ever"
    ),
    "retries": Default(2, "mod_jk retries default 2 (JK_RETRIES)"),
    "retry_interval": Default(100, "mod_jk retry_interval default 100 ms (JK_SLEEP_DEF)"),
    "recovery_options": Default(0, "mod_jk recovery_options default 0 (AJP_DEF_RECOVERY_OPTS)"),
    "connection_pool_timeout": Default(0, "mod_jk connection_pool_timeout default 0: never closed"),
    "lbfactor": Default(1, "mod_jk lbfactor default 1"),
    "method": Default("R", "mod_jk lb method default Request (R)"),
    "sticky_session": Default(
        True, "mod_jk lb sticky_session default true (JK_LB_DEF_STICKY_SESSION)"
    ),
    "sticky_session_force": Default(False, "mod_jk lb sticky_session_force default false"),
    "recover_time": Default(60, "mod_jk lb recover_time default 60 s (WAIT_BEFORE_RECOVER)"),
    "max_reply_timeouts": Default(0, "mod_jk lb max_reply_timeouts default 0"),
    "maintain": Default(60, "mod_jk worker.maintain default 60 s (JK_WORKER_MAINTAIN_DEF)"),
}
JK_METHODS = {
    "r": "mod_jk_request",
    "s": "mod_jk_session",
    "t": "mod_jk_traffic",
    "b": "mod_jk_busyness",
}
PROXY_LBMETHODS = {"byrequests": "byrequests", "bytraffic": "bytraffic", "bybusyness": "bybusyness"}


def tomcat_release(version: tuple[int, int]) -> str:
    return f"Tomcat {version[0]}.{version[1]}"


def tomcat_doc(version: tuple[int, int], scheme: str) -> str:
    page = "http" if scheme == "http" else "ajp"
    return f"tomcat.apache.org/tomcat-{version[0]}.{version[1]}-doc/config/{page}.html"


def tomcat_connector(version: tuple[int, int], scheme: str, io: str) -> dict[str, Default]:
    """A Connector's defaults (the HTTP and AJP connector references of each release)."""
    release, doc = tomcat_release(version), tomcat_doc(version, scheme)
    if io == "bio" or version < (7, 0):
        max_connections = None  # a thread per connection; Tomcat 6 NIO had no limit
    elif io == "apr" or version >= (9, 0):
        max_connections = 8192
    else:
        max_connections = 10000
    idle = 60000 if scheme == "http" else -1
    return {
        "maxThreads": Default(200, f"{release} maxThreads default 200 ({doc})"),
        "acceptCount": Default(100, f"{release} acceptCount default 100 ({doc})"),
        "maxConnections": Default(
            max_connections,
            f"{release} {io.upper()} maxConnections default {max_connections or 'none'} ({doc})",
        ),
        "connectionTimeout": Default(
            idle,
            f"{release} {scheme.upper()} connectionTimeout default {idle} ms ({doc})",
        ),
        "maxKeepAliveRequests": Default(100, f"{release} maxKeepAliveRequests default 100 ({doc})"),
    }


def tomcat_protocol(version: tuple[int, int], protocol: str | None) -> tuple[str, str, str]:
    """(scheme http/ajp, io bio/nio/nio2/apr, why) of a Connector's `protocol` attribute."""
    release = tomcat_release(version)
    text = (protocol or "HTTP/1.1").strip()
    lowered = text.lower()
    if lowered in ("http/1.1", "ajp/1.3"):
        scheme = "http" if lowered == "http/1.1" else "ajp"
        # Tomcat 8.0 made NIO the default (BIO went in 8.5); before it, BIO (APR only when the
        # native library is found, which a configuration file does not say)
        io = "nio" if version >= (8, 0) else "bio"
        return (
            scheme,
            io,
            f'{release}: protocol "{text}" is {io.upper()} (without the APR native library)',
        )
    classes = {
        "http11protocol": ("http", "bio"),
        "http11nioprotocol": ("http", "nio"),
        "http11nio2protocol": ("http", "nio2"),
        "http11aprprotocol": ("http", "apr"),
        "ajpprotocol": ("ajp", "bio"),
        "ajpnioprotocol": ("ajp", "nio"),
        "ajpnio2protocol": ("ajp", "nio2"),
        "ajpaprprotocol": ("ajp", "apr"),
    }
    name = lowered.rsplit(".", 1)[-1]
    if name in classes:
        scheme, io = classes[name]
        return scheme, io, f"protocol {text.rsplit('.', 1)[-1]}"
    raise ValueError(text)


# Jetty's QueuedThreadPool and connectors (jetty-util/.../QueuedThreadPool.java of each line).
JETTY_MAX_THREADS = {6: 250, 7: 254, 8: 254, 9: 200}
