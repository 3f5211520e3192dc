"""Where httpd sends requests: `ProxyPass` / `ProxyPassMatch` to a worker or a
`<Proxy balancer://...>` (mod_proxy, mod_proxy_balancer), or `JkMount` to a mod_jk worker; the
backend pool's parameters and the balancer's, and the members the backends are built from."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from sim.configs.defaults import JK_METHODS, PROXY_LBMETHODS, PROXY_WORKER, proxy_max
from sim.configs.draft import Draft
from sim.configs.errors import ConfigError, Where
from sim.configs.front import core_timeout, shown
from sim.configs.httpd import Directive, HttpdConfig
from sim.configs.jk_route import jk_properties, jk_route, mountable, status_mounts
from sim.configs.members import Member

# mod_proxy worker parameters with no model parameter
PROXY_NOT_MODELLED = {
    "connectiontimeout": "the connect timeout to the backend",
    "ping": "a CPING / 100-continue probe before each request",
    "keepalive": "TCP keep-alive probes on the backend connection",
    "smax": "connections kept open up to this many (soft maximum)",
    "min": "connections kept open at least",
    "flushpackets": "when the response is flushed to the client",
    "failonstatus": "a backend status that puts the member in error",
    "timeout@balancer": "the wait for a free member",
    "lbset": "member sets tried in order",
    "status": "a member's initial status (disabled, hot standby...)",
}


def read_routes(
    config: HttpdConfig, draft: Draft, per_child: int, mpm: str, workers_file, options
) -> list[Member]:
    """The route of the first `ProxyPass` / `ProxyPassMatch` / `JkMount` that sends requests
    on (`!` exclusions skipped); the others are named as not modelled."""
    routes = [
        d
        for d in config.directives
        if d.name.lower() in ("proxypass", "proxypassmatch", "jkmount")
        and _target(d) not in (None, "!")
    ]
    mounts = [d for d in routes if d.name.lower() == "jkmount"]
    properties = jk_properties(config, workers_file) if mounts else None
    if properties is not None:
        status = status_mounts(config, draft, properties, mounts, _target)
        routes = [d for d in routes if d not in status]
        mounts = [d for d in mounts if d not in status]
        unusable = [d for d in mounts if not mountable(properties, str(_target(d)))]
        usable = [d for d in routes if d not in unusable]
        if unusable and not usable:
            routes = unusable[:1]  # jk_route says what is wrong with it
        else:
            for mount in unusable:
                draft.notes.append(
                    f"{mount.where}: {shown(mount)} is no route to a backend (not an ajp13 or lb worker of worker.list)"
                )
            routes = usable
    if not routes:
        raise ConfigError(
            config.main_file,
            "a ProxyPass, ProxyPassMatch or JkMount that sends requests to the backends",
            "add one (e.g. ProxyPass / http://tomcat:8080/), or check the files that define it are included",
        )
    route = routes[0]
    for other in routes[1:]:
        if _target(other) != _target(route):
            draft.missing(
                other.where,
                shown(other),
                f"a second route; the model has one, {shown(route)} ({route.where})",
            )
    if route.name.lower() == "jkmount":
        if not config.loaded("jk_module") and not config.loaded("mod_jk.c"):
            raise ConfigError(
                route.where, "JkMount needs mod_jk loaded", "add LoadModule jk_module .../mod_jk.so"
            )
        assert properties is not None
        return jk_route(config, draft, route, str(_target(route)), per_child, mpm, properties)
    return _proxy_route(config, draft, route, per_child, mpm)


def _target(directive: Directive) -> str | None:
    """The worker URL (ProxyPass) or worker name (JkMount) a route sends to."""
    args = directive.args
    index = 0 if _in_location(directive) else 1
    return args[index] if len(args) > index else None


def _in_location(directive: Directive) -> bool:
    """Inside `<Location>`, ProxyPass and JkMount take no path: the section's is theirs."""
    return bool(directive.within("Location") or directive.within("LocationMatch"))


