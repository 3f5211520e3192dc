"""The readers on real files: Debian 12's stock apache2 configuration, libapache2-mod-jk's
workers.properties and jk.conf (with its status pages) and tomcat10's server.xml (committed
copies, tests/fixtures/configs/debian-*, with their copyright files), and the semantics each
reader owes its server."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.configs.errors import ConfigError, Where
from sim.configs.httpd import read_httpd
from sim.configs.to_model import Sources, assemble
from sim.configs.tomcat import read_tomcat
from sim.configs.workers_properties import read_workers_properties

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "configs"
DEBIAN = FIXTURES / "debian-apache2"
WORKERS = FIXTURES / "debian-libapache2-mod-jk" / "workers.properties"
TOMCAT = FIXTURES / "debian-tomcat10" / "server.xml"
TOMCAT_AJP = FIXTURES / "apache24-prefork-modjk-tomcat10" / "server.xml"


def line_of(path: Path, text: str) -> int:
    """The first line holding `text` that is not a comment."""
    lines = path.read_text().splitlines()
    return next(
        n for n, line in enumerate(lines, 1) if text in line and not line.lstrip().startswith("#")
    )


# ---------------------------------------------------------------- Debian's apache2
def test_debian_stock_apache2_is_read_with_its_includes():
    config = read_httpd(DEBIAN / "apache2.conf")
    # apache2.conf, ports.conf, mods-enabled/*.load and *.conf, conf-enabled, sites-enabled
    assert len(config.files) > 30
    assert config.loaded("mpm_event_module") and config.loaded("mod_mpm_event.c")
    assert not config.loaded("mpm_prefork_module")
    workers = config.server("MaxRequestWorkers")
    assert workers is not None and workers.args == ("150",)
    conf = DEBIAN / "mods-available" / "mpm_event.conf"
    assert workers.where == Where(
        DEBIAN / "mods-enabled" / "mpm_event.conf", line_of(conf, "MaxRequestWorkers")
    )
    keep_alive = config.server("KeepAlive")
    assert keep_alive is not None and keep_alive.args == ("On",)
    assert keep_alive.where.line == line_of(DEBIAN / "apache2.conf", "KeepAlive On")
    timeout = config.server("Timeout")
    assert timeout is not None and timeout.args == ("300",)
    # the envvars' ${APACHE_LOG_DIR} etc. in logging directives: left as written, as httpd would
    assert any("APACHE_" in v for d in config.directives for v in d.undefined)


def test_debian_stock_apache2_proxies_nothing():
    """Stock Debian serves files; Debian's jk.conf mounts only status workers worker.list
    does not name, so from-config says what is missing."""
    with pytest.raises(ConfigError, match="ProxyPass, ProxyPassMatch or JkMount"):
        assemble(Sources(httpd=DEBIAN / "apache2.conf", tomcat=[(None, TOMCAT)]))


def debian_with(tmp_path: Path, lines: str) -> Path:
    """Debian's configuration plus a few lines, as a site or a2enmod would add them."""
    main = tmp_path / "site.conf"
    main.write_text("Include apache2.conf\n" + lines)
    return main


def test_debian_apache2_with_mod_proxy_http(tmp_path):
    main = debian_with(
        tmp_path,
        "Include mods-available/proxy.load\nInclude mods-available/proxy_http.load\n"
        "ProxyPass / http://tomcat:8080/ max=10 ttl=30\n",
    )
    assembled = assemble(Sources(httpd=main, server_root=DEBIAN, tomcat=[(None, TOMCAT)]))
    values, provenance = assembled.draft.values, assembled.draft.provenance
    assert values["proxy.mpm"] == "event"
    assert values["proxy.workers"] == 150 and "mpm_event.conf" in provenance["proxy.workers"]
    assert values["proxy.start_servers"] == 2
    assert values["proxy.backend_pool.timeout_s"] == 300  # Debian's Timeout 300
    assert values["proxy.backend_pool.max"] == 10 and values["proxy.backend_pool.ttl_s"] == 30
    assert values["backends.0.connection_idle_timeout_s"] == 20
    # mod_reqtimeout and mod_deflate are enabled by Debian: named as not modelled
    missing = "\n".join(assembled.draft.not_modelled)
    assert "RequestReadTimeout" in missing and "DEFLATE" in missing


