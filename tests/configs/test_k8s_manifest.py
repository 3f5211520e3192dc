"""`tiersim from-config --kubernetes`: a Deployment and its HorizontalPodAutoscaler as the
backend group's size, cores and `[backends.autoscale]`, and one line for a bad manifest."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sim.configs.errors import ConfigError
from sim.configs.to_model import Sources, assemble
from sim.model.load import parse_model

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "configs"
SERVER = FIXTURES / "debian-tomcat10" / "server.xml"
WALKTHROUGH = FIXTURES / "kubernetes-hpa" / "php-apache.yaml"


def from_config(*manifests: Path):
    return assemble(Sources(tomcat=[(None, SERVER)], kubernetes=list(manifests)))


def test_the_walkthrough_manifest_round_trips_into_the_model_file():
    """The HPA walkthrough: replicas unset (1), CPU limit 500m (one core at speed 0.5),
    request 200m, 50 % of it as the target, min 1, max 10, the documentation's scale-down
    policies with selectPolicy Min; the written TOML reads back to the same table."""
    assembled = from_config(WALKTHROUGH)
    model = parse_model(tomllib.loads(assembled.text), source="written", check_only=True)
    group = model.backends[0]
    assert (group.count, group.cores, group.speed) == (1, 1, 0.5)
    table = group.autoscale
    assert table is not None
    assert (table.min_replicas, table.max_replicas) == (1, 10)
    assert (table.metric, table.target, table.cpu_request_cores) == ("cpu_utilization", 50, 0.2)
    assert table.scale_down.select_policy == "min"
    assert table.scale_down.stabilization_window_s == 300
    assert [(p.type, p.value, p.period_s) for p in table.scale_down.policies] == [
        ("pods", 4, 60.0),
        ("percent", 10, 60.0),
    ]
    assert table.scale_up.policies[1].value == 4  # untouched: the API's default
    assert (table.readiness_delay_s, table.readiness_period_s, table.drain_s) == (5, 10, 30)
    provenance = tomllib.loads(assembled.text)["meta"]["provenance"]
    assert provenance["backends.0.autoscale.max_replicas"].endswith(
        "HorizontalPodAutoscaler/php-apache spec.maxReplicas 10"
    )
    assert any("CFS quota" in note for note in assembled.draft.notes)
    assert "backends.0.cores" not in assembled.draft.placeholders  # the limit gives them


def test_the_walkthroughs_seven_replicas_from_the_table_it_writes():
    """The walkthrough's load drives one php-apache pod to 305 % of its 200m request, and
    `kubectl get hpa` then shows 7 replicas.  From the table from-config writes: t=0, one
    pod at 610m: 610 * 100 // 200 = 305 %, ratio 6.1, proposal ceil(6.1) = 7; the default
    scale-up allows max(1 + 4, ceil(1 * 2)) = 5.  t=15, the four new pods ready and the same
    610m spread over the 5, 122m each: 610 * 100 // 1000 = 61 %, ratio 1.22, proposal ceil(6.1) = 7; allowed from 5:
    max(9, 10): 7."""
    from sim.tiers.cluster.autoscale import PodSample

    written = tomllib.loads(from_config(WALKTHROUGH).text)
    table = parse_model(written, source="written", check_only=True).backends[0].autoscale
    assert table is not None
    autoscaler = table.autoscaler()
    assert autoscaler.decide(0.0, 1, [PodSample(0.61)]).desired == 5
    assert autoscaler.decide(15.0, 5, [PodSample(0.122)] * 5).desired == 7


def test_the_written_model_runs_on_the_reference_engine():
    """Loaded for a run (not only for from-config's check), the model keeps its autoscaler,
    which the reference engine runs and the compiled engine does not."""
    from sim.engines import choose
    from sim.model.plan import compile_plan

    model = parse_model(tomllib.loads(from_config(WALKTHROUGH).text), source="written")
    assert model.backends[0].autoscale is not None
    choice = choose(compile_plan(model))
    assert choice.engine == "reference" and "backends.autoscale" in choice.note


def test_a_deployment_alone_sets_the_size_and_cores(tmp_path):
    manifest = tmp_path / "d.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n"
        "  template:\n    spec:\n      containers:\n      - name: tomcat\n"
        "        resources: {limits: {cpu: '2'}, requests: {cpu: 1500m}}\n"
    )
    model = parse_model(tomllib.loads(from_config(manifest).text), source="written")
    assert (model.backends[0].count, model.backends[0].cores) == (3, 2)
    assert model.backends[0].autoscale is None


BAD = {
    "alias": ("a: &x {b: 1}\nc: *x\n", "aliases"),
    "syntax": ("kind: Deployment\n  bad: [\n", "YAML"),
    "not an object": ("- 1\n- 2\n", "a Kubernetes object"),
    "no deployment": ("kind: Service\nmetadata: {name: s}\n", "one Deployment (found 0)"),
    "quantity": (
        "kind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - resources: {limits: {cpu: lots}}\n",
        "resources.limits.cpu: a quantity, not 'lots'",
    ),
    "hpa v1": (
        "kind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - {name: t}\n---\napiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\n"
        "metadata: {name: h}\nspec: {maxReplicas: 3}\n",
        "HorizontalPodAutoscaler/h apiVersion: autoscaling/v2",
    ),
    "memory metric": (
        "kind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - {name: t}\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n"
        "metadata: {name: h}\nspec:\n  scaleTargetRef: {name: w}\n  maxReplicas: 3\n  metrics:\n"
        "  - type: Resource\n    resource: {name: memory, target: {type: Utilization, "
        "averageUtilization: 60}}\n",
        "a metric the model reads, not Resource memory Utilization",
    ),
    "cpu without request": (
        "kind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - {name: t}\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n"
        "metadata: {name: h}\nspec:\n  scaleTargetRef: {name: w}\n  maxReplicas: 3\n",
        "set resources.requests.cpu",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_manifest_gets_one_line_naming_the_file_the_field_and_the_fix(tmp_path, name):
    text, needle = BAD[name]
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(text)
    with pytest.raises(ConfigError) as bad:
        from_config(manifest)
    message = str(bad.value)
    assert "\n" not in message and str(manifest) in message
    assert needle in message


def test_a_huge_manifest_is_refused_before_it_is_parsed(tmp_path):
    manifest = tmp_path / "huge.yaml"
    manifest.write_text("# " + "x" * (2**20 + 10) + "\n")
    with pytest.raises(ConfigError, match="too large"):
        from_config(manifest)


@pytest.mark.parametrize(
    ("name", "target", "source", "placeholder"),
    [
        ("http_server_request_duration_p95_seconds", "Value", "response_p95_s", False),
        ("nginx_ingress_requests_per_s", "AverageValue", "requests_per_s", False),
        ("queue_depth", "Value", "response_p95_s", True),
    ],
)
def test_an_external_metric_says_what_it_measures_or_is_left_to_fill(
    tmp_path, name, target, source, placeholder
):
    """An External metric is read as the group's p95 or request rate when its name says so;
    a name that says neither leaves `external_source` a placeholder, which a run refuses
    until it is filled (`--set backends.0.autoscale.external_source=...`)."""
    text = WALKTHROUGH.read_text()
    resource = """  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 50
"""
    value = "value: 500m" if target == "Value" else "averageValue: 20"
    external = f"""  - type: External
    external:
      metric:
        name: {name}
      target:
        type: {target}
        {value}
"""
    assert resource in text
    manifest = tmp_path / "hpa.yaml"
    manifest.write_text(text.replace(resource, external))
    assembled = from_config(manifest)
    table = parse_model(tomllib.loads(assembled.text), source="w", check_only=True)
    autoscale = table.backends[0].autoscale
    assert autoscale is not None
    assert autoscale.metric == ("external" if target == "Value" else "external_average")
    assert autoscale.external_source == source
    assert ("backends.0.autoscale.external_source" in assembled.draft.placeholders) is placeholder