def _proxy_route(
    config: HttpdConfig, draft: Draft, route: Directive, per_child: int, mpm: str
) -> list[Member]:
    url = str(_target(route))
    if not config.loaded("proxy_module"):
        raise ConfigError(
            route.where, f"{route.name} needs mod_proxy loaded", "add LoadModule proxy_module"
        )
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    params = _params(route, route.args[(0 if _in_location(route) else 1) + 1 :])
    timeout, timeout_source = _proxy_timeout(config)
    if scheme == "balancer":
        return _balancer(
            config, draft, route, parts.netloc, params, per_child, mpm, (timeout, timeout_source)
        )
    if scheme not in ("http", "https", "ajp"):
        raise ConfigError(
            route.where,
            f"a route to http://, ajp:// or balancer://, not {scheme}://",
            "the model has HTTP and AJP backends",
        )
    _need_module(config, route, scheme)
    draft.put(
        "proxy.backend_pool.scheme",
        "ajp" if scheme == "ajp" else "http",
        f"{route.where}: {shown(route)}",
    )
    section_params = _worker_section_params(config, url)
    _pool(draft, {**section_params, **params}, per_child, mpm, (timeout, timeout_source))
    host, port = parts.hostname or "localhost", parts.port or (8009 if scheme == "ajp" else 80)
    return [Member(host, host, port, "ajp" if scheme == "ajp" else "http", 1.0, "", route.where)]


def _balancer(
    config: HttpdConfig,
    draft: Draft,
    route: Directive,
    name: str,
    params: dict[str, tuple[str, Where]],
    per_child: int,
    mpm: str,
    timeout: tuple[float, str],
) -> list[Member]:
    if not config.loaded("proxy_balancer_module"):
        raise ConfigError(
            route.where,
            "balancer:// needs mod_proxy_balancer",
            "add LoadModule proxy_balancer_module",
        )
    wanted = f"balancer://{name}".lower()
    members = [
        d
        for d in config.named("BalancerMember")
        if (_section_url(d) == wanted) or (d.args and d.args[0].lower().rstrip("/") == wanted)
    ]
    if not members:
        known = sorted(
            {str(_section_url(d)) for d in config.named("BalancerMember") if _section_url(d)}
        )
        raise ConfigError(
            route.where,
            f"{shown(route)} sends to balancer://{name}, which no <Proxy balancer://{name}> with "
            f"BalancerMember lines defines (balancers: {', '.join(known) or 'none'})",
            f"add <Proxy balancer://{name}> ... </Proxy> or fix the name",
        )
    balancer_params = dict(params)
    for setting in config.named("ProxySet"):
        args = setting.args
        if _section_url(setting) == wanted:
            balancer_params.update(_params(setting, args))
        elif args and args[0].lower().rstrip("/") == wanted:
            balancer_params.update(_params(setting, args[1:]))
    result: list[Member] = []
    pools: list[dict[str, tuple[str, Where]]] = []
    for member in members:
        args = member.args if _section_url(member) == wanted else member.args[1:]
        if not args:
            raise ConfigError(
                member.where, "BalancerMember URL [key=value ...]", "give the member's URL"
            )
        parts = urlsplit(args[0])
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https", "ajp"):
            raise ConfigError(
                member.where, f"a member at http:// or ajp://, not {args[0]!r}", "fix the URL"
            )
        _need_module(config, member, scheme)
        member_params = {**_worker_section_params(config, args[0]), **_params(member, args[1:])}
        pools.append(member_params)
        weight, weight_source = 1.0, PROXY_WORKER["loadfactor"].reference
        if "loadfactor" in member_params:
            text, where = member_params["loadfactor"]
            weight, weight_source = _float(text, "loadfactor", where), f"{where}: loadfactor={text}"
        host = parts.hostname or "localhost"
        port = parts.port or (8009 if scheme == "ajp" else 80)
        result.append(
            Member(
                host,
                host,
                port,
                "ajp" if scheme == "ajp" else "http",
                weight,
                weight_source,
                member.where,
            )
        )
    schemes = {m.scheme for m in result}
    draft.put(
        "proxy.backend_pool.scheme", result[0].scheme, f"{members[0].where}: {shown(members[0])}"
    )
    if len(schemes) > 1:
        draft.missing(
            route.where,
            "BalancerMember schemes",
            "members mix HTTP and AJP; the model's pool has one",
        )
    _pool(draft, pools[0], per_child, mpm, timeout)
    for other in pools[1:]:
        if {k: v[0] for k, v in other.items() if k != "loadfactor" and k != "route"} != {
            k: v[0] for k, v in pools[0].items() if k != "loadfactor" and k != "route"
        }:
            draft.notes.append(
                "BalancerMember parameters differ; the backend pool takes the first member's"
            )
    _need_lbmethod(config, route, balancer_params)
    _balancer_params(draft, balancer_params, pools[0])
    return result


