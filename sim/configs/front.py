"""httpd's own directives as the model's `[proxy]`: the MPM and its process and thread limits,
the listen queue, keep-alive, and the directives that act on performance with no parameter."""

from __future__ import annotations

import re

from sim.configs.defaults import Default, httpd_core, httpd_mpm
from sim.configs.draft import Draft
from sim.configs.errors import ConfigError
from sim.configs.httpd import Directive, HttpdConfig

MPMS = ("prefork", "worker", "event")
# directive -> proxy parameter, per kind of MPM
PREFORK = {
    "StartServers": "start_servers",
    "MinSpareServers": "min_spare_servers",
    "MaxSpareServers": "max_spare_servers",
    "ServerLimit": "server_limit",
}
THREADED = {
    "StartServers": "start_servers",
    "MinSpareThreads": "min_spare_threads",
    "MaxSpareThreads": "max_spare_threads",
    "ThreadLimit": "thread_limit",
    "ThreadsPerChild": "threads_per_child",
    "ServerLimit": "server_limit",
}
# Directives that act on performance with no model parameter: why each matters.
NOT_MODELLED = {
    "MaxConnectionsPerChild": "a child exits after this many connections (its replacement is forked)",
    "MaxRequestsPerChild": "a child exits after this many connections (its replacement is forked)",
    "MaxMemFree": "memory each allocator keeps",
    "ThreadStackSize": "memory per thread",
    "RequestReadTimeout": "mod_reqtimeout: a slow client's request is cut off",
    "HostnameLookups": "a DNS lookup per request when On",
    "EnableSendfile": "how static files are sent",
    "EnableMMAP": "how static files are read",
    "CacheEnable": "mod_cache serves responses without the backend",
    "AddOutputFilterByType": "an output filter (mod_deflate: CPU per response) when it names DEFLATE",
    "SetOutputFilter": "an output filter (mod_deflate: CPU per response) when it names DEFLATE",
    "ProxyReceiveBufferSize": "the socket buffer to the backend",
    "ProxyIOBufferSize": "the buffer of a proxied response",
    "GracefulShutdownTimeout": "how long a stopping child may finish its requests",
    "BufferedLogs": "log writes batched",
}

# values with which those directives change nothing
_NO_EFFECT = {
    "MaxConnectionsPerChild": ("0",),
    "MaxRequestsPerChild": ("0",),
    "HostnameLookups": ("off",),
}


def mpm_of(config: HttpdConfig, compiled_in: str | None) -> tuple[str, str]:
    """The MPM and why: the one LoadModule'd (2.4), else the compiled-in one."""
    loaded = [
        (name, where)
        for name, where in config.modules.items()
        if re.fullmatch(r"mpm_(\w+)_module", name) and where is not None
    ]
    if len(loaded) > 1:
        first, second = loaded[0], loaded[1]
        raise ConfigError(
            second[1],
            f"one MPM, but {first[0]} is loaded at {first[1]} and {second[0]} here (AH00534)",
            "keep one LoadModule mpm_*_module (Debian: a2dismod the other)",
        )
    if loaded:
        name, where = loaded[0]
        mpm = name.removeprefix("mpm_").removesuffix("_module")
        if mpm not in MPMS:
            raise ConfigError(
                where, f"the prefork, worker or event MPM, not {mpm}", "load one of them"
            )
        return mpm, f"{where}: LoadModule {name}"
    if compiled_in:
        return compiled_in, f"--mpm {compiled_in}: the MPM compiled into httpd"
    if config.version < (2, 4, 0):
        return (
            "prefork",
            "httpd 2.2: the compiled-in MPM, prefork by default (configure --with-mpm); --mpm says otherwise",
        )
    raise ConfigError(
        config.main_file,
        "a LoadModule mpm_prefork_module, mpm_worker_module or mpm_event_module (httpd 2.4 with "
        "shared MPMs: AH00534 no MPM loaded)",
        "add the LoadModule, or pass --mpm NAME for a server with a compiled-in MPM",
    )


