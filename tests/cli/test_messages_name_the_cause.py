"""Messages that named the wrong cause, each now one line with the right one: a UTF-16 file
without a byte-order mark called binary, `--encoding utf-16` refused as not UTF-8, an httpd.conf
or workers.properties saved as UTF-16 read as broken syntax, a symbolic link to nothing or a
loop of links called a missing file, an output folder that does not exist found only after the
work, and an option that silently did nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli import main

pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]
MODJK = ROOT / "tests" / "fixtures" / "configs" / "apache24-prefork-modjk-tomcat10"
JTL = "timeStamp,elapsed,label,responseCode,success,allThreads\n" + "".join(
    f"{1_700_000_000_000 + 250 * i},{40 + i % 7},home,200,true,2\n" for i in range(60)
)


def run(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    # a refusal is an exit, never an exception inside the command (an internal error)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.output.strip()


def one_line(message: str) -> str:
    assert "\n" not in message, message
    return message


def test_a_jtl_in_utf16_is_named_and_read_with_its_encoding(tmp_path):
    plain = tmp_path / "plain.jtl"
    plain.write_text(JTL)
    assert run("import", "jtl", plain, "-o", tmp_path / "plain.csv")[0] == 0
    bare = tmp_path / "bare.jtl"  # UTF-16 without a byte-order mark: a NUL beside each letter
    bare.write_bytes(JTL.encode("utf-16-le"))
    code, message = run("import", "jtl", bare, "-o", tmp_path / "bare.csv")
    assert code == 3 and "UTF-16LE text" in one_line(message) and "binary" not in message
    assert "--encoding utf-16le" in message
    code, message = run(
        "import", "jtl", bare, "-o", tmp_path / "bare.csv", "--encoding", "utf-16le"
    )
    assert code == 0, message
    marked = tmp_path / "marked.jtl"
    marked.write_bytes(JTL.encode("utf-16"))  # with its byte-order mark
    code, message = run(
        "import", "jtl", marked, "-o", tmp_path / "marked.csv", "--encoding", "utf-16"
    )
    assert code == 0, message
    expected = pd.read_csv(tmp_path / "plain.csv").drop(columns="run")
    for name in ("bare", "marked"):
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / f"{name}.csv").drop(columns="run"), expected
        )


def test_a_model_in_utf16_without_a_mark_is_not_called_binary(tmp_path):
    model = tmp_path / "m.toml"
    model.write_bytes((ROOT / "models" / "demo.toml").read_text().encode("utf-16-le"))
    code, message = run("validate", model)
    assert code == 3 and "UTF-16LE text" in one_line(message) and "binary" not in message
    assert "save it as UTF-8" in message


@pytest.mark.parametrize("name", ["httpd.conf", "workers.properties"])
def test_a_configuration_file_in_utf16_is_named_as_such(tmp_path, name):
    folder = tmp_path / "conf"
    shutil.copytree(MODJK, folder)
    path = folder / name
    path.write_bytes(path.read_text().encode("utf-16"))
    args = ["from-config", "--httpd", folder / "httpd.conf", "--tomcat", folder / "server.xml"]
    code, message = run(*args, "-o", tmp_path / "m.toml")
    assert code == 3 and f"{path}" in one_line(message)
    assert "UTF-16 text" in message and "iconv -f UTF-16 -t UTF-8" in message


def test_links_to_nothing_and_loops_of_links_are_said(tmp_path):
    dangling = tmp_path / "users2.jtl"
    dangling.symlink_to(tmp_path / "moved" / "users2.jtl")
    code, message = run("import", "jtl", dangling, "-o", tmp_path / "t.csv")
    assert code == 3 and "a symbolic link to" in one_line(message) and "does not exist" in message

    folder = tmp_path / "conf"
    shutil.copytree(MODJK, folder)
    (folder / "a.conf").symlink_to(folder / "b.conf")
    (folder / "b.conf").symlink_to(folder / "a.conf")
    conf = folder / "httpd.conf"
    conf.write_text(conf.read_text() + f"Include {folder / 'a.conf'}\n")
    args = ["from-config", "--httpd", conf, "--tomcat", folder / "server.xml"]
    code, message = run(*args, "-o", tmp_path / "m.toml")
    assert code == 3 and "a loop of symbolic links" in one_line(message)
    assert f"{conf}:" in message  # the Include's file and line

    code, message = run("from-config", "--httpd", dangling, "-o", tmp_path / "m.toml")
    assert code == 2 and "a symbolic link to" in one_line(message)


def test_an_output_folder_that_does_not_exist_is_said_before_the_work(tmp_path):
    args = ["from-config", "--httpd", MODJK / "httpd.conf", "--tomcat", MODJK / "server.xml"]
    code, message = run(*args, "-o", tmp_path / "no" / "m.toml")
    assert code == 2 and f"the folder {tmp_path / 'no'} does not exist" in one_line(message)
    code, message = run(
        "export", "lqn", ROOT / "models" / "demo.toml", "-o", tmp_path / "no" / "x.lqnx"
    )
    assert code == 2 and "does not exist" in one_line(message)


def test_readme_step_1_without_its_folder_names_the_folder_and_the_fix(tmp_path, monkeypatch):
    """The README's step 1 typed without its `mkdir -p my-test`: it said "cannot write (None)"
    after reading every file; now one line names the folder and how to make it, before the
    JTLs are read."""
    monkeypatch.chdir(tmp_path)
    planning = ROOT / "notebooks" / "data" / "planning"
    for name in ("users2.jtl", "users16.jtl", "users8.jtl"):
        shutil.copy(planning / name, tmp_path / name)
    jtls = ["users2.jtl", "users16.jtl", "users8.jtl"]
    code, message = run("import", "jtl", *jtls, "-o", "my-test/measured.csv")
    assert code == 2
    assert one_line(message) == (
        "error: -o my-test/measured.csv: the folder my-test does not exist; "
        "create it (mkdir -p my-test) or write elsewhere"
    )
    # the database evidence import writes its table the same way
    code, message = run(
        "import", "pg-stat", *jtls[:2], "--table", "users2.jtl", "-o", "my-test/database.csv"
    )
    assert code == 2 and "the folder my-test does not exist" in one_line(message)


def test_estimate_shape_csv_does_nothing_silently_no_more(tmp_path):
    jtl = tmp_path / "run.jtl"
    jtl.write_text(JTL)
    table = tmp_path / "t.csv"
    assert run("import", "jtl", jtl, "-o", table)[0] == 0
    code, message = run("estimate", table, "--shape-csv", tmp_path / "demand.csv")
    assert code == 2 and "give --shape FILE" in one_line(message)
    code, message = run("estimate", table, "--shape", jtl, "--shape-csv", tmp_path / "no" / "d.csv")
    assert code == 2 and "does not exist" in one_line(message)


def test_a_class_pattern_that_matched_nothing_is_said(tmp_path):
    jtl = tmp_path / "run.jtl"
    jtl.write_text(JTL)
    result = CliRunner().invoke(
        main, ["import", "jtl", str(jtl), "-o", str(tmp_path / "t.csv"), "--class", "^sea=search"]
    )
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert "--class '^sea=search' matched no sample's label" in warning
    assert "class 'search' has no row" in warning
    matched = CliRunner().invoke(
        main, ["import", "jtl", str(jtl), "-o", str(tmp_path / "u.csv"), "--class", "^ho=home"]
    )
    assert matched.exit_code == 0 and "warning" not in matched.output