def _need_lbmethod(
    config: HttpdConfig, route: Directive, params: dict[str, tuple[str, Where]]
) -> None:
    """httpd 2.4 moved each balancing method into its own module (lbmethod_byrequests...):
    without it the balancer cannot start (mod_proxy_balancer: "can't find lbmethod")."""
    if config.version < (2, 3, 0):
        return
    method, where = params.get("lbmethod", ("byrequests", route.where))
    module = f"lbmethod_{method.lower()}_module"
    if not config.loaded(module):
        raise ConfigError(
            where,
            f"lbmethod {method} needs {module} loaded (httpd 2.4 has each method in its own module)",
            f"add LoadModule {module} modules/mod_lbmethod_{method.lower()}.so (Debian: a2enmod "
            f"lbmethod_{method.lower()})",
        )


def _balancer_params(
    draft: Draft, params: dict[str, tuple[str, Where]], member: dict[str, tuple[str, Where]]
) -> None:
    if "lbmethod" in params:
        text, where = params["lbmethod"]
        if text.lower() not in PROXY_LBMETHODS:
            draft.missing(
                where,
                f"lbmethod={text}",
                "a balancing method the model does not have; byrequests used",
            )
            draft.default("balancer.policy", PROXY_WORKER["lbmethod"], "byrequests")
        else:
            draft.written(
                "balancer.policy", PROXY_LBMETHODS[text.lower()], where, f"lbmethod={text}"
            )
    else:
        draft.default("balancer.policy", PROXY_WORKER["lbmethod"])
    if "stickysession" in params:
        text, where = params["stickysession"]
        draft.written("balancer.sticky_session", True, where, f"stickysession={text}")
    if "nofailover" in params:
        text, where = params["nofailover"]
        draft.written(
            "balancer.sticky_session_force", text.lower() == "on", where, f"nofailover={text}"
        )
    if "maxattempts" in params:
        text, where = params["maxattempts"]
        draft.written(
            "balancer.max_attempts",
            int(_float(text, "maxattempts", where)) + 1,
            where,
            f"maxattempts={text} (+ the first)",
        )
    if "retry" in member:
        text, where = member["retry"]
        draft.written("balancer.retry_s", _float(text, "retry", where), where, f"retry={text}")
    else:
        draft.default("balancer.retry_s", PROXY_WORKER["retry"])
    if "timeout" in params and "timeout" not in member:
        text, where = params["timeout"]
        draft.missing(where, f"timeout={text}", PROXY_NOT_MODELLED["timeout@balancer"])
    for key in ("failonstatus", "lbset", "growth"):
        if key in params:
            draft.missing(
                params[key][1],
                f"{key}={params[key][0]}",
                PROXY_NOT_MODELLED.get(key, "not modelled"),
            )


