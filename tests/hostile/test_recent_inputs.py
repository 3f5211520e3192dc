"""Bad and hostile input against the newest surfaces: the keepers of finished work (`--cache`),
closed clients whose ramp is an access log (`clients.ramp = {access_log = ...}`), the Kubernetes
Deployment and HPA manifests of `from-config`, JMeter test plans (`plan --jmx`) and a saved
calibration's draws.  Each is refused in one line naming the file, the field (or line) and the
fix, within the memory and time of `bounded`; or, where the input is merely odd (a torn cache
line, a cache of another model), the answer is the one a clean run gives.  Before, several were
internal errors (an overflowing CPU quantity, a metric whose `resource` is a list, a response
time of hundreds of digits), hangs (a megabyte of YAML: 40 s; YAML nested 100 000 deep: 250 s
and a RecursionError), exhausted memory (a ramp of nanosecond bins, a log line of another
century) or silently wrong (negative response times read as they were; `--cache` at a file that
was no cache, appended to)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import one_server_file
from tests.hostile.bounded import ROOT, TIMEOUT_S, _limit_memory

FIXTURES = ROOT / "tests" / "fixtures" / "configs"

# The child prints what the reader raised, as `ErrorType: message`, or `ok` and what it read.
CHILD = """
import sys
from pathlib import Path
kind, path = sys.argv[1], Path(sys.argv[2])
try:
    if kind == "cache":
        from sim.studies.kept_replications import KeptReplications
        print(f"ok {len(KeptReplications(path).known)} kept")
    elif kind == "model":
        from sim.model.load import load_model
        model = load_model(path)
        print(f"ok {len(model.clients.ramp or [])} steps")
    elif kind == "kubernetes":
        from sim.configs.to_model import Sources, assemble
        server = Path(sys.argv[3])
        assemble(Sources(tomcat=[(None, server)], kubernetes=[path]))
        print("ok")
    elif kind == "jmx":
        from sim.measurements.formats import jmeter_plan
        print(f"ok {jmeter_plan.read(path)!r}"[:200])
    else:
        raise SystemExit(f"unknown reader {kind}")
except Exception as exc:  # a model's problems are listed a line each, under its file's
    print(f"{type(exc).__name__}: {exc}".replace("\\n", " | "))
"""


def bounded(kind: str, path: Path, *more: str) -> str:
    """The one line the reader `kind` prints on `path`, in a child limited to `MEMORY_BYTES`,
    within `TIMEOUT_S`."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path), *more],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 3,  # past the bar the test fails below; this ends a hang
        preexec_fn=_limit_memory,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        cwd=ROOT,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"the reader died (exit {done.returncode}): {done.stderr[-500:]}"
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout[-2000:]
    assert seconds < TIMEOUT_S, f"{seconds:.1f} s: {lines[0]}"
    return lines[0]


# ---- the keepers of finished work: `tiersim run --cache FILE`


def server_model(folder: Path, name: str = "server.toml", mean: str = "0.1") -> Path:
    path = folder / name
    text = one_server_file(duration_s=200, warmup_s=20, replications=3)
    path.write_text(text.replace("mean = 0.3", f"mean = {mean}"))
    return path


def run(model: Path, *options: str):
    command = ["run", str(model), "--set", 'run.engine="reference"', "--json", *options]
    return CliRunner().invoke(main, command)


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("model", one_server_file(duration_s=1, warmup_s=0, replications=1)),
        ("k6-lines", '{"type": "Point", "metric": "http_req_duration"}\n'),
        ("arrays", "[1, 2]\n"),
        ("csv", "timeStamp,elapsed,label\n1700000000000,5,home\n"),
        ("binary", bytes(range(256)) * 4),
        ("latin-1", b"caf\xe9\n"),
    ],
)
def test_a_file_that_is_no_cache_is_refused_and_left_as_it_was(tmp_path, name, content):
    """A model, a load test's JSON lines, a CSV given as --cache by mistake were appended to
    (the run's records written after the user's lines); now refused before any work, the file
    untouched."""
    cache = tmp_path / f"{name}.jsonl"
    data = content.encode() if isinstance(content, str) else content
    cache.write_bytes(data)
    result = run(server_model(tmp_path), "--cache", str(cache))
    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert line.startswith(f"error: --cache {cache}:"), line
    assert "not a run cache" in line and "give another --cache, or --no-cache" in line, line
    assert cache.read_bytes() == data


