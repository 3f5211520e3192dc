"""A study loads the same model file and the same overrides hundreds of times, and each is
parsed once in a process: what is remembered is the text, so a file written anew is read anew,
and a table an override gives is a fresh copy each time, whatever later overrides set in it."""

from __future__ import annotations

from pathlib import Path

from sim.model.load import load_model

MODEL = """\
[clients]
kind = "closed"
users = {users}
think = 1.0

[[backends]]
name = "server"
threads = 4
cores = 1
demand = {{ dist = "exponential", mean = 0.02 }}

[run]
duration_s = 100
"""


def test_a_model_file_written_anew_is_read_anew_even_at_the_same_size(tmp_path: Path):
    path = tmp_path / "model.toml"
    path.write_text(MODEL.format(users=11))
    assert load_model(path).clients.users == 11
    path.write_text(MODEL.format(users=12))  # the same length, within the same clock tick
    assert load_model(path).clients.users == 12
    assert load_model(path).clients.users == 12


def test_a_table_given_by_an_override_is_fresh_for_each_model(tmp_path: Path):
    path = tmp_path / "model.toml"
    path.write_text(MODEL.format(users=5))
    table = 'backends.0.io_wait={dist="uniform", low=0.01, high=0.03}'
    moved = load_model(path, [table, "backends.0.io_wait.low=0.02"])
    again = load_model(path, [table])
    assert moved.backends[0].io_wait.low == 0.02
    assert again.backends[0].io_wait.low == 0.01
