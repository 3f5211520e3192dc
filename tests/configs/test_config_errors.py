"""Bad configuration input: one line naming file:line, what was expected and the fix; exit
code 3; never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.exit_codes import ExitCode

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "configs"
SERVER_XML = FIXTURES / "apache24-event-tomcat10" / "server.xml"
PROXY_MODULES = (
    "LoadModule mpm_event_module m/mod_mpm_event.so\n"
    "LoadModule proxy_module m/mod_proxy.so\n"
    "LoadModule proxy_http_module m/mod_proxy_http.so\n"
    "LoadModule proxy_balancer_module m/mod_proxy_balancer.so\n"
)
JK_MODULES = "LoadModule mpm_worker_module m/mod_mpm_worker.so\nLoadModule jk_module m/mod_jk.so\n"


def from_config(tmp_path: Path, files: dict[str, str], *extra: str):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    args = [
        "from-config",
        "--httpd",
        tmp_path / "httpd.conf",
        "--tomcat",
        SERVER_XML,
        "-o",
        tmp_path / "m.toml",
    ]
    return CliRunner().invoke(main, [str(a) for a in [*args, *extra]])


def one_line_error(result, file: str, line: int | None, *words: str) -> str:
    assert result.exit_code == ExitCode.MODEL, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    message = result.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    where = f"{file}:{line}:" if line is not None else f"{file}:"
    assert where in message, message
    for word in words:
        assert word in message, message
    # the expected thing, then the fix, after a semicolon
    assert re.search(r": .+; .+", message), message
    return message


CASES = {
    "not httpd syntax": (
        {"httpd.conf": "ServerName x\nworker.list=ajp13\n"},
        "httpd.conf",
        2,
        ("workers.properties",),
    ),
    "XML given as httpd": (
        {"httpd.conf": '<?xml version="1.0"?>\n<Server port="8005">\n</Server>\n'},
        "httpd.conf",
        1,
        ("XML", "--tomcat"),
    ),
    "Include loop": (
        {
            "httpd.conf": PROXY_MODULES + "Include a.conf\n",
            "a.conf": "KeepAlive On\nInclude b.conf\n",
            "b.conf": "Include a.conf\n",
        },
        "b.conf",
        1,
        ("loop", "a.conf"),
    ),
    "unclosed section": (
        {"httpd.conf": PROXY_MODULES + "<IfModule mpm_event_module>\n  MaxRequestWorkers 10\n"},
        "httpd.conf",
        5,
        ("never closed", "</IfModule>"),
    ),
    "mismatched close": (
        {"httpd.conf": PROXY_MODULES + "<VirtualHost *:80>\n</IfModule>\n"},
        "httpd.conf",
        6,
        ("</VirtualHost>",),
    ),
    "undefined variable": (
        {
            "httpd.conf": PROXY_MODULES
            + "MaxRequestWorkers ${WORKERS}\nProxyPass / http://t:8080/\n"
        },
        "httpd.conf",
        5,
        ("${WORKERS}", "--define WORKERS=VALUE"),
    ),
    "undefined variable in a condition": (
        {"httpd.conf": PROXY_MODULES + "<IfDefine ${WHICH}>\n</IfDefine>\n"},
        "httpd.conf",
        5,
        ("${WHICH}",),
    ),
    "ProxyPass to a missing balancer": (
        {
            "httpd.conf": PROXY_MODULES
            + "<Proxy balancer://tomcats>\n  BalancerMember http://t1:8080\n</Proxy>\n"
            + "ProxyPass / balancer://tomcat/\n"
        },
        "httpd.conf",
        8,
        ("balancer://tomcat", "balancer://tomcats"),
    ),
    "a balancing method not loaded": (
        {
            "httpd.conf": PROXY_MODULES
            + "<Proxy balancer://tomcats>\n  BalancerMember http://t1:8080\n</Proxy>\n"
            + "ProxyPass / balancer://tomcats/ lbmethod=bytraffic\n"
        },
        "httpd.conf",
        8,
        ("lbmethod_bytraffic_module",),
    ),
    "missing Include": (
        {"httpd.conf": PROXY_MODULES + "Include nowhere.conf\n"},
        "httpd.conf",
        5,
        ("nowhere.conf", "ServerRoot"),
    ),
    "Include wildcard matching nothing": (
        {"httpd.conf": PROXY_MODULES + "Include conf.d/*.conf\n"},
        "httpd.conf",
        5,
        ("IncludeOptional",),
    ),
    "two MPMs": (
        {"httpd.conf": PROXY_MODULES + "LoadModule mpm_prefork_module m/mod_mpm_prefork.so\n"},
        "httpd.conf",
        5,
        ("AH00534",),
    ),
    "no MPM": (
        {"httpd.conf": "LoadModule proxy_module m/mod_proxy.so\nProxyPass / http://t:8080/\n"},
        "httpd.conf",
        None,
        ("--mpm",),
    ),
    "a comment after a directive": (
        {"httpd.conf": PROXY_MODULES + "MaxRequestWorkers 10 # ten\nProxyPass / http://t:8080/\n"},
        "httpd.conf",
        5,
        ("one value",),
    ),
    "a number that is not": (
        {"httpd.conf": PROXY_MODULES + "ThreadsPerChild many\nProxyPass / http://t:8080/\n"},
        "httpd.conf",
        5,
        ("whole number",),
    ),
    "no Connector on the port": (
        {"httpd.conf": PROXY_MODULES + "ProxyPass / http://t:8081/\n"},
        "httpd.conf",
        5,
        ("port 8081", "<Connector"),
    ),
    "mod_jk reference to an unknown worker": (
        {
            "httpd.conf": JK_MODULES + "JkWorkersFile w.properties\nJkMount /* node1\n",
            "w.properties": "worker.list=node1\nworker.node1.reference=worker.template\nworker.node1.host=t\n",
        },
        "w.properties",
        2,
        ("worker.template",),
    ),
    "mod_jk lb member never defined": (
        {
            "httpd.conf": JK_MODULES + "JkWorkersFile w.properties\nJkMount /* lb\n",
            "w.properties": "worker.list=lb\nworker.lb.type=lb\nworker.lb.balance_workers=node1,node2\n"
            "worker.node1.host=t1\nworker.node1.port=8009\n",
        },
        "w.properties",
        3,
        ("node2",),
    ),
    "JkMount of a worker not in worker.list": (
        {
            "httpd.conf": JK_MODULES + "JkWorkersFile w.properties\nJkMount /* other\n",
            "w.properties": "worker.list=node1\nworker.node1.host=t\n",
        },
        "httpd.conf",
        4,
        ("worker.list",),
    ),
    "an undefined $(name) in workers.properties": (
        {
            "httpd.conf": JK_MODULES + "JkWorkersFile w.properties\nJkMount /* node1\n",
            "w.properties": "worker.list=node1\nworker.node1.host=$(tomcat_host)\n",
        },
        "w.properties",
        2,
        ("$(tomcat_host)",),
    ),
    "httpd syntax in workers.properties": (
        {
            "httpd.conf": JK_MODULES + "JkWorkersFile w.properties\nJkMount /* node1\n",
            "w.properties": "worker.list=node1\nJkMount /* node1\n",
        },
        "w.properties",
        2,
        ("name=value",),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_configuration_is_one_line(tmp_path, case):
    files, file, line, words = CASES[case]
    result = from_config(tmp_path, files)
    one_line_error(result, str(tmp_path / file), line, *words)


def test_server_xml_that_is_not_xml(tmp_path):
    (tmp_path / "httpd.conf").write_text(PROXY_MODULES + "ProxyPass / http://t:8080/\n")
    (tmp_path / "server.xml").write_text('<Server port="8005">\n  <Service>\n</Server>\n')
    args = [
        "from-config",
        "--httpd",
        tmp_path / "httpd.conf",
        "--tomcat",
        tmp_path / "server.xml",
        "-o",
        tmp_path / "m.toml",
    ]
    result = CliRunner().invoke(main, [str(a) for a in args])
    one_line_error(result, str(tmp_path / "server.xml"), 3, "well-formed XML")


def test_an_httpd_file_given_as_server_xml(tmp_path):
    (tmp_path / "httpd.conf").write_text(PROXY_MODULES + "ProxyPass / http://t:8080/\n")
    args = [
        "from-config",
        "--httpd",
        tmp_path / "httpd.conf",
        "--tomcat",
        tmp_path / "httpd.conf",
        "-o",
        tmp_path / "m.toml",
    ]
    result = CliRunner().invoke(main, [str(a) for a in args])
    one_line_error(result, str(tmp_path / "httpd.conf"), 1, "XML")
