"""Configuration files written to exhaust the reader: each is refused in one line naming the
file, the line, the limit and how to raise it, within the memory and time of `bounded`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.bounded import read_bounded, refused

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
JETTY = CONFIGS / "jetty"

LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE {root} [\n <!ENTITY l0 "{text}">\n'
    + "".join(
        f' <!ENTITY l{i} "{f"&l{i - 1};" * 10}">\n' for i in range(1, 10)
    )  # ten to the ninth copies of l0
    + "]>\n"
)


def laughs(root: str, body: str) -> str:
    return LAUGHS.format(root=root, text="ha" * 40) + body


def test_workers_properties_value_doubled_forty_times(tmp_path):
    path = tmp_path / "workers.properties"
    path.write_text("x=ab\n" + "x=$(x)$(x)\n" * 40 + "worker.list=a\n")
    line = refused("workers", path, "ConfigError", "TIERSIM_MAX_EXPANDED_CHARS=")
    # 2 * 2^19 passes 2^20 on the 20th doubling, the file's 21st line
    assert line.startswith(f"ConfigError: {path}:21: ")
    assert "more than the limit of 1,048,576 characters" in line


def test_workers_properties_one_line_of_many_references(tmp_path):
    """Not a doubling per line: one line that names a 64 kB value a thousand times."""
    path = tmp_path / "workers.properties"
    path.write_text("x=" + "a" * 2**16 + "\ny=" + "$(x)" * 1000 + "\n")
    refused("workers", path, "ConfigError", ":2: ", "TIERSIM_MAX_EXPANDED_CHARS=")


def test_workers_properties_references_that_multiply(tmp_path):
    """Every worker a copy of a template of many properties: the product is bounded."""
    path = tmp_path / "workers.properties"
    lines = ["worker.t.type=ajp13", *(f"worker.t.p{i}=1" for i in range(300))]
    lines += [f"worker.w{i}.reference=worker.t" for i in range(300)]
    path.write_text("\n".join(lines) + "\n")
    refused(
        "workers",
        path,
        "ConfigError",
        "properties once references are copied",
        "TIERSIM_MAX_WORKER_PROPERTIES=40000",
        TIERSIM_MAX_WORKER_PROPERTIES="10000",
    )
    # the same file within a raised limit is read
    assert read_bounded("workers", path, TIERSIM_MAX_WORKER_PROPERTIES="100000").output == ""


def test_a_device_given_as_a_configuration_file_is_not_read_forever():
    line = refused("workers", "/dev/zero", "ConfigError", "not a regular file")
    assert line.startswith("ConfigError: /dev/zero: ")


def test_httpd_define_that_doubles_itself(tmp_path):
    path = tmp_path / "httpd.conf"
    path.write_text("Define X ab\n" + "Define X ${X}${X}\n" * 60 + "Listen 80\n")
    # the whole line is expanded: on line 20, "Define X " and two 2^19-character values
    refused("httpd", path, "ConfigError", f"{path}:20: ", "TIERSIM_MAX_EXPANDED_CHARS=")


def test_httpd_include_fan_out(tmp_path):
    """Each file includes the next twice: thirty levels would be 2^30 files."""
    (tmp_path / "httpd.conf").write_text("Include l0.conf\nInclude l0.conf\n")
    for level in range(30):
        (tmp_path / f"l{level}.conf").write_text(f"Include l{level + 1}.conf\n" * 2)
    (tmp_path / "l30.conf").write_text("Listen 80\n")
    refused(
        "httpd",
        tmp_path / "httpd.conf",
        "ConfigError",
        "files read for one configuration",
        "TIERSIM_MAX_CONFIG_FILES=",
        "check the wildcards",
        at=tmp_path / "l29.conf:2",  # depth first: where the 4097th file would be read
    )


def test_httpd_include_of_a_directory_with_too_many_files(tmp_path):
    (tmp_path / "conf.d").mkdir()
    for number in range(12):
        (tmp_path / "conf.d" / f"{number:02}.conf").write_text("Listen 80\n")
    (tmp_path / "httpd.conf").write_text("Include conf.d\n")
    refused(
        "httpd",
        tmp_path / "httpd.conf",
        "ConfigError",
        ":1: ",
        "matches 12 files",
        "TIERSIM_MAX_CONFIG_FILES=40",
        TIERSIM_MAX_CONFIG_FILES="10",
    )


def test_httpd_configuration_too_large_in_total(tmp_path):
    (tmp_path / "big.conf").write_text("# a comment\n" * 200)
    (tmp_path / "httpd.conf").write_text("Include big.conf\n")
    refused(
        "httpd",
        tmp_path / "httpd.conf",
        "ConfigError",
        ":1: ",
        "bytes of configuration",
        "TIERSIM_MAX_CONFIG_BYTES=4000",
        TIERSIM_MAX_CONFIG_BYTES="1000",
    )


@pytest.mark.parametrize(
    ("kind", "root", "body"),
    [
        ("tomcat", "Server", '<Server port="8005"><Service name="s">&l9;</Service></Server>\n'),
        (
            "jetty",
            "Configure",
            '<Configure class="org.eclipse.jetty.server.Server">&l9;</Configure>\n',
        ),
    ],
)
def test_xml_entities_that_expand_a_billion_times_in_element_text(tmp_path, kind, root, body):
    path = tmp_path / f"{kind}.xml"
    path.write_text(laughs(root, body))
    refused(kind, path, "ConfigError", f"{path}:14: ", "TIERSIM_MAX_ENTITY_CHARS=")


def test_xml_entities_that_expand_in_an_attribute(tmp_path):
    path = tmp_path / "server.xml"
    path.write_text(laughs("Server", '<Server port="8005" shutdown="&l9;"/>\n'))
    refused("tomcat", path, "ConfigError", f"{path}:14: ", "XML entities expand")


def test_an_external_entity_is_neither_read_nor_left_out_silently(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    path = tmp_path / "server.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE Server [<!ENTITY c SYSTEM "file://{secret}">]>\n'
        '<Server port="8005">\n  <Service name="s">&c;</Service>\n</Server>\n'
    )
    line = refused("tomcat", path, "ConfigError", f"{path}:4: ", "external XML entity")
    assert "TOP-SECRET" not in line


def test_a_remote_dtd_is_not_fetched(tmp_path):
    """jetty.xml names its DTD by URL; nothing is fetched (192.0.2.1 is unroutable: a reader
    that tried would hang), and the file is read as usual."""
    shipped = (JETTY / "jetty9.xml").read_text()
    path = tmp_path / "jetty.xml"
    path.write_text(shipped.replace("http://www.eclipse.org/", "http://192.0.2.1/"))
    assert "192.0.2.1" in path.read_text()
    outcome = read_bounded("jetty", path)
    assert outcome.output == "" and outcome.seconds < 5


@pytest.mark.parametrize(
    ("kind", "root", "element"),
    [("tomcat", '<Server port="8005">', "a"), ("jetty", "<Configure>", "Call")],
)
def test_xml_elements_nested_thousands_deep(tmp_path, kind, root, element):
    """Parsed without a stack, but walked with one: refused as it is read, not a RecursionError
    when the tree is searched for its connectors."""
    path = tmp_path / f"{kind}.xml"
    closing = root.split()[0].strip("<>")
    path.write_text(
        f"{root}\n" + f"<{element}>" * 100_000 + f"</{element}>" * 100_000 + f"</{closing}>\n"
    )
    refused(kind, path, "ConfigError", f"{path}:2: ", "not more than 200")


def test_a_latin1_server_xml_that_says_utf8(tmp_path):
    """expat calls the byte an "invalid token", which sends one looking for a typo."""
    shipped = (CONFIGS / "debian-tomcat10" / "server.xml").read_bytes()
    assert shipped.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    path = tmp_path / "server.xml"
    path.write_bytes(
        shipped.replace(b"<Server ", "<!-- caf\xe9 -->\n<Server ".encode("latin-1"), 1)
    )
    line = refused("tomcat", path, "ConfigError", "byte 0xe9 is not UTF-8", 'encoding="ISO-8859-1"')
    number = shipped.split(b"<Server ", 1)[0].count(b"\n") + 1
    assert line.startswith(f"ConfigError: {path}:{number}: "), line
    # declared as what it is, the same file is read
    path.write_bytes(path.read_bytes().replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"', 1))
    assert read_bounded("tomcat", path).output == ""


def test_a_tomcat_thread_count_past_a_java_int(tmp_path):
    """Tomcat ignores maxThreads it cannot parse as an int and keeps 200: the file's
    99999999999999999999 was written into the model as that many threads."""
    path = tmp_path / "server.xml"
    path.write_text(
        '<Server port="8005">\n<Service name="Catalina">\n'
        '<Connector port="8080" protocol="HTTP/1.1" maxThreads="99999999999999999999"/>\n'
        '<Engine name="Catalina" defaultHost="localhost"/>\n</Service>\n</Server>\n'
    )
    from sim.configs.errors import ConfigError
    from sim.configs.to_model import Sources, assemble

    with pytest.raises(
        ConfigError, match=r"server.xml:3: maxThreads a Java int .*keeps its default"
    ):
        assemble(Sources(tomcat=[(None, path)]))


def test_a_jetty_thread_count_past_a_java_int(tmp_path):
    shipped = (JETTY / "jetty9.xml").read_text()
    path = tmp_path / "jetty.xml"
    path.write_text(shipped.replace('default="200"', 'default="99999999999999999999"', 1))
    from sim.configs.errors import ConfigError
    from sim.configs.to_model import Sources, assemble

    with pytest.raises(ConfigError, match=r"jetty.xml:9: maxThreads a Java int \(at most 2,147"):
        assemble(Sources(jetty=[(None, path)]))


def test_workers_properties_that_nothing_reads_are_refused(tmp_path):
    """mod_jk's workers.properties is read for httpd's JkMount lines: without --httpd, or with
    a front that mod_proxy routes, it was left unread while the model's header named it."""
    from sim.configs.errors import ConfigError
    from sim.configs.to_model import Sources, assemble

    tomcat = [(None, CONFIGS / "apache24-event-tomcat10" / "server.xml")]
    workers = CONFIGS / "apache24-prefork-modjk-tomcat10" / "workers.properties"
    with pytest.raises(ConfigError, match="--httpd too"):
        assemble(Sources(tomcat=tomcat, workers_properties=workers))
    proxied = CONFIGS / "apache24-event-tomcat10" / "httpd.conf"
    with pytest.raises(ConfigError, match="no JkMount"):
        assemble(Sources(httpd=proxied, tomcat=tomcat, workers_properties=workers))
    # with the front it belongs to, it is read
    front = CONFIGS / "apache24-prefork-modjk-tomcat10"
    jk = assemble(
        Sources(
            httpd=front / "httpd.conf",
            tomcat=[(None, front / "server.xml")],
            workers_properties=workers,
        )
    )
    assert jk.draft.values["proxy.backend_pool.module"] == "mod_jk"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (lambda tmp: tmp, "a directory, not a file"),
        (lambda tmp: Path("/dev/zero"), "not a regular file"),
    ],
)
def test_a_configuration_path_that_is_no_file_is_named_as_what_it_is(tmp_path, given, said):
    """Not "no such file" for a directory or a device that is there."""
    from click.testing import CliRunner

    from sim.cli import main

    output = str(tmp_path / "model.toml")
    result = CliRunner().invoke(
        main, ["from-config", "--tomcat", str(given(tmp_path)), "-o", output]
    )
    assert result.exit_code == 2, result.output
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
