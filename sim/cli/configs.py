"""`tiersim from-config` and `tiersim export lqn`: a model from the stack's own configuration
files, and a model's product-form part as an LQN."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sim.cli.common import err, fail, refuse_placeholders, writable
from sim.exit_codes import ExitCode
from sim.files import not_there


def _named_files(values: tuple[str, ...], option: str) -> list[tuple[str | None, Path]]:
    """`FILE` or `NAME=FILE` (NAME: a member's worker name, host or host:port)."""
    out: list[tuple[str | None, Path]] = []
    for value in values:
        name, sep, rest = value.partition("=")
        if sep and not Path(value).exists():
            out.append((name.strip(), Path(rest.strip())))
        else:
            out.append((None, Path(value)))
    for _, given in out:
        if not given.is_file():
            fail(f"{option} {given}: {not_there(given)}; give the path of the file", ExitCode.USAGE)
    return out


def _defines(values: tuple[str, ...]) -> dict[str, str]:
    """httpd's `-D NAME` (a parameter for <IfDefine>) or `-D NAME=VALUE` (a ${NAME})."""
    found: dict[str, str] = {}
    for value in values:
        name, _, text = value.partition("=")
        found[name.strip()] = text
    return found


@click.command("from-config")
@click.option(
    "--httpd",
    "httpd",
    type=click.Path(dir_okay=False),
    help="httpd's main file (httpd.conf, apache2.conf)",
)
@click.option(
    "--define",
    "-D",
    "defines",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="httpd -D NAME, or a ${NAME}'s value",
)
@click.option(
    "--server-root",
    type=click.Path(file_okay=False),
    help="httpd -d: where relative Include paths start",
)
@click.option(
    "--httpd-version",
    default="2.4.62",
    show_default=True,
    help="the httpd release (<IfVersion>, defaults)",
)
@click.option(
    "--mpm",
    type=click.Choice(["prefork", "worker", "event"]),
    help="the MPM compiled into httpd (none loaded with LoadModule)",
)
@click.option(
    "--workers-properties",
    type=click.Path(dir_okay=False),
    help="mod_jk's workers.properties (default: JkWorkersFile's)",
)
@click.option(
    "--tomcat",
    "tomcat",
    multiple=True,
    metavar="[NAME=]FILE",
    help="Tomcat's server.xml (NAME: the member it is for)",
)
@click.option(
    "--tomcat-version",
    default="10.1",
    show_default=True,
    help="the Tomcat release (protocol eras, defaults)",
)
@click.option(
    "--jetty",
    "jetty",
    multiple=True,
    metavar="[NAME=]FILE",
    help="Jetty's jetty.xml (NAME: the member it is for)",
)
@click.option(
    "--clients",
    type=click.Choice(["ab", "closed"]),
    default="ab",
    show_default=True,
    help="the placeholder load: ab -c/-n, or closed users with a think time (tiersim plan's)",
)
@click.option(
    "--kubernetes",
    "kubernetes",
    multiple=True,
    metavar="FILE",
    help="the backends' Deployment and HorizontalPodAutoscaler manifests (YAML)",
)
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="the model file to write"
)
def from_config_command(
    httpd,
    defines,
    server_root,
    httpd_version,
    mpm,
    workers_properties,
    tomcat,
    tomcat_version,
    jetty,
    clients,
    kubernetes,
    output,
) -> None:
    """A model file from the stack's configuration files, every value with its provenance."""
    from sim.configs.errors import ConfigError
    from sim.configs.to_model import Sources, assemble

    try:
        major, minor = (int(p) for p in tomcat_version.split(".")[:2])
    except ValueError:
        fail(f"--tomcat-version {tomcat_version!r}: give MAJOR.MINOR, e.g. 10.1", ExitCode.USAGE)
    if httpd is not None and not Path(httpd).is_file():
        fail(
            f"--httpd {httpd}: {not_there(httpd)}; give httpd's main configuration file",
            ExitCode.USAGE,
        )
    if workers_properties is not None and not Path(workers_properties).is_file():
        fail(
            f"--workers-properties {workers_properties}: {not_there(workers_properties)}",
            ExitCode.USAGE,
        )
    writable(output, "-o")  # a missing folder said before the files are read
    sources = Sources(
        httpd=Path(httpd) if httpd else None,
        server_root=Path(server_root) if server_root else None,
        defines=_defines(defines),
        httpd_version=httpd_version,
        mpm=mpm,
        workers_properties=Path(workers_properties) if workers_properties else None,
        tomcat=_named_files(tomcat, "--tomcat"),
        jetty=_named_files(jetty, "--jetty"),
        tomcat_version=(major, minor),
        clients=clients,
        kubernetes=[path for _, path in _named_files(kubernetes, "--kubernetes")],
    )
    try:
        assembled = assemble(sources)
    except ConfigError as exc:
        fail(str(exc), ExitCode.MODEL)
    try:
        Path(output).write_text(assembled.text)
    except OSError as exc:
        fail(f"-o {output}: cannot write ({exc.strerror or exc}); write elsewhere", ExitCode.USAGE)
    draft = assembled.draft
    for line in draft.not_modelled:
        err.print(f"not modelled: {line}", markup=False, highlight=False)
    for line in draft.notes:
        err.print(f"note: {line}", markup=False, highlight=False)
    err.print(
        f"wrote {output}: {len(draft.provenance)} values with their provenance, "
        f"{len(draft.not_modelled)} directives not modelled, placeholders to fill: "
        + ", ".join(draft.placeholders),
        markup=False,
        highlight=False,
    )


@click.group("export")
def export_group() -> None:
    """Write a model in another tool's format."""


@export_group.command("lqn")
@click.argument("model_file", type=click.Path(dir_okay=False))
@click.option(
    "--set", "overrides", multiple=True, metavar="PATH=VALUE", help="override a parameter"
)
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="the .lqnx file to write"
)
def export_lqn_command(model_file, overrides, output) -> None:
    """The model's product-form part as an LQN (LQNS / LINE XML), naming what LQN cannot say."""
    from sim.configs.lqn import LqnError, export_lqn
    from sim.model.load import ModelError, load_model
    from sim.model.plan import compile_plan

    try:
        model = load_model(model_file, overrides)
    except ModelError as exc:
        fail(str(exc), ExitCode.MODEL)
    refuse_placeholders(model_file, overrides)
    writable(output, "-o")
    try:
        exported = export_lqn(model, compile_plan(model), name=Path(model_file).stem)
    except LqnError as exc:
        fail(f"{model_file}: {exc}", ExitCode.MODEL)
    try:
        Path(output).write_text(exported.xml)
    except OSError as exc:
        fail(f"-o {output}: cannot write ({exc.strerror or exc}); write elsewhere", ExitCode.USAGE)
    for line in exported.unsaid:
        err.print(f"LQN cannot say: {line}", markup=False, highlight=False)
    err.print(f"wrote {output}", markup=False, highlight=False)
    sys.exit(0)


COMMANDS = [from_config_command, export_group]