@pytest.mark.parametrize(
    ("cache", "words"),
    [
        ("/dev/null", "not a regular file"),
        ("/proc/tiersim-cache.jsonl", "cannot write"),  # writable folder by its mode, to root too
        ("{tmp}/no-such-folder/c.jsonl", "does not exist"),
        ("{tmp}", "is a directory"),
    ],
)
def test_a_cache_that_cannot_be_kept_is_refused_before_any_work(tmp_path, cache, words):
    """/proc/... passed every check of the folder's mode and failed at the first kept
    replication, as an internal error (exit 1)."""
    cache = cache.format(tmp=tmp_path)
    result = run(server_model(tmp_path), "--cache", cache)
    assert result.exit_code == 2, result.output
    assert words in result.output and cache in result.output, result.output
    assert "internal error" not in result.output


def test_cache_and_no_cache_together_are_refused(tmp_path):
    result = run(server_model(tmp_path), "--cache", str(tmp_path / "c.jsonl"), "--no-cache")
    assert result.exit_code == 2
    assert "--cache and --no-cache: give one" in one_error_line(result.stderr)


def test_a_huge_line_is_refused_or_skipped_within_the_memory_bound(tmp_path):
    """A line of 200 MB, in a file within the cache's 256 MiB, is read no further than its
    start (before, the whole file was read and split: over 500 MB, a MemoryError)."""
    garbage = tmp_path / "garbage.jsonl"
    with garbage.open("wb") as handle:
        handle.write(b"x" * 200_000_000 + b"\n")
    line = bounded("cache", garbage)
    assert line.startswith(f"CacheError: --cache {garbage}:1: not a run cache"), line
    record = tmp_path / "record.jsonl"
    with record.open("wb") as handle:  # a record's start, far too long to be one
        handle.write(b'{"fingerprint": "' + b"a" * 200_000_000 + b'"}\n')
    assert bounded("cache", record) == "ok 0 kept"


def test_torn_wrong_form_and_another_models_lines_are_run_again(tmp_path):
    """A cache holding a torn line, lines of the wrong form and another model's replications:
    the run replays none of them, and its figures are those of a run without a cache."""
    other = run(server_model(tmp_path, "other.toml", mean="0.15"), "--cache", str(tmp_path / "x"))
    assert other.exit_code == 0, other.output
    foreign = (tmp_path / "x").read_text().splitlines()
    assert len(foreign) == 3
    cache = tmp_path / "c.jsonl"
    cache.write_text(
        "\n".join(
            [
                *foreign,
                json.dumps({"fingerprint": 5, "record": []}),
                json.dumps({"fingerprint": "abc", "record": {"replication": "zero"}}),
                "",
                foreign[0][:100],
            ]
        )
    )
    model = server_model(tmp_path)
    kept = run(model, "--cache", str(cache))
    clean = run(model, "--no-cache")
    assert kept.exit_code == 0 and clean.exit_code == 0, kept.output
    assert "resumed" not in kept.stderr
    figures = json.loads(kept.stdout)
    assert figures["metrics"] == json.loads(clean.stdout)["metrics"]
    rerun = run(model, "--cache", str(cache))
    assert "resumed: 3 of 3 replications" in rerun.stderr


def test_two_runs_sharing_one_cache_both_finish_and_a_third_replays_them(tmp_path):
    model, cache = server_model(tmp_path), tmp_path / "shared.jsonl"
    command = [sys.executable, "-m", "sim.cli", "run", str(model), "--cache", str(cache)]
    command += ["--set", 'run.engine="reference"', "--json"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    processes = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=60) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert json.loads(outputs[0][0])["metrics"] == json.loads(outputs[1][0])["metrics"]
    lines = cache.read_text().splitlines()
    assert 3 <= len(lines) <= 6 and all(json.loads(line)["fingerprint"] for line in lines)
    rerun = run(model, "--cache", str(cache))
    assert "resumed: 3 of 3 replications" in rerun.stderr
    assert json.loads(rerun.stdout)["metrics"] == json.loads(outputs[0][0])["metrics"]