def read_front(config: HttpdConfig, draft: Draft, mpm: str, mpm_source: str) -> int:
    """Write `proxy.*` from httpd's directives; return the threads of a child (the default of
    the backend pool's size)."""
    draft.put("proxy.mpm", mpm, mpm_source)
    defaults = httpd_mpm(mpm, config.version)
    names = PREFORK if mpm == "prefork" else THREADED
    for mpm_directive, path in names.items():
        _integer(config, draft, f"proxy.{path}", mpm_directive, defaults[mpm_directive])
    workers_name = "MaxRequestWorkers" if config.version >= (2, 3, 13) else "MaxClients"
    given = _last(config, "MaxRequestWorkers", "MaxClients")
    if given is not None:
        draft.written("proxy.workers", _whole(given), given.where, shown(given))
    else:
        draft.default("proxy.workers", defaults[workers_name])
    if mpm == "event":
        factor = config.server("AsyncRequestWorkerFactor")
        if factor is not None:
            draft.written(
                "proxy.async_request_worker_factor", _number(factor), factor.where, shown(factor)
            )
        else:
            draft.default("proxy.async_request_worker_factor", defaults["AsyncRequestWorkerFactor"])
    core = httpd_core(config.version)
    _integer(config, draft, "proxy.listen_backlog", "ListenBacklog", core["ListenBacklog"])
    draft.notes.append(
        "ListenBacklog: the kernel caps the queue at net.core.somaxconn (4096 on Linux >= 5.4, 128 before)"
    )
    keep_alive = config.server("KeepAlive")
    if keep_alive is not None:
        draft.written("proxy.keep_alive", _on_off(keep_alive), keep_alive.where, shown(keep_alive))
    else:
        draft.default("proxy.keep_alive", core["KeepAlive"])
    timeout = config.server("KeepAliveTimeout")
    if timeout is not None:
        draft.written("proxy.keep_alive_timeout_s", seconds(timeout), timeout.where, shown(timeout))
    else:
        draft.default("proxy.keep_alive_timeout_s", core["KeepAliveTimeout"])
    _integer(
        config,
        draft,
        "proxy.max_keep_alive_requests",
        "MaxKeepAliveRequests",
        core["MaxKeepAliveRequests"],
    )
    draft.default("proxy.linger_s", core["linger"])
    for directive_name, why in NOT_MODELLED.items():
        for directive in config.named(directive_name):
            if (
                directive_name in ("AddOutputFilterByType", "SetOutputFilter")
                and "DEFLATE" not in " ".join(directive.args).upper()
            ):
                continue
            if " ".join(directive.args).lower() in _NO_EFFECT.get(directive_name, ()):
                continue
            draft.missing(directive.where, shown(directive), why)
    per_child = 1
    if mpm != "prefork":
        threads = draft.values.get("proxy.threads_per_child", 25)
        per_child = min(threads, draft.values.get("proxy.thread_limit", 64))
    return per_child


def core_timeout(config: HttpdConfig) -> tuple[float, str]:
    """`Timeout`: its value and provenance (ProxyTimeout's default)."""
    given = config.server("Timeout")
    if given is not None:
        return seconds(given), f"{given.where}: {shown(given)}"
    default = httpd_core(config.version)["Timeout"]
    return float(default.value), default.reference


def _integer(config: HttpdConfig, draft: Draft, path: str, name: str, default: Default) -> None:
    given = config.server(name)
    if given is not None:
        draft.written(path, _whole(given), given.where, shown(given))
    else:
        draft.default(path, default)


def _last(config: HttpdConfig, *names: str) -> Directive | None:
    found = [d for name in names for d in config.named(name) if d.at_server_level]
    return max(found, key=lambda d: config.directives.index(d)) if found else None


def _one(directive: Directive) -> str:
    if directive.undefined:
        raise ConfigError(
            directive.where,
            f"${{{directive.undefined[0]}}} in {directive.name} is not defined",
            f"add `Define {directive.undefined[0]} VALUE` before it, or pass --define {directive.undefined[0]}=VALUE",
        )
    if len(directive.args) != 1:
        raise ConfigError(
            directive.where,
            f"{directive.name} takes one value, got {len(directive.args)}",
            f"write {directive.name} VALUE (httpd has no comments after a directive)",
        )
    return directive.args[0]


def _whole(directive: Directive) -> int:
    text = _one(directive)
    if not re.fullmatch(r"-?\d+", text):
        raise ConfigError(
            directive.where,
            f"{directive.name} takes a whole number, not {text!r}",
            f"write {directive.name} NUMBER",
        )
    return int(text)


def _number(directive: Directive) -> float:
    text = _one(directive)
    try:
        return float(text)
    except ValueError:
        raise ConfigError(
            directive.where,
            f"{directive.name} takes a number, not {text!r}",
            f"write {directive.name} NUMBER",
        ) from None


def seconds(directive: Directive) -> float:
    """A time in seconds; httpd 2.4 also takes `ms` (ap_timeout_parameter_parse)."""
    text = _one(directive).lower()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|mi|h)?", text)
    if not match:
        raise ConfigError(
            directive.where,
            f"{directive.name} takes a time in seconds, not {text!r}",
            f"write {directive.name} SECONDS",
        )
    scale = {"ms": 0.001, "s": 1.0, "mi": 60.0, "h": 3600.0, None: 1.0}[match.group(2)]
    return float(match.group(1)) * scale


def _on_off(directive: Directive) -> bool:
    text = _one(directive).lower()
    if text not in ("on", "off"):
        raise ConfigError(
            directive.where,
            f"{directive.name} On or Off, not {text!r}",
            f"write {directive.name} On",
        )
    return text == "on"


def shown(directive: Directive) -> str:
    return " ".join([directive.name, *directive.args])