def test_debian_apache2_with_mod_jk_and_its_workers_properties(tmp_path):
    main = debian_with(
        tmp_path,
        "Include mods-available/jk.load\nInclude mods-available/jk.conf\nJkMount /* ajp13_worker\n",
    )
    assembled = assemble(
        Sources(
            httpd=main, server_root=DEBIAN, workers_properties=WORKERS, tomcat=[(None, TOMCAT_AJP)]
        )
    )
    values = assembled.draft.values
    assert values["proxy.backend_pool.module"] == "mod_jk"
    assert values["proxy.backend_pool.max"] == 25  # connection_pool_size: ThreadsPerChild
    assert values["proxy.backend_pool.retries"] == 2
    assert values["backends.0.connector"] == "nonblocking"  # Tomcat 10's AjpNioProtocol
    assert values["backends.0.connection_idle_timeout_s"] is None  # AJP connectionTimeout -1
    assert "balancer.policy" not in values  # one ajp13 worker: no lb worker
    # Debian's lb worker around the same node
    main.write_text(main.read_text().replace("ajp13_worker\n", "loadbalancer\n"))
    main.write_text(main.read_text() + "")
    text = tmp_path / "w.properties"
    text.write_text(WORKERS.read_text() + "worker.list=loadbalancer\n")
    lb = assemble(
        Sources(
            httpd=main, server_root=DEBIAN, workers_properties=text, tomcat=[(None, TOMCAT_AJP)]
        )
    )
    assert lb.draft.values["balancer.policy"] == "mod_jk_request"
    assert lb.draft.values["balancer.sticky_session"] is True  # mod_jk's default
    assert lb.draft.values["backends.0.name"] == "tomcat"
    assert "ajp13_worker" in lb.draft.provenance["backends.0.name"]


# ---------------------------------------------------------------- libapache2-mod-jk 1.2.48
# Debian 12's package as installed (tests/fixtures/configs/debian-libapache2-mod-jk-<version>/:
# its PACKAGE file names the version and where each file comes from).  Its jk.conf mounts
# mod_jk's two status pages, /jk-status and /jk-manager, which Apache serves itself.
MOD_JK = FIXTURES / "debian-libapache2-mod-jk-1.2.48-2+deb12u2"
# upstream's conf/workers.properties defines the two status workers Debian's file leaves out
UPSTREAM_STATUS = (
    "worker.list=jk-status\nworker.jk-status.type=status\nworker.jk-status.read_only=true\n"
    "worker.list=jk-manager\nworker.jk-manager.type=status\n"
)


def with_mod_jk(tmp_path: Path, lines: str = "") -> Path:
    """Debian's apache2 with `a2enmod jk` (the package's jk.load and jk.conf) and a site."""
    return debian_with(
        tmp_path,
        f"Include {MOD_JK}/mods-available/jk.load\nInclude {MOD_JK}/mods-available/jk.conf\n"
        + lines,
    )


def status_lines(assembled) -> list[str]:
    return [line for line in assembled.draft.not_modelled if "status worker" in line]


def test_debian_mod_jk_status_pages_are_named_and_left_out(tmp_path):
    """Debian's stock files with the application mounted: the status pages, whose workers
    Debian's workers.properties does not define, are named as not modelled, not refused."""
    main = with_mod_jk(tmp_path, "JkMount /* ajp13_worker\n")
    assembled = assemble(
        Sources(
            httpd=main,
            server_root=DEBIAN,
            workers_properties=MOD_JK / "workers.properties",
            tomcat=[(None, TOMCAT_AJP)],
        )
    )
    conf = MOD_JK / "mods-available" / "jk.conf"
    assert status_lines(assembled) == [
        f"{conf}:{line_of(conf, 'JkMount ' + name)}: JkMount {name}: status worker {name}: "
        f"mod_jk's stock status page, not a backend; {MOD_JK / 'workers.properties'} does not "
        f"define it (mod_jk answers 500; upstream's defines worker.{name}.type=status); "
        "not modelled"
        for name in ("jk-status", "jk-manager")
    ]
    values = assembled.draft.values
    assert values["proxy.backend_pool.module"] == "mod_jk"
    assert values["backends.0.name"] == "tomcat" and "backends.1.name" not in values
    assert "ajp13_worker" in assembled.draft.provenance["backends.0.name"]