def jtl(folder: Path) -> Path:
    path = folder / "run.jtl"
    rows = (f"{1_700_000_000_000 + 50 * i},{5 + i % 40},home,true,OK" for i in range(400))
    path.write_text("timeStamp,elapsed,label,success,responseMessage\n" + "\n".join(rows) + "\n")
    return path


def test_an_import_cache_whose_samples_folder_is_a_file_is_refused_before_reading(tmp_path):
    """Before: the log was read, then its samples' frame could not be written ("File
    exists"), naming a path inside the file."""
    (tmp_path / "c.samples").write_text("mine\n")
    cache = tmp_path / "c.jsonl"
    command = ["import", "jtl", str(jtl(tmp_path)), "-o", str(tmp_path / "t.csv")]
    result = CliRunner().invoke(main, [*command, "--cache", str(cache)])
    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert f"--cache {cache}: its samples are kept in the folder {tmp_path / 'c.samples'}" in line
    assert (tmp_path / "c.samples").read_text() == "mine\n"


def test_an_import_cache_that_is_no_cache_is_refused(tmp_path):
    log = jtl(tmp_path)
    command = ["import", "jtl", str(log), "-o", str(tmp_path / "t.csv"), "--cache", str(log)]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    assert f"--cache {log}:1: not an import cache" in one_error_line(result.stderr)


# ---- closed clients whose ramp is an access log


LOG_FORMAT = '%h %l %u %t "%r" %>s %b %D'


def log_line(second: int, response: str = "500000", year: int = 2026) -> str:
    minute, second = divmod(second, 60)
    return (
        f'10.0.0.1 - - [02/Mar/{year}:10:{minute:02d}:{second:02d} +0000] "GET /a HTTP/1.1" '
        f"200 12 {response}"
    )


def ramp_model(folder: Path, log: str | bytes, fields: str = ", bin_s = 10") -> Path:
    (folder / "access.log").write_bytes(log.encode() if isinstance(log, str) else log)
    ramp = f"{{access_log = \"access.log\", log_format = '{LOG_FORMAT}'{fields}}}"
    path = folder / "model.toml"
    path.write_text(
        "\n".join(
            [
                "[clients]",
                'kind = "closed"',
                "think = 2.0",
                f"ramp = {ramp}",
                "[[backends]]",
                'name = "web"',
                "count = 1",
                "demand = 0.001",
                "[run]",
                "duration_s = 50",
            ]
        )
    )
    return path


def loaded(model: Path) -> str:
    """What `bounded("model", ...)` prints, read in this process."""
    from sim.model.load import ModelError, load_model

    try:
        return f"ok {len(load_model(model).clients.ramp or [])} steps"
    except ModelError as exc:
        return f"ModelError: {exc}".replace("\n", " | ")


MINUTE = "\n".join(log_line(s) for s in range(0, 60, 2)) + "\n"


@pytest.mark.parametrize(
    ("log", "fields", "words"),
    [
        ("", ", bin_s = 10", "access.log:1: the file is empty"),
        (log_line(0) + "\n", ", bin_s = 10", "less than one bin of 10 s"),
        (MINUTE, ", bin_s = 0", "bin_s = 0"),
        (MINUTE, ", bin_s = -10", "bin_s = -10"),
        (MINUTE, ", bin_s = nan", "bin_s = nan"),
        (MINUTE, ", scale = 0", "scale = 0"),
        (MINUTE, ", scale = -1", "scale = -1"),
        (MINUTE, ", bogus = 1", "bogus is not a field"),
        (MINUTE.replace(" 500000\n", " -\n"), ", bin_s = 10", "access.log:1:"),
        (MINUTE.encode().replace(b"/a", b"/\xe9"), ", bin_s = 10", "not utf-8"),
        # before: a MemoryError (58 billion bins of a nanosecond)
        (MINUTE, ", bin_s = 1e-9", "bins of 1e-09 s (at most 1,048,576); give a larger bin_s"),
        # before: a MemoryError (a century of one-second bins)
        (log_line(0) + "\n" + log_line(0, year=2126) + "\n", ", bin_s = 1", "another day or year"),
        # before: read as it was, a cycle shorter than the think time
        (MINUTE.replace(" 500000\n", " -5\n"), ", bin_s = 10", "access.log:1: a negative response"),
        # before: an OverflowError, an internal error
        (MINUTE.replace(" 500000\n", " 1" + "0" * 400 + "\n"), "", "access.log:1: a response time"),
    ],
    ids=[
        "empty",
        "one-line",
        "bin-0",
        "bin-negative",
        "bin-nan",
        "scale-0",
        "scale-negative",
        "unknown-field",
        "no-response-time",
        "latin-1",
        "nanosecond-bins",
        "a-century",
        "negative-response",
        "huge-response",
    ],
)
def test_a_bad_access_log_ramp_is_refused_in_one_line(tmp_path, request, log, fields, words):
    model = ramp_model(tmp_path, log, fields)
    # the cases that exhausted memory are read under the bound; the rest here, faster
    bound = request.node.callspec.id in ("nanosecond-bins", "a-century", "huge-response")
    line = bounded("model", model) if bound else loaded(model)
    assert line.startswith("ModelError: "), line
    assert "clients.ramp" in line and words in line, line


