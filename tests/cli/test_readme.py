"""The README's commands as a newcomer types them: every shell block, top to bottom, in one
folder holding a copy of the clone's shipped files, each command run by the shell with the
installed `tiersim` first on the PATH.

A line with a placeholder (`MODEL.toml`, `FILE...`, `-w N`) is a synopsis: its command and
each of its options must exist (`tiersim COMMAND --help` lists them).  Every other line is
typed as written, its optional `[...]` parts left out, and must exit 0.  The files the README
asks a reader to bring (their Apache and Tomcat files, their JMeter results) are the shipped
ones it names, copied in under the names it uses.

Commands of minutes (a calibration, a capacity search, a sweep) run only when
TIERSIM_README_ALL=1 (`make readme-test`); the default suite runs the rest (2.5 min at a load
average of 9 on two cores).  A command that needs a long one's output is long itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ALL = os.environ.get("TIERSIM_README_ALL") == "1"

# What the clone ships, copied into the reader's folder (commands name them from the root).
SHIPPED = ("models", "experiments", "tests/fixtures/measurements")
# What the README asks the reader to bring, and where it points for a copy.
BROUGHT = {
    "httpd.conf": "tests/fixtures/configs/apache24-event-tomcat10/httpd.conf",
    "server.xml": "tests/fixtures/configs/apache24-event-tomcat10/server.xml",
    "users2.jtl": "notebooks/data/planning/users2.jtl",
    "users16.jtl": "notebooks/data/planning/users16.jtl",
    "users8.jtl": "notebooks/data/planning/users8.jtl",
}
# The commands of a minute or more, by the start of the typed command, with their whole
# process's wall time on the project's 2-core machine at a load average of 5 to 13.
LONG = {
    "tiersim calibrate my-test": "a calibration, 60-115 s",
    "tiersim calibrate seed003": "a calibration, 105 s",
    "tiersim calibrate seed004": "a calibration, 5.6 min",
    "tiersim capacity": "a capacity search, 25-110 s",
    "tiersim run models/seed004-jboss323-maxdb.toml": "16 draws of a calibration, 35 s",
    "tiersim sweep": "a sweep of 9 points, 35 s",
    "tiersim report results/demo_users": "needs the sweep's results",
}
SHELL_FENCES = {"", "text", "sh", "bash", "shell", "console"}
STARTS = ("tiersim ", "make ", "mkdir ")
# A placeholder: a word in capitals standing for something the reader supplies.
PLACEHOLDER = re.compile(r"(?<![\w./-])(?:[A-Z][A-Z0-9_]*)(?=[.=\s\]|]|$)|\.\.\.")


@dataclass(frozen=True)
class Command:
    line: int  # in README.md
    written: str  # continuation lines joined, comments kept
    typed: str  # without its optional [...] parts and comments

    @property
    def synopsis(self) -> bool:
        return bool(PLACEHOLDER.search(self.typed)) or " | " in self.typed

    @property
    def long(self) -> str | None:
        return next((why for start, why in LONG.items() if self.typed.startswith(start)), None)

    def __str__(self) -> str:
        return f"README.md:{self.line}: {self.typed}"


def _without_optional(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"\[[^\[\]]*\]", "", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def _without_comment(text: str) -> str:
    # a ` #` outside quotes starts a comment, as in the shell
    quote = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text.rstrip()


def readme_commands(text: str) -> list[Command]:
    commands = []
    for fence in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if fence.group(1) not in SHELL_FENCES:
            continue
        first_line = text[: fence.start()].count("\n") + 2
        lines = fence.group(2).splitlines()
        if not any(line.startswith(STARTS) for line in lines):
            continue
        i = 0
        while i < len(lines):
            start = i
            joined = lines[i]
            # a line ending in a backslash continues; so does an indented one in a synopsis
            while i + 1 < len(lines) and (
                joined.rstrip().endswith("\\") or lines[i + 1].startswith(" ")
            ):
                i += 1
                joined = joined.rstrip().removesuffix("\\").rstrip() + " " + lines[i].strip()
            i += 1
            if joined.startswith(STARTS):
                typed = _without_comment(_without_optional(_without_comment(joined)))
                commands.append(Command(first_line + start, joined, typed))
    return commands


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))
TO_RUN = [c for c in COMMANDS if not c.synopsis and not c.typed.startswith("make ")]
SYNOPSES = [c for c in COMMANDS if c.synopsis and c.typed.startswith("tiersim ")]


def test_the_readme_has_commands_to_try():
    """The extraction finds the walk-throughs (a change of fence or layout that hid them would
    otherwise pass everything below)."""
    typed = [c.typed for c in TO_RUN]
    assert "tiersim schema" in typed
    assert any(t.startswith("tiersim import jtl users2.jtl") for t in typed)
    assert any(t.startswith("tiersim from-config --httpd httpd.conf") for t in typed)
    assert len(SYNOPSES) >= 4


def test_make_targets_named_by_the_readme_exist():
    """`make demo` and `make test` (not run here: each builds the environment) are targets,
    and `make demo` ends by saying how to use the environment it made."""
    for command in (c for c in COMMANDS if c.typed.startswith("make ")):
        target = command.typed.split()[1]
        dry = subprocess.run(
            ["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, check=False
        )
        assert dry.returncode == 0, f"{command}: {dry.stderr.strip()}"
        if target == "demo":
            assert ".venv/bin/activate" in dry.stdout


@pytest.mark.parametrize("command", SYNOPSES, ids=str)
def test_a_synopsis_names_options_that_exist(command: Command):
    written = _without_comment(command.written)
    words = written.replace("[", " ").replace("]", " ").replace("|", " ").split()
    name = words[1]
    args = [name, "--help"] if name != "export" else [name, words[2], "--help"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, f"{command}: {result.output}"
    options = {w.split("=")[0] for w in words if w.startswith("--")}
    missing = sorted(o for o in options if o not in result.output)
    assert not missing, f"{command}: `tiersim {name} --help` has no {', '.join(missing)}"


@pytest.fixture(scope="module")
def reader_folder(tmp_path_factory) -> Path:
    """A folder as the README's reader has it: the clone's shipped files and their own."""
    folder = tmp_path_factory.mktemp("reader")
    for name in SHIPPED:
        shutil.copytree(ROOT / name, folder / name)
    for name, source in BROUGHT.items():
        shutil.copy(ROOT / source, folder / name)
    return folder


@pytest.mark.parametrize("command", TO_RUN, ids=str)
def test_a_readme_command_runs_as_typed(command: Command, reader_folder: Path):
    if command.long and not ALL:
        pytest.skip(f"{command.long}: make readme-test runs it")
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["bash", "-c", command.typed],
        cwd=reader_folder,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}"
