"""A model file from a stack's configuration files: httpd (with mod_proxy or mod_jk) in front
of Tomcat or Jetty nodes.  Every value carries its provenance (`file:line: Directive value`, or
the upstream default with its reference); what no configuration holds (the clients, the
application's demands, the hosts' cores) is a marked placeholder; what acts on performance
with no model parameter is listed as not modelled."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sim.configs.draft import Draft, toml_text
from sim.configs.errors import ConfigError
from sim.configs.front import mpm_of, read_front
from sim.configs.httpd import HttpdConfig, read_httpd
from sim.configs.httpd_syntax import parse_version
from sim.configs.routes import Member, read_routes
from sim.configs.servers import ServerFiles, read_backends

CLIENTS_PLACEHOLDER = (
    "the load: no configuration holds it. ab's, as written; --set clients.concurrency=100, or "
    "your load test's (tiersim plan sets clients.users from each run)"
)


CLOSED_PLACEHOLDER = (
    "the load: no configuration holds it. Closed users with a think time, as a load test's "
    "threads (tiersim plan sets clients.users from each run and fits clients.think.mean)"
)


@dataclass
class Sources:
    """What `tiersim from-config` was given."""

    httpd: Path | None = None
    server_root: Path | None = None
    defines: dict[str, str] = field(default_factory=dict)
    httpd_version: str = "2.4.62"
    mpm: str | None = None
    workers_properties: Path | None = None
    tomcat: list[tuple[str | None, Path]] = field(default_factory=list)
    jetty: list[tuple[str | None, Path]] = field(default_factory=list)
    tomcat_version: tuple[int, int] = (10, 1)
    clients: str = "ab"  # the placeholder clients: "ab" (ab -c -n) or "closed" (users, think)
    kubernetes: list[Path] = field(default_factory=list)  # Deployment + HPA manifests


@dataclass
class Assembled:
    draft: Draft
    httpd: HttpdConfig | None
    text: str


def assemble(sources: Sources) -> Assembled:
    draft = Draft()
    files = ServerFiles(sources.tomcat, sources.jetty, sources.tomcat_version)
    if not sources.tomcat and not sources.jetty:
        raise ConfigError(
            "from-config",
            "the backends' configuration (Tomcat's server.xml or Jetty's jetty.xml)",
            "pass --tomcat FILE or --jetty FILE",
        )
    if not re.fullmatch(r"\d{1,3}\.\d{1,3}(\.\d{1,4})?", sources.httpd_version.strip()):
        raise ConfigError(
            f"--httpd-version {sources.httpd_version!r}",
            "an httpd release MAJOR.MINOR[.PATCH] (<IfVersion> and the defaults depend on it)",
            "give it as `httpd -v` prints it, e.g. 2.4.62 or 2.2.22",
        )
    config: HttpdConfig | None = None
    if sources.workers_properties is not None and sources.httpd is None:
        raise ConfigError(
            f"--workers-properties {sources.workers_properties}",
            "--httpd too: mod_jk's workers are read for the JkMount lines of httpd's "
            "configuration, and without a front the clients talk to the server directly",
            "pass --httpd FILE, or leave --workers-properties out",
        )
    if sources.httpd is not None:
        config = read_httpd(
            sources.httpd,
            server_root=sources.server_root,
            defines=sources.defines,
            version=sources.httpd_version,
            static_mpm=sources.mpm or compiled_in_mpm(sources.httpd_version),
        )
        mpm, why = mpm_of(config, sources.mpm)
        per_child = read_front(config, draft, mpm, why)
        draft.placeholder(
            "proxy.cores", 1, "the front host's cores; no configuration file holds them"
        )
        draft.placeholder(
            "proxy.demand",
            {"dist": "exponential", "mean": 0.0},
            "httpd's CPU per proxied request (a fraction of a millisecond); calibrate or --set it",
        )
        members = read_routes(config, draft, per_child, mpm, sources.workers_properties, sources)
        uses_jk = draft.values.get("proxy.backend_pool.module") == "mod_jk"
        if sources.workers_properties is not None and not uses_jk:
            raise ConfigError(
                f"--workers-properties {sources.workers_properties}",
                f"a front that routes through mod_jk, but {config.main_file} has no JkMount "
                "in the request's path (mod_proxy routes it)",
                "leave --workers-properties out, or give the httpd configuration with JkMount",
            )
        draft.notes += config.notes
    else:
        members = _direct_members(files)
    read_backends(members, files, draft)
    if sources.kubernetes:
        from sim.configs.kubernetes import read_kubernetes

        read_kubernetes(sources.kubernetes, draft)
    if sources.clients == "closed":
        draft.placeholder("clients.kind", "closed", CLOSED_PLACEHOLDER)
        draft.placeholder("clients.users", 1, CLOSED_PLACEHOLDER)
        draft.placeholder("clients.think", {"dist": "exponential", "mean": 0.0}, CLOSED_PLACEHOLDER)
        draft.placeholder("run.duration_s", 60.0, "run control: simulated seconds per replication")
    else:
        draft.placeholder("clients.kind", "ab", CLIENTS_PLACEHOLDER)
        draft.placeholder("clients.concurrency", 1, CLIENTS_PLACEHOLDER)
        draft.placeholder("clients.requests", 10000, CLIENTS_PLACEHOLDER)
    draft.values = {
        "meta.name": f"from-config: {meta_name(draft)}",
        "meta.description": "Read from the configuration files; clients and demands are placeholders.",
        **draft.values,
    }
    _check(draft, sources)
    text = toml_text(draft, _header(sources, config))
    return Assembled(draft, config, text)


def compiled_in_mpm(version: str) -> str | None:
    """httpd 2.2 has its MPM compiled in, prefork unless configure said otherwise."""
    return "prefork" if parse_version(version) < (2, 4, 0) else None


def _direct_members(files: ServerFiles) -> list[Member]:
    """No front: the clients talk to the one server's HTTP connector."""
    from sim.configs.errors import Where

    named = files.tomcat + files.jetty
    if len(named) != 1:
        raise ConfigError(
            "from-config",
            "one server file when there is no --httpd (the clients talk to it directly)",
            "pass --httpd for a front with several backends",
        )
    path = named[0][1]
    kind = "tomcat" if files.tomcat else "jetty"
    if kind == "tomcat":
        from sim.configs.tomcat import read_tomcat

        server = read_tomcat(path, files.tomcat_version)
        connector = server.connector(None, "http", Where(path, 1))
        return [Member("tomcat", "localhost", connector.port, "http", 1.0, "", connector.where)]
    from sim.configs.jetty import read_jetty

    jetty = read_jetty(path)
    connector_j = jetty.connectors[0]
    return [
        Member("jetty", "localhost", connector_j.port, "http", 1.0, "", connector_j.element.where)
    ]