def _pool(
    draft: Draft,
    params: dict[str, tuple[str, Where]],
    per_child: int,
    mpm: str,
    timeout: tuple[float, str],
) -> None:
    """mod_proxy's worker parameters as `proxy.backend_pool.*`."""
    if "max" in params:
        text, where = params["max"]
        draft.written(
            "proxy.backend_pool.max", int(_float(text, "max", where)), where, f"max={text}"
        )
    else:
        draft.default("proxy.backend_pool.max", proxy_max(mpm, per_child))
    if "ttl" in params:
        text, where = params["ttl"]
        draft.written(
            "proxy.backend_pool.ttl_s", _float(text, "ttl", where), where, f"ttl={text} (seconds)"
        )
    else:
        draft.default("proxy.backend_pool.ttl_s", PROXY_WORKER["ttl"])
    if "acquire" in params:
        text, where = params["acquire"]
        draft.written(
            "proxy.backend_pool.acquire_timeout_s",
            _float(text, "acquire", where) / 1000,
            where,
            f"acquire={text} (ms)",
        )
    else:
        draft.default("proxy.backend_pool.acquire_timeout_s", PROXY_WORKER["acquire"])
    if "timeout" in params:
        text, where = params["timeout"]
        draft.written(
            "proxy.backend_pool.timeout_s", _float(text, "timeout", where), where, f"timeout={text}"
        )
    else:
        draft.put(
            "proxy.backend_pool.timeout_s", timeout[0], f"mod_proxy timeout unset: {timeout[1]}"
        )
    reuse = params.get("disablereuse") or params.get("enablereuse")
    if reuse is not None:
        text, where = reuse
        on = text.lower() == "on"
        disabled = on if "disablereuse" in params else not on
        draft.written(
            "proxy.backend_pool.disable_reuse",
            disabled,
            where,
            f"{'disablereuse' if 'disablereuse' in params else 'enablereuse'}={text}",
        )
    for key, why in PROXY_NOT_MODELLED.items():
        if key in params:
            draft.missing(params[key][1], f"{key}={params[key][0]}", why)


def _proxy_timeout(config: HttpdConfig) -> tuple[float, str]:
    given = config.server("ProxyTimeout")
    if given is not None:
        from sim.configs.front import seconds

        return seconds(given), f"{given.where}: {shown(given)}"
    value, source = core_timeout(config)
    return value, f"ProxyTimeout unset = Timeout: {source}"


def _params(directive: Directive, words) -> dict[str, tuple[str, Where]]:
    found: dict[str, tuple[str, Where]] = {}
    for word in words:
        if "=" not in word:
            raise ConfigError(
                directive.where,
                f"key=value worker parameters after the URL, not {word!r}",
                "write e.g. max=20 ttl=60",
            )
        key, value = word.split("=", 1)
        found[key.lower()] = (value, directive.where)
    return found


def _section_url(directive: Directive) -> str | None:
    section = directive.within("Proxy")
    return section.argument.lower().rstrip("/") if section else None


def _worker_section_params(config: HttpdConfig, url: str) -> dict[str, tuple[str, Where]]:
    """`ProxySet` inside `<Proxy URL>` sets the worker's parameters too."""
    found: dict[str, tuple[str, Where]] = {}
    wanted = url.lower().rstrip("/")
    for setting in config.named("ProxySet"):
        if _section_url(setting) == wanted:
            found.update(_params(setting, setting.args))
    return found


def _need_module(config: HttpdConfig, directive: Directive, scheme: str) -> None:
    module = "proxy_ajp_module" if scheme == "ajp" else "proxy_http_module"
    if not config.loaded(module):
        raise ConfigError(
            directive.where, f"{scheme}:// needs {module} loaded", f"add LoadModule {module}"
        )


def _float(text: str, name: str, where: Where) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*", text)
    if not match:
        raise ConfigError(where, f"{name} takes a number, not {text!r}", f"write {name}=NUMBER")
    return float(match.group(1))


def jk_policy(method: str) -> str:
    return JK_METHODS.get(method.strip()[:1].lower(), "mod_jk_request")
