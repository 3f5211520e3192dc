"""`from-config` on the configuration each hand-written model describes gives that model's
values back (tests/fixtures/configs/<model>/: the files its header and [meta.provenance]
describe), and its output loads and runs as the issue's path says."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.configs.to_model import Sources, assemble
from sim.model.load import load_model, parse_model
from sim.model.schema import Model
from sim.run.replications import run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "configs"

# model -> (httpd main file, the server.xml) under tests/fixtures/configs/<model>/
ROUND_TRIPS = {
    "apache24-event-tomcat10": ("httpd.conf", "server.xml"),
    "apache24-prefork-modjk-tomcat10": ("httpd.conf", "server.xml"),
    "apache24-worker-debian-tomcat10": ("apache2.conf", "server.xml"),
}
# What no configuration file holds: the workload and the hardware.
NOT_CONFIGURATION = {"cores", "speed", "demand", "connection_demand", "io_wait", "jvm", "events"}


def from_config(name: str) -> tuple[Model, object]:
    main, server = ROUND_TRIPS[name]
    directory = FIXTURES / name
    assembled = assemble(Sources(httpd=directory / main, tomcat=[(None, directory / server)]))
    model = parse_model(assembled.draft.nested(), source=name)
    return model, assembled


def differences(hand: Model, ours: Model) -> tuple[list[str], int]:
    """The configuration values that differ (as httpd and Tomcat would run them), and how
    many were compared.  Values given as "none = the default" compare by the default's value:
    ServerLimit and the pool size through httpd's own reading (`Proxy.processes`)."""
    found: list[str] = []
    compared = 0
    assert hand.proxy is not None and ours.proxy is not None

    def compare(path: str, a, b) -> None:
        nonlocal compared
        compared += 1
        if a != b:
            found.append(f"{path}: by hand {a!r}, from the files {b!r}")

    for field in type(hand.proxy).model_fields:
        if field in NOT_CONFIGURATION | {"backend_pool", "server_limit"}:
            continue
        compare(f"proxy.{field}", getattr(hand.proxy, field), getattr(ours.proxy, field))
    compare("proxy.processes", hand.proxy.processes, ours.proxy.processes)
    per_child = hand.proxy.processes.threads_per_child if hand.proxy.processes else None
    for field in type(hand.proxy.backend_pool).model_fields:
        a, b = getattr(hand.proxy.backend_pool, field), getattr(ours.proxy.backend_pool, field)
        if field == "max":  # none = the MPM's threads per child
            a, b = a or per_child, b or per_child
        compare(f"proxy.backend_pool.{field}", a, b)
    compare("balancer", hand.balancer, ours.balancer)
    assert len(hand.backends) == len(ours.backends)
    for index, (a_group, b_group) in enumerate(zip(hand.backends, ours.backends)):
        for field in type(a_group).model_fields:
            if field not in NOT_CONFIGURATION:
                compare(
                    f"backends.{index}.{field}", getattr(a_group, field), getattr(b_group, field)
                )
    return found, compared


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_from_config_reproduces_the_hand_written_model(name):
    hand = load_model(ROOT / "models" / f"{name}.toml")
    ours, _ = from_config(name)
    found, compared = differences(hand, ours)
    assert compared > 30
    assert found == []


def test_every_models_apache24_file_has_its_configuration():
    models = {p.stem for p in (ROOT / "models").glob("apache24-*.toml")}
    assert models == set(ROUND_TRIPS)


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_every_value_has_its_provenance(name):
    _, assembled = from_config(name)
    draft = assembled.draft
    written = [p for p in draft.values if not p.startswith("meta.")]
    assert written and all(draft.provenance.get(p) for p in written)
    for path in written:
        source = draft.provenance[path]
        # a file and line, a documented default with its reference, or a marked placeholder
        assert (
            ":" in source.split(" ", 1)[0]
            or "default" in source
            or "unset" in source
            or source.startswith(("placeholder:", "mod_jk", "--mpm", "httpd"))
        ), f"{path}: {source}"


def test_a_changed_directive_is_read_from_its_line(tmp_path):
    """The round trip is no echo of defaults: a value written in a file is that value,
    with that file and line as its provenance."""
    directory = FIXTURES / "apache24-event-tomcat10"
    text = (directory / "httpd.conf").read_text()
    changed = tmp_path / "httpd.conf"
    changed.write_text(
        text + "<IfModule mpm_event_module>\n    MaxRequestWorkers 200\n    ThreadsPerChild 50\n"
        "</IfModule>\nKeepAliveTimeout 2\nProxyTimeout 30\n"
    )
    assembled = assemble(Sources(httpd=changed, tomcat=[(None, directory / "server.xml")]))
    values, provenance = assembled.draft.values, assembled.draft.provenance
    lines = changed.read_text().splitlines()
    assert values["proxy.workers"] == 200
    assert provenance["proxy.workers"].startswith(
        f"{changed}:{lines.index('    MaxRequestWorkers 200') + 1}:"
    )
    assert values["proxy.threads_per_child"] == 50
    assert values["proxy.backend_pool.max"] == 50  # mod_proxy's max follows ThreadsPerChild
    assert values["proxy.keep_alive_timeout_s"] == 2
    assert values["proxy.backend_pool.timeout_s"] == 30