def test_debian_mod_jk_alone_names_the_route_it_lacks(tmp_path):
    """The package's files and nothing else mount only the status pages: one line saying so,
    with the JkMount of Debian's ajp13_worker that sends the application to Tomcat."""
    for workers in (None, UPSTREAM_STATUS):
        properties = tmp_path / "workers.properties"
        properties.write_text((MOD_JK / "workers.properties").read_text() + (workers or ""))
        with pytest.raises(ConfigError) as refused:
            assemble(
                Sources(
                    httpd=with_mod_jk(tmp_path),
                    server_root=DEBIAN,
                    workers_properties=properties,
                    tomcat=[(None, TOMCAT_AJP)],
                )
            )
        message = str(refused.value)
        assert "\n" not in message
        assert "the JkMounts are mod_jk's status pages only (JkMount jk-status at" in message
        assert message.endswith("e.g. JkMount /* ajp13_worker")


def test_status_workers_as_upstream_defines_them_round_trip(tmp_path):
    """Upstream's status workers in worker.list beside Debian's lb worker: read, named, left
    out of the balancer; the model written loads and runs."""
    properties = tmp_path / "workers.properties"
    properties.write_text(
        (MOD_JK / "workers.properties").read_text() + UPSTREAM_STATUS + "worker.list=loadbalancer\n"
    )
    sources = Sources(
        httpd=with_mod_jk(tmp_path, "JkMount /* loadbalancer\n"),
        server_root=DEBIAN,
        workers_properties=properties,
        tomcat=[(None, TOMCAT_AJP)],
        clients="closed",
    )
    assembled = assemble(sources)
    assert [line.split(": ", 2)[2] for line in status_lines(assembled)] == [
        f"status worker {name}: mod_jk's status page, not a backend; not modelled"
        for name in ("jk-status", "jk-manager")
    ]
    values = assembled.draft.values
    assert values["balancer.policy"] == "mod_jk_request"
    assert values["backends.0.name"] == "tomcat" and "backends.1.name" not in values
    path = tmp_path / "model.toml"
    path.write_text(assembled.text)
    assert "status worker jk-status" in path.read_text().split("# Not modelled", 1)[1]
    model = load_model_text(path, [
        "clients.users=20", 'clients.think={dist="exponential", mean=0.5}', "proxy.cores=1",
        'proxy.demand={dist="exponential", mean=0.0005}', "backends.0.cores=1",
        'backends.0.demand={dist="exponential", mean=0.01}', "run.duration_s=20",
    ])  # fmt: skip
    assert [group.name for group in model.backends] == ["tomcat"]
    assert model.proxy.backend_pool.module == "mod_jk"
    from sim.run.replications import run

    summary = run(model, replications=1).summary
    # 20 users, 0.5 s think, 10 ms of one core: nowhere near a queue, ~20 / 0.51 requests/s
    assert summary["throughput"].mean == pytest.approx(20 / 0.51, rel=0.15)


# ---------------------------------------------------------------- workers.properties
def test_debian_workers_properties():
    props = read_workers_properties(WORKERS)
    assert props.listed() == ["ajp13_worker"]
    assert props.worker_type("ajp13_worker") == "ajp13"
    assert props.worker("ajp13_worker", "port").value == "8009"
    assert props.worker_type("loadbalancer") == "lb"
    assert [name for name, _ in props.members("loadbalancer")] == ["ajp13_worker"]
    assert props.get("workers.tomcat_home").value == "/usr/share/tomcat8"


def test_mod_jk_references_templates_and_lists(tmp_path):
    path = tmp_path / "workers.properties"
    path.write_text(
        "tomcat_port=8009   # a comment after the value\n"
        "worker.template.type=ajp13\n"
        "worker.template.port=$(tomcat_port)\n"
        "worker.template.reply_timeout=30000\n"
        "worker.node1.reference=worker.template\n"
        "worker.node1.host=t1\n"
        "worker.node2.reference=worker.template\n"
        "worker.node2.host=t2\n"
        "worker.node2.reply_timeout=5000\n"
        "worker.list=node1\n"
        "worker.list=node2\n"
        "worker.node1.host=t1b\n"
    )
    props = read_workers_properties(path)
    assert props.listed() == ["node1", "node2"]  # a repeated list is joined
    assert props.worker("node1", "port").value == "8009"  # $(name) and reference=
    assert props.worker("node1", "reply_timeout").value == "30000"
    assert (
        props.worker("node2", "reply_timeout").value == "5000"
    )  # its own wins over the template's
    assert props.worker("node1", "host").value == "t1b"  # a repeated property: the last
    assert props.worker("node1", "port").where == Where(path, 3)


def test_jk_worker_property_lines_add_to_the_file(tmp_path):
    props = read_workers_properties(
        None, (("worker.list=a", Where(tmp_path, 1)), ("worker.a.host=h", Where(tmp_path, 2)))
    )
    assert props.listed() == ["a"] and props.worker("a", "host").value == "h"