def test_a_log_ramp_in_any_line_order_and_gzipped_is_the_same_ramp(tmp_path):
    """Time stamps going backwards (a log written at each response's end) and a gzip log give
    the ramp the log in order gives."""
    import gzip

    in_order = bounded("model", ramp_model(tmp_path, MINUTE))
    backwards = "\n".join(reversed(MINUTE.splitlines())) + "\n"
    assert bounded("model", ramp_model(tmp_path, backwards)) == in_order == "ok 5 steps"
    (tmp_path / "access.log.gz").write_bytes(gzip.compress(MINUTE.encode()))
    model = ramp_model(tmp_path, MINUTE)
    model.write_text(model.read_text().replace('"access.log"', '"access.log.gz"'))
    assert bounded("model", model) == in_order


def test_a_missing_log_and_a_device_are_named(tmp_path):
    model = ramp_model(tmp_path, MINUTE)
    text = model.read_text()
    for name, words in (("nope.log", "nope.log: no such file"), ("/dev/zero", "not a regular")):
        model.write_text(text.replace('"access.log"', f'"{name}"'))
        line = bounded("model", model)
        assert "clients.ramp" in line and words in line, line


# ---- the Kubernetes Deployment and HorizontalPodAutoscaler of `from-config`


WALKTHROUGH = (FIXTURES / "kubernetes-hpa" / "php-apache.yaml").read_text()
SERVER = FIXTURES / "debian-tomcat10" / "server.xml"


def manifest(folder: Path, text: str | bytes, old: str = "", new: str = "") -> Path:
    path = folder / "manifest.yaml"
    if isinstance(text, str):
        assert old in text
        text = text.replace(old, new).encode()
    path.write_bytes(text)
    return path