def test_the_output_runs_with_the_clients_and_work_given_at_run_time(tmp_path):
    _, assembled = from_config("apache24-event-tomcat10")
    path = tmp_path / "model.toml"
    path.write_text(assembled.text)
    overrides = [
        "clients.kind=ab",
        "clients.concurrency=100",
        "backends.0.io_wait=0.15",
        "clients.requests=400",
    ]
    model = load_model(path, overrides)
    cold = run(model, replications=1).summary["response.mean"].mean
    warm_model = load_model(path, [*overrides, "proxy.start_servers=none"])
    warm = run(warm_model, replications=1).summary["response.mean"].mean
    # 100 concurrent requests, each holding a Tomcat thread (200 of them) for 0.15 s and no CPU:
    # with every child started nothing queues, so a response takes the application's 0.15 s;
    # from StartServers 3 (75 threads) the first requests wait for children to be forked
    assert warm == pytest.approx(0.15, rel=0.01)
    assert cold > warm


# Seed 000: RHEL 5's httpd 2.2.3 (prefork compiled in) with -D PROXY_AJP or -D MOD_JK, Tomcat
# 5.5.20's server.xml.  (Seed 001's Apache and Jetty values are fitted per cell, seed 002's
# Tomcat 6 is standalone BIO, which the model takes behind a proxy only, seed 004 is JBoss:
# none has a configuration that alone gives its model.)
SEEDS = {"seed000-confluence-mod_jk": "MOD_JK", "seed000-confluence-mod_proxy_ajp": "PROXY_AJP"}
# Values the hand-written seed models leave at the schema's default where RHEL 5's files say
# otherwise: KeepAlive Off is written there as the clients' keep_alive = false (the same
# behaviour: no request reuses a connection), and the listen and accept queues are unbounded.
SEED_UNWRITTEN = [
    "proxy.listen_backlog: by hand None, from the files 511",
    "proxy.keep_alive: by hand True, from the files False",
    "proxy.keep_alive_timeout_s: by hand 5.0, from the files 15.0",
    "backends.0.accept_queue: by hand None, from the files 100",
]


def seed_from_config(name: str) -> Model:
    httpd = FIXTURES / "seed000-rhel5-httpd22"
    sources = Sources(
        httpd=httpd / "conf" / "httpd.conf",
        server_root=httpd,
        httpd_version="2.2.3",
        defines={SEEDS[name]: ""},
        tomcat=[(None, FIXTURES / "seed000-tomcat55" / "server.xml")],
        tomcat_version=(5, 5),
    )
    return parse_model(assemble(sources).draft.nested(), source=name)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_from_config_reproduces_the_values_a_seed_model_writes(name):
    hand = load_model(ROOT / "models" / f"{name}.toml")
    ours = seed_from_config(name)
    found, compared = differences(hand, ours)
    assert compared > 30
    written = {
        *(f"proxy.{f}" for f in hand.proxy.model_fields_set),
        *(f"proxy.backend_pool.{f}" for f in hand.proxy.backend_pool.model_fields_set),
        *(f"backends.0.{f}" for f in hand.backends[0].model_fields_set),
    }
    assert {"proxy.workers", "proxy.start_servers", "backends.0.threads"} <= written
    assert [d for d in found if d.split(":")[0] in written] == []
    assert found == SEED_UNWRITTEN


def test_the_cli_writes_the_model_and_names_what_it_leaves_out(tmp_path):
    """`tiersim from-config` on Debian's worker configuration: the file, with the
    not-modelled directives in it and on stderr; `--clients closed` for the planner's path."""
    from click.testing import CliRunner

    from sim.cli import main

    directory = FIXTURES / "apache24-worker-debian-tomcat10"
    out = tmp_path / "model.toml"
    args = [
        "from-config",
        "--httpd",
        directory / "apache2.conf",
        "--tomcat",
        directory / "server.xml",
    ]
    result = CliRunner().invoke(main, [str(a) for a in [*args, "--clients", "closed", "-o", out]])
    assert result.exit_code == 0, result.output
    assert "not modelled:" in result.stderr and "RequestReadTimeout" in result.stderr
    text = out.read_text()
    assert "# Not modelled" in text and "RequestReadTimeout" in text.split("# Not modelled", 1)[1]
    model = load_model(out, ["clients.users=8", "clients.think.mean=0.25"])
    assert model.clients.kind == "closed" and model.proxy is not None and model.proxy.workers == 150


WORKLOAD = [  # the hand models' own illustrative workload and hosts, given to ours by --set
    "clients.users=300",
    'clients.think={dist="exponential", mean=1.0}',
    "clients.keep_alive=true",
    "proxy.cores=2",
    'proxy.demand={dist="exponential", mean=0.0005}',
    "backends.0.cores=4",
    'backends.0.demand={dist="exponential", mean=0.020}',
]


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_the_model_from_the_files_predicts_what_the_hand_written_one_does(tmp_path, name):
    """Given the same workload and hosts, the model from the configuration files gives the
    hand-written model's figures to the last digit (same seeds)."""
    main, server = ROUND_TRIPS[name]
    directory = FIXTURES / name
    sources = Sources(httpd=directory / main, tomcat=[(None, directory / server)], clients="closed")
    path = tmp_path / "model.toml"
    path.write_text(assemble(sources).text)
    short = ["run.duration_s=20", "run.replications=1", "run.seed=7"]
    hand = run(load_model(ROOT / "models" / f"{name}.toml", short), replications=1).summary
    ours = run(load_model(path, [*short, *WORKLOAD]), replications=1).summary
    assert set(hand) == set(ours)
    assert {k: v.mean for k, v in hand.items()} == {k: v.mean for k, v in ours.items()}
    assert hand["throughput"].mean > 100