# ---------------------------------------------------------------- Tomcat's server.xml
def test_tomcat10_server_xml():
    server = read_tomcat(TOMCAT)
    assert [(c.port, c.scheme, c.io) for c in server.connectors] == [(8080, "http", "nio")]
    timeout = server.connectors[0].attribute("connectionTimeout")
    assert timeout is not None and timeout.value == "20000"
    assert timeout.where.line == line_of(TOMCAT, 'connectionTimeout="20000"')


def test_tomcat_shared_executor_and_protocol_eras(tmp_path):
    text = TOMCAT.read_text()
    path = tmp_path / "server.xml"
    path.write_text(
        text.replace(
            '<Service name="Catalina">',
            '<Service name="Catalina">\n<Executor name="pool" maxThreads="150" minSpareThreads="4"/>',
        ).replace(
            '<Connector port="8080" protocol="HTTP/1.1"',
            '<Connector executor="pool" port="8080" protocol="HTTP/1.1"',
        )
    )
    server = read_tomcat(path)
    threads = server.connectors[0].thread_attribute("maxThreads")
    assert (
        threads is not None
        and threads.value == "150"
        and threads.where.line == 1 + line_of(TOMCAT, '<Service name="Catalina">')
    )
    # the same file read as Tomcat 7: HTTP/1.1 is the blocking BIO connector
    assert read_tomcat(path, (7, 0)).connectors[0].io == "bio"


# ---------------------------------------------------------------- httpd semantics
def test_httpd_defines_conditions_and_includes(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "b.conf").write_text("Define SECOND\n")
    (tmp_path / "conf.d" / "a.conf").write_text("Define FIRST 7\n")
    (tmp_path / "httpd.conf").write_text(
        "LoadModule mpm_worker_module m/mod_mpm_worker.so\n"
        "IncludeOptional conf.d/*.conf\n"
        "IncludeOptional nothing.d/*.conf\n"
        "<IfDefine FIRST>\n  ThreadsPerChild ${FIRST}\n</IfDefine>\n"
        "<IfDefine !SECOND>\n  ThreadsPerChild 99\n</IfDefine>\n"
        "<IfModule !mpm_worker_module>\n  ThreadsPerChild 98\n</IfModule>\n"
        "<IfVersion >= 2.4>\n  MaxRequestWorkers \\\n     70\n</IfVersion>\n"
        "<IfVersion < 2.4>\n  MaxClients 60\n</IfVersion>\n"
        '<IfDefine FROM_COMMAND_LINE>\n  KeepAlive "Off"\n</IfDefine>\n'
    )
    config = read_httpd(tmp_path / "httpd.conf", defines={"FROM_COMMAND_LINE": ""})
    assert config.files[1:] == [tmp_path / "conf.d" / "a.conf", tmp_path / "conf.d" / "b.conf"]
    assert config.server("ThreadsPerChild").args == ("7",)
    workers = config.server("MaxRequestWorkers")
    assert workers.args == ("70",) and workers.where.line == 14  # the continued line's first
    assert config.server("MaxClients") is None
    assert config.server("KeepAlive").args == ("Off",)
    old = read_httpd(tmp_path / "httpd.conf", version="2.2.34")
    assert old.server("MaxClients").args == ("60",) and old.server("MaxRequestWorkers") is None


def test_httpd_22_defaults(tmp_path):
    (tmp_path / "httpd.conf").write_text(
        "LoadModule proxy_module m/mod_proxy.so\nLoadModule proxy_ajp_module m/mod_proxy_ajp.so\n"
        "ProxyPass / ajp://tomcat:8009/\n"
    )
    assembled = assemble(
        Sources(
            httpd=tmp_path / "httpd.conf",
            httpd_version="2.2.34",
            tomcat=[(None, TOMCAT_AJP)],
            tomcat_version=(6, 0),
        )
    )
    values, provenance = assembled.draft.values, assembled.draft.provenance
    assert values["proxy.mpm"] == "prefork" and "2.2" in provenance["proxy.mpm"]
    assert values["proxy.backend_pool.timeout_s"] == 300  # 2.2's Timeout
    assert "MaxClients 256" in provenance["proxy.workers"]
    assert values["backends.0.connector"] == "blocking"  # Tomcat 6's AJP/1.3 is BIO