@pytest.mark.parametrize(
    ("text", "old", "new", "words"),
    [
        # before: 250 s, then a RecursionError
        ("[" * 100_000 + "]" * 100_000, "", "", ":1: "),
        ("a: " + "{b: " * 20_000 + "1" + "}" * 20_000, "", "", "nested at most 64 levels"),
        # before: 40 s for a megabyte of YAML
        ("kind: Deployment\nspec: [" + "1, " * 300_000 + "1]\n", "", "", "TIERSIM_MAX_MANIFEST"),
        ("a: &a [1]\nb: [*a, *a]\n", "", "", "without YAML aliases"),
        ("!!python/object/apply:os.system ['true']\n", "", "", "could not determine a constructor"),
        (WALKTHROUGH.encode().replace(b"php-apache", b"ph\xe9"), "", "", "not UTF-8"),
        # before: an OverflowError, an internal error
        (WALKTHROUGH, "cpu: 500m", "cpu: 1" + "0" * 400, "limits.cpu: a quantity"),
        (WALKTHROUGH, "cpu: 500m", "cpu: 0.0001m", "at least 1m"),
        (WALKTHROUGH, "cpu: 500m", "cpu: -1", "limits.cpu: a quantity, not -1"),
        # before: an AttributeError, an internal error
        (
            WALKTHROUGH,
            "resource:\n      name: cpu",
            "resource: [1]\n    x:\n      name: cpu",
            "spec.metrics.0",
        ),
        (WALKTHROUGH, "type: Resource", "type: ContainerResource", "not ContainerResource"),
        (WALKTHROUGH, "spec:\n  selector", "spec:\n  replicas: -1\n  selector", "spec.replicas"),
        (WALKTHROUGH, "spec:\n  selector", "spec:\n  replicas: 2.5\n  selector", "spec.replicas"),
        (WALKTHROUGH, "minReplicas: 1", "minReplicas: 20", "min_replicas = 20 is above"),
        (WALKTHROUGH, "averageUtilization: 50", "averageUtilization: 0", "averageUtilization"),
        (WALKTHROUGH, "selectPolicy: Min", "selectPolicy: [Min]", "selectPolicy"),
        (WALKTHROUGH, "kind: HorizontalPodAutoscaler", "kind: 5", "document 3"),
        (WALKTHROUGH + "\n---\n" + WALKTHROUGH, "", "", "one Deployment (found 2)"),
    ],
    ids=[
        "nested-flow",
        "nested-maps",
        "a-megabyte",
        "aliases",
        "python-tag",
        "latin-1",
        "cpu-of-400-digits",
        "cpu-under-1m",
        "cpu-negative",
        "resource-a-list",
        "unknown-metric",
        "replicas-negative",
        "replicas-fraction",
        "min-above-max",
        "utilization-0",
        "select-policy-a-list",
        "kind-a-number",
        "two-deployments",
    ],
)
def test_a_bad_manifest_is_refused_in_one_line(tmp_path, text, old, new, words):
    path = manifest(tmp_path, text, old, new)
    line = bounded("kubernetes", path, str(SERVER))
    assert line.startswith("ConfigError: "), line
    assert words in line, line


def test_a_kubectl_list_is_read_as_its_items(tmp_path):
    """`kubectl get deployment,hpa -o yaml` writes one `kind: List`: its items are the
    manifests (before: "one Deployment (found 0)")."""
    import yaml

    items = [d for d in yaml.safe_load_all(WALKTHROUGH) if d]
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    assert bounded("kubernetes", manifest(tmp_path, listed), str(SERVER)) == "ok"


# ---- JMeter test plans (`plan --jmx`)


PLAN = (ROOT / "tests" / "fixtures" / "measurements" / "jmeter" / "plan.jmx").read_text()
HEAD = '<?xml version="1.0"?>\n<jmeterTestPlan>'


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", ":1: not well-formed XML"),
        (HEAD + "</jmeterTestPlan>", "no <hashTree>"),
        (
            HEAD + "<hashTree><TestPlan/><hashTree/></hashTree></jmeterTestPlan>",
            "no enabled thread",
        ),
        ('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xx">]><a/>', "a DOCTYPE"),
        (HEAD + "<hashTree>&lol;</hashTree></jmeterTestPlan>", "undefined entity"),
        ("<html><body/></html>", "the root element is <html>"),
        # before: kept each (fifteen million ran out of memory)
        (HEAD + "<a/>" * 600_000 + "</jmeterTestPlan>", "more than 500,000 elements"),
        # before: quadratic (each character reference added to one growing string): past 100 s
        (
            HEAD + "<hashTree>" + "&#65;" * 3_000_000 + "</hashTree></jmeterTestPlan>",
            "thread group",
        ),
        # before: a ValueError and an OverflowError, internal errors; a think time of 3e19 years
        (PLAN.replace(">250<", ">nan<", 1), ":64: timer 'think': ConstantTimer.delay = 'nan'"),
        (PLAN.replace(">250<", ">inf<", 1), "ConstantTimer.delay = 'inf'"),
        (PLAN.replace(">250<", ">1e30<", 1), "(a day)"),
        (PLAN.replace(">250<", ">-5<", 1), "ConstantTimer.delay = '-5'"),
    ],
    ids=[
        "empty",
        "no-hash-tree",
        "no-thread-group",
        "entity-declared",
        "entity-undefined",
        "not-jmeter",
        "past-the-element-bound",
        "millions-of-character-references",
        "delay-nan",
        "delay-inf",
        "delay-of-eons",
        "delay-negative",
    ],
)
def test_a_bad_test_plan_is_refused_in_one_line(tmp_path, text, words):
    path = tmp_path / "plan.jmx"
    path.write_text(text)
    line = bounded("jmx", path)
    assert line.startswith(f"MeasurementError: {path}"), line
    assert words in line, line