def _check(draft: Draft, sources: Sources) -> None:
    """The assembled model must load: a configuration the model cannot represent is said
    here, with what to change, not discovered at run time."""
    from sim.model.load import ModelError, parse_model

    try:
        # check_only: an [autoscale] table is checked here; what no engine runs yet (an
        # external metric) is refused when the model is run (`refuse_autoscale`)
        parse_model(draft.nested(), source="the assembled model", check_only=True)
    except ModelError as exc:
        problem = " ".join(str(exc).split("\n")[1:]).strip() or str(exc)
        raise ConfigError(
            "from-config",
            f"a configuration the model can represent, but: {problem}",
            "see the problem above; --set cannot fix a model that does not load",
        ) from None


def _header(sources: Sources, config: HttpdConfig | None) -> list[str]:
    lines = ["Written by `tiersim from-config` from the stack's own configuration files:"]
    if config is not None:
        lines.append(
            f"  httpd {'.'.join(map(str, config.version))}: {config.main_file} (ServerRoot {config.server_root}),"
        )
        lines.append(f"    {len(config.files)} files read with their Includes")
    if sources.workers_properties is not None:
        lines.append(f"  mod_jk: {sources.workers_properties}")
    for key, path in sources.tomcat:
        lines.append(
            f"  Tomcat {sources.tomcat_version[0]}.{sources.tomcat_version[1]}: {path}"
            + (f" ({key})" if key else "")
        )
    for key, path in sources.jetty:
        lines.append(f"  Jetty: {path}" + (f" ({key})" if key else ""))
    for path in sources.kubernetes:
        lines.append(f"  Kubernetes manifests: {path}")
    lines += [
        "Every value's source is in [meta.provenance]: file:line, or the upstream default with its",
        "reference.  The clients, the application's demands and the hosts' cores are placeholders",
        "(listed at the end): give them with --set, or calibrate them against a load test.",
    ]
    return lines


def meta_name(draft: Draft) -> str:
    values = draft.values
    parts = []
    if "proxy.mpm" in values:
        module = values.get("proxy.backend_pool.module", "mod_proxy")
        scheme = values.get("proxy.backend_pool.scheme", "http")
        parts.append(
            f"httpd {values['proxy.mpm']} + {module if module == 'mod_jk' else f'mod_proxy_{scheme}'}"
        )
    connector = values.get("backends.0.connector")
    parts.append(f"{values.get('backends.0.name', 'backend')} ({connector})")
    return " -> ".join(parts)