def test_mod_proxy_balancer_members_and_weights(tmp_path):
    (tmp_path / "httpd.conf").write_text(
        "LoadModule mpm_event_module m/mod_mpm_event.so\nLoadModule proxy_module m/mod_proxy.so\n"
        "LoadModule proxy_http_module m/mod_proxy_http.so\nLoadModule proxy_balancer_module m/b.so\n"
        "LoadModule lbmethod_bybusyness_module m/mod_lbmethod_bybusyness.so\n"
        "<Proxy balancer://tomcats>\n"
        "  BalancerMember http://t1:8080 route=t1 acquire=500\n"
        "  BalancerMember http://t2:8080 route=t2 acquire=500\n"
        "  BalancerMember http://t3:8080 route=t3 acquire=500 loadfactor=2\n"
        "  ProxySet lbmethod=bybusyness stickysession=JSESSIONID|jsessionid\n"
        "</Proxy>\n"
        "ProxyPass / balancer://tomcats/\n"
    )
    assembled = assemble(Sources(httpd=tmp_path / "httpd.conf", tomcat=[(None, TOMCAT)]))
    values = assembled.draft.values
    assert values["backends.0.count"] == 2 and values["backends.0.weight"] == 1.0
    assert values["backends.1.weight"] == 2.0 and "backends.1.count" not in values
    assert values["balancer.policy"] == "bybusyness" and values["balancer.sticky_session"] is True
    assert values["proxy.backend_pool.acquire_timeout_s"] == 0.5


def test_each_member_with_its_own_server_xml(tmp_path):
    """`--tomcat NAME=FILE`: a mod_jk lb whose members run different server.xml files are
    two groups, each with its file's values; a Cluster element is named as not modelled."""
    bigger = tmp_path / "big.xml"
    bigger.write_text(
        TOMCAT_AJP.read_text()
        .replace('port="8009"', 'port="8009" maxThreads="400"')
        .replace(
            "</Engine>",
            '<Cluster className="org.apache.catalina.ha.tcp.SimpleTcpCluster"/>\n</Engine>',
        )
    )
    (tmp_path / "httpd.conf").write_text(
        "LoadModule mpm_event_module m/e.so\nLoadModule jk_module m/mod_jk.so\n"
        "JkWorkersFile w.properties\nJkMount /* lb\n"
    )
    (tmp_path / "w.properties").write_text(
        "worker.list=lb\nworker.lb.type=lb\nworker.lb.balance_workers=node1,node2\n"
        "worker.lb.method=B\nworker.lb.sticky_session=false\n"
        "worker.node1.host=t1\nworker.node1.reply_timeout=10000\n"
        "worker.node2.reference=worker.node1\nworker.node2.host=t2\nworker.node2.lbfactor=2\n"
    )
    assembled = assemble(
        Sources(httpd=tmp_path / "httpd.conf", tomcat=[("node1", TOMCAT_AJP), ("node2", bigger)])
    )
    values = assembled.draft.values
    assert values["backends.0.threads"] == 200 and values["backends.1.threads"] == 400
    assert values["backends.0.name"] == "tomcat" and values["backends.1.name"] == "tomcat2"
    assert values["backends.1.weight"] == 2.0
    assert (
        values["balancer.policy"] == "mod_jk_busyness"
        and values["balancer.sticky_session"] is False
    )
    assert values["proxy.backend_pool.reply_timeout_s"] == 10  # node2 inherits it too
    assert any("<Cluster" in line for line in assembled.draft.not_modelled)


def test_define_on_the_command_line_picks_the_route(tmp_path):
    from click.testing import CliRunner

    from sim.cli import main

    httpd = FIXTURES / "seed000-rhel5-httpd22"
    args = [
        "from-config", "--httpd", httpd / "conf" / "httpd.conf", "--server-root", httpd,
        "--httpd-version", "2.2.3", "--tomcat", FIXTURES / "seed000-tomcat55" / "server.xml",
        "--tomcat-version", "5.5", "-o", tmp_path / "m.toml",
    ]  # fmt: skip
    for define, module in (("MOD_JK", "mod_jk"), ("PROXY_AJP", "mod_proxy")):
        result = CliRunner().invoke(main, [str(a) for a in args] + ["--define", define])
        assert result.exit_code == 0, result.output
        assert load_model_text(tmp_path / "m.toml").proxy.backend_pool.module == module
    # neither: RHEL 5's httpd.conf alone proxies nothing
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 3 and "ProxyPass" in result.stderr


def load_model_text(path: Path, overrides: list[str] | None = None):
    from sim.model.load import load_model

    return load_model(path, overrides or [])