@pytest.mark.parametrize("path", ["/dev/zero", "{tmp}"])
def test_a_test_plan_that_is_no_file_is_refused_by_the_reader(tmp_path, path):
    """The command checks the file before reading; the reader does so too (before: /dev/zero
    read until memory ran out)."""
    path = path.format(tmp=tmp_path)
    line = bounded("jmx", Path(path))
    assert line == (
        f"MeasurementError: {path}: not a regular file (a folder, pipe or device); give the "
        ".jmx JMeter saved"
    )


# ---- a saved calibration, hand-edited, and its draws


def calibration(tmp_path: Path, edit) -> Path:
    from tests.studies.test_prediction_intervals import calibration_document

    document = calibration_document()
    edit(document)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    return path


def posterior(document: dict) -> dict:
    return document["uncertainty"]["posterior"]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: posterior(d).update(mean=[float("nan")]), "posterior.mean must be finite"),
        (lambda d: posterior(d).update(cov=[[float("inf")]]), "posterior.cov must be finite"),
        (lambda d: d["parameters"][0].update(low=0.2, high=0.05), "needs low < high"),
        (lambda d: d["parameters"][0].update(value=float("nan")), "value = nan must be a finite"),
        (lambda d: d["uncertainty"].update(model_error={"sd": -1}), "model_error.sd = -1"),
        (lambda d: posterior(d).update(conditioned={}), "conditioned.draws must be finite"),
        (
            lambda d: posterior(d).update(conditioned={"draws": [[float("nan")]]}),
            "conditioned.draws must be finite",
        ),
        (lambda d: posterior(d).update(conditioned={"draws": [[3.0]]}), "within [1, 2]"),
        (
            lambda d: posterior(d).update(
                conditioned={"draws": [[1.5], [1.6]], "sequence": [3, 1]}
            ),
            "conditioned.sequence must be increasing",
        ),
        (lambda d: posterior(d).update(seed=-1), "posterior.seed = -1"),
        (lambda d: posterior(d).update(cov=[[-0.01]]), "posterior.cov is not a covariance"),
        (lambda d: posterior(d).update(mean=[1e6]), "posterior.mean must be points on the unit"),
        (
            lambda d: d["parameters"][0].update(low=0.0, scale="log"),
            "a log scale needs low > 0",
        ),
    ],
    ids=[
        "mean-nan",
        "cov-inf",
        "low-above-high",
        "value-nan",
        "model-error-sd-negative",
        "conditioned-without-draws",
        "conditioned-nan",
        "conditioned-off-the-unit-scale",
        "sequence-backwards",
        "seed-negative",
        "cov-not-positive",
        "mean-off-the-unit-scale",
        "log-scale-from-zero",
    ],
)
def test_a_hand_edited_calibration_is_refused_naming_its_field(tmp_path, edit, words):
    from sim.studies.calibration.saved import CalibrationFileError, load_calibration

    path = calibration(tmp_path, edit)
    with pytest.raises(CalibrationFileError) as caught:
        load_calibration(path)
    message = str(caught.value)
    assert message.startswith(f"--calibration {path}: ") and words in message, message
    assert "\n" not in message


def test_a_calibration_that_is_a_device_is_refused_not_read_forever():
    from sim.studies.calibration.saved import CalibrationFileError, load_calibration

    with pytest.raises(CalibrationFileError) as caught:
        load_calibration("/dev/zero")
    message = str(caught.value)
    assert message.startswith("--calibration /dev/zero: ") and "regular file" in message, message


@pytest.mark.parametrize("draws", ["0", "-1", "1", "5000", "many"])
def test_draws_outside_their_range_are_refused_by_the_option(tmp_path, draws):
    model = server_model(tmp_path)
    path = calibration(tmp_path, lambda d: None)
    result = CliRunner().invoke(
        main, ["run", str(model), "--calibration", str(path), "--draws", draws]
    )
    assert result.exit_code == 2, result.output
    assert "--draws" in result.output and "Traceback" not in result.output
