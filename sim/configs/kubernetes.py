"""A Kubernetes Deployment and its HorizontalPodAutoscaler (YAML manifests) as the backend
group's size, cores and `[backends.autoscale]`.

Read: the Deployment's `spec.replicas` (the group's size at the start), its containers'
`resources` (CPU limits as the cores the CFS quota gives; the CPU requests the HPA's
utilisation is measured against), the readiness probe's timing and
`terminationGracePeriodSeconds`; the HPA's `minReplicas`, `maxReplicas`, its metric and target
and its `behavior`.  Every value's provenance is `file: Kind/name field.path`.  YAML is loaded
with the safe loader only, from a bounded file, without aliases (a few lines of aliases can
expand to billions of nodes).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sim.configs.draft import Draft
from sim.configs.errors import ConfigError
from sim.files import FileProblem, Limit, read_text

MAX_MANIFEST_BYTES = 2**20  # manifests are a few kilobytes; a megabyte is not one
MAX_NESTING = 64  # a Deployment's deepest field is some fifteen levels down
# `kubectl get -o yaml` of a Deployment is some 500 YAML events (a mapping's start, a key, ...)
MAX_MANIFEST_NODES = Limit("YAML events of manifests", 50_000, "TIERSIM_MAX_MANIFEST_NODES")
# the safe loader only (no Python objects built from tags), libyaml's when PyYAML was built
# with it: the pure-Python one takes some 40 s for a megabyte
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|Ki|Mi|Gi)?$")
SCALE = {None: 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


@dataclass(frozen=True)
class Document:
    """One manifest: its file, kind, name and body."""

    file: Path
    kind: str
    name: str
    body: dict[str, Any]

    def where(self, field: str) -> str:
        return f"{self.file}: {self.kind}/{self.name} {field}"


def load_documents(path: Path) -> list[Document]:
    """The file's documents (`---`-separated), each a mapping with `kind` and `metadata.name`."""
    try:
        text = read_text(path, "Kubernetes manifest", max_bytes=MAX_MANIFEST_BYTES)
    except FileProblem as exc:
        raise ConfigError(path, str(exc).split(": ", 1)[-1], "give the manifest file") from None
    try:
        depth = 0
        nodes = MAX_MANIFEST_NODES.value
        for count, event in enumerate(yaml.parse(text, Loader=LOADER)):
            if count > nodes:  # the loader's time grows with them: a megabyte of [1, 1, ...]
                mark = event.start_mark
                raise ConfigError(
                    f"{path}:{mark.line + 1 if mark is not None else 0}",
                    "a manifest of a Deployment and its HorizontalPodAutoscaler",
                    MAX_MANIFEST_NODES.refusal("its YAML events"),
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:  # the loader recurses (and slows) with each level
                    mark = event.start_mark
                    raise ConfigError(
                        f"{path}:{mark.line + 1 if mark is not None else 0}",
                        f"a manifest nested at most {MAX_NESTING} levels deep",
                        "give the Deployment and HorizontalPodAutoscaler as kubectl writes them",
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                line = mark.line + 1 if mark is not None else 0
                raise ConfigError(
                    f"{path}:{line}",
                    "a manifest without YAML aliases (*name)",
                    "write the aliased value out (as kubectl get -o yaml prints it)",
                )
        documents = [d for d in yaml.load_all(text, Loader=LOADER) if d is not None]
        # `kubectl get deployment,hpa -o yaml` writes one `kind: List` of the objects
        documents = [
            item
            for document in documents
            for item in (
                document["items"]
                if isinstance(document, dict)
                and document.get("kind") == "List"
                and isinstance(document.get("items"), list)
                else [document]
            )
        ]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise ConfigError(
            f"{path}{line}", f"YAML ({problem})", "fix the manifest's syntax"
        ) from None
    found: list[Document] = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            raise ConfigError(
                path,
                f"document {index + 1}: a Kubernetes object (a mapping with kind:)",
                "give the Deployment and HorizontalPodAutoscaler manifests",
            )
        metadata = document.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        found.append(Document(path, document["kind"], str(name or "?"), document))
    return found


def read_kubernetes(paths: list[Path], draft: Draft) -> None:
    """The Deployment (and its HPA, if any) into the draft's one backend group."""
    documents = [d for path in paths for d in load_documents(path)]
    deployments = [d for d in documents if d.kind in ("Deployment", "StatefulSet")]
    autoscalers = [d for d in documents if d.kind == "HorizontalPodAutoscaler"]
    where = ", ".join(str(p) for p in paths)
    if len(deployments) != 1:
        raise ConfigError(
            where,
            f"one Deployment (found {len(deployments)})",
            "give the manifests of the backend group's one Deployment",
        )
    groups = {key.split(".")[1] for key in draft.values if key.startswith("backends.")}
    if len(groups) != 1:
        raise ConfigError(
            where,
            f"one backend group for the Deployment (the server files give {len(groups)})",
            "give the server file of the Deployment's pods only",
        )
    deployment = deployments[0]
    request = _read_deployment(deployment, draft)
    if len(autoscalers) > 1:
        raise ConfigError(
            where, f"one HorizontalPodAutoscaler (found {len(autoscalers)})", "give one"
        )
    if autoscalers:
        _read_autoscaler(autoscalers[0], deployment, request, draft)
        _read_node_life(deployment, draft)


def _get(document: Document, field: str, default: Any = None, required: bool = False) -> Any:
    node: Any = document.body
    for key in field.split("."):
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            if required:
                raise ConfigError(document.where(field), "a value", f"set {field}")
            return default
    return node


def quantity(document: Document, field: str, value: Any) -> float:
    """A Kubernetes quantity (`500m`, `2`, `1.5`, `4Gi`) as a number."""
    match = QUANTITY.match(str(value).strip())
    if isinstance(value, bool) or match is None:
        raise ConfigError(
            document.where(field),
            f"a quantity, not {value!r}",
            "write it as Kubernetes does: 500m, 2, 1.5",
        )
    number = float(match.group(1)) * SCALE[match.group(2)]
    if not math.isfinite(number):  # hundreds of digits
        raise ConfigError(
            document.where(field), f"a quantity, not {str(value)[:40]}...", "is it the right value?"
        )
    return number


def _whole(document: Document, field: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(
            document.where(field), f"a whole number >= {low}, not {value!r}", "fix it"
        )
    return value


def _read_deployment(deployment: Document, draft: Draft) -> float | None:
    """The group's size and cores; returns the pod's CPU request in cores, if set."""
    replicas = _whole(deployment, "spec.replicas", _get(deployment, "spec.replicas", 1), 1)
    draft.put("backends.0.count", replicas, deployment.where(f"spec.replicas {replicas}"))
    containers = _get(deployment, "spec.template.spec.containers", required=True)
    if not isinstance(containers, list) or not containers:
        raise ConfigError(
            deployment.where("spec.template.spec.containers"), "a list of containers", "fix it"
        )
    base = "spec.template.spec.containers"
    limits = [
        _cpu(deployment, f"{base}.{i}.resources.limits.cpu", c, "limits")
        for i, c in enumerate(containers)
    ]
    requests = [
        _cpu(deployment, f"{base}.{i}.resources.requests.cpu", c, "requests")
        for i, c in enumerate(containers)
    ]
    limit = sum(v for v in limits if v is not None) if all(v is not None for v in limits) else None
    request = (
        sum(v for v in requests if v is not None) if any(v is not None for v in requests) else None
    )
    if limit is not None:
        cores = max(1, math.ceil(limit))
        draft.put(
            "backends.0.cores", cores, deployment.where(f"resources.limits.cpu {limit:g} cores")
        )
        if cores != limit:
            draft.put(
                "backends.0.speed",
                limit / cores,
                deployment.where(f"resources.limits.cpu {limit:g} cores over {cores}"),
            )
            draft.notes.append(
                f"{deployment.where('resources.limits.cpu')}: a CFS quota of {limit:g} cores is "
                f"modelled as {cores} core(s) at speed {limit / cores:g}; the throttling within each "
                "100 ms cpu.cfs_period_us is not"
            )
    elif request is not None:
        cores = max(1, math.ceil(request))
        draft.put(
            "backends.0.cores", cores, deployment.where(f"resources.requests.cpu {request:g} cores")
        )
        draft.notes.append(
            f"{deployment.where('resources.limits.cpu')}: no CPU limit; the pod may use the node's "
            f"idle CPU, which the model does not: {cores} core(s) from its request"
        )
    held = limit is not None or request is not None  # the manifest holds the cores after all
    if held and "backends.0.cores" in draft.placeholders:
        draft.placeholders.remove("backends.0.cores")
    return request


def _read_node_life(deployment: Document, draft: Draft) -> None:
    """What the Deployment says of a new node's readiness and an old one's draining."""
    base = "spec.template.spec.containers"
    containers = _get(deployment, base, [])
    first = containers[0] if isinstance(containers, list) and containers else {}
    probe = first.get("readinessProbe") if isinstance(first, dict) else None
    if isinstance(probe, dict):
        for key, path in (
            ("initialDelaySeconds", "readiness_delay_s"),
            ("periodSeconds", "readiness_period_s"),
        ):
            if key in probe:
                value = _whole(
                    deployment,
                    f"{base}.0.readinessProbe.{key}",
                    probe[key],
                    0 if key.startswith("initial") else 1,
                )
                draft.put(
                    f"backends.0.autoscale.{path}",
                    float(value),
                    deployment.where(f"readinessProbe.{key} {value}"),
                )
    grace = _get(deployment, "spec.template.spec.terminationGracePeriodSeconds")
    if grace is not None:
        value = _whole(deployment, "spec.template.spec.terminationGracePeriodSeconds", grace, 0)
        draft.put(
            "backends.0.autoscale.drain_s",
            float(value),
            deployment.where(f"terminationGracePeriodSeconds {value}"),
        )


def _cpu(deployment: Document, field: str, container: Any, kind: str) -> float | None:
    resources = container.get("resources") if isinstance(container, dict) else None
    values = resources.get(kind) if isinstance(resources, dict) else None
    value = values.get("cpu") if isinstance(values, dict) else None
    if value is None:
        return None
    cores = quantity(deployment, field, value)
    if 0 < cores < 1e-3:  # the API server refuses a precision finer than 1m
        raise ConfigError(
            deployment.where(field),
            f"a CPU quantity of at least 1m (one thousandth of a core), not {value!r}",
            "write it as Kubernetes does: 500m, 2, 1.5",
        )
    return cores


METRIC_FIX = (
    "use a Resource cpu Utilization, a Pods AverageValue or an External Value/AverageValue metric"
)


def _read_autoscaler(
    hpa: Document, deployment: Document, request: float | None, draft: Draft
) -> None:
    version = str(_get(hpa, "apiVersion", ""))
    if version not in ("autoscaling/v2", "autoscaling/v2beta2"):
        raise ConfigError(
            hpa.where("apiVersion"),
            f"autoscaling/v2, not {version!r}",
            "kubectl convert, or write the HPA as autoscaling/v2 (spec.metrics, spec.behavior)",
        )
    target_name = _get(hpa, "spec.scaleTargetRef.name", required=True)
    if target_name != deployment.name:
        raise ConfigError(
            hpa.where("spec.scaleTargetRef.name"),
            f"the Deployment given ({deployment.name}), not {target_name!r}",
            "give the manifests of the Deployment the HPA scales",
        )
    put = draft.put
    lowest = _whole(hpa, "spec.minReplicas", _get(hpa, "spec.minReplicas", 1), 1)
    highest = _whole(hpa, "spec.maxReplicas", _get(hpa, "spec.maxReplicas", required=True), 1)
    put("backends.0.autoscale.min_replicas", lowest, hpa.where(f"spec.minReplicas {lowest}"))
    put("backends.0.autoscale.max_replicas", highest, hpa.where(f"spec.maxReplicas {highest}"))
    metrics = _get(hpa, "spec.metrics")
    if not metrics:  # autoscaling/v2's default: 80 % of the CPU request
        metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]
    if not isinstance(metrics, list):
        raise ConfigError(hpa.where("spec.metrics"), "a list of metrics", METRIC_FIX)
    if len(metrics) > 1:
        draft.missing(
            hpa.where("spec.metrics"),
            f"{len(metrics) - 1} further metric(s)",
            "the HPA scales to the largest proposal of its metrics; only the first is modelled",
        )
    kind, target = _metric(hpa, metrics[0])
    put("backends.0.autoscale.metric", kind, hpa.where("spec.metrics.0"))
    put("backends.0.autoscale.target", target, hpa.where(f"spec.metrics.0 target {target:g}"))
    if kind in ("external", "external_average"):
        _external_source(hpa, metrics[0], draft)
    if kind == "cpu_utilization":
        if request is None:
            raise ConfigError(
                deployment.where("resources.requests.cpu"),
                "a CPU request (the HPA's utilisation is a share of it)",
                "set resources.requests.cpu on the Deployment's containers",
            )
        put(
            "backends.0.autoscale.cpu_request_cores",
            request,
            deployment.where(f"resources.requests.cpu {request:g} cores"),
        )
    for direction, name in (("scaleUp", "scale_up"), ("scaleDown", "scale_down")):
        rules = _get(hpa, f"spec.behavior.{direction}")
        if rules is not None:
            _read_rules(
                hpa, f"spec.behavior.{direction}", rules, f"backends.0.autoscale.{name}", draft
            )


def _metric(hpa: Document, metric: Any) -> tuple[str, float]:
    field = "spec.metrics.0"
    if not isinstance(metric, dict):
        raise ConfigError(hpa.where(field), "a metric", METRIC_FIX)
    kind = metric.get("type")
    source = metric.get(
        {"Resource": "resource", "Pods": "pods", "External": "external"}.get(str(kind), ""), {}
    )
    if not isinstance(source, dict):
        source = {}
    target = source.get("target", {})
    if not isinstance(target, dict):
        target = {}
    if kind == "Resource" and source.get("name") == "cpu" and target.get("type") == "Utilization":
        value = target.get("averageUtilization")
        return "cpu_utilization", float(
            _whole(hpa, f"{field}.resource.target.averageUtilization", value, 1)
        )
    if kind == "Pods" and target.get("type") == "AverageValue":
        return "pods", quantity(
            hpa, f"{field}.pods.target.averageValue", target.get("averageValue")
        )
    if kind == "External" and target.get("type") == "Value":
        return "external", quantity(hpa, f"{field}.external.target.value", target.get("value"))
    if kind == "External" and target.get("type") == "AverageValue":
        return "external_average", quantity(
            hpa, f"{field}.external.target.averageValue", target.get("averageValue")
        )
    described = f"{kind} {source.get('name', '') if isinstance(source, dict) else ''} {target.get('type', '')}"
    raise ConfigError(
        hpa.where(field), f"a metric the model reads, not {' '.join(described.split())}", METRIC_FIX
    )


# what an External metric's name says it measures (`external.metric.name`); a name that says
# neither stays a placeholder the user fills
_P95_NAMES = ("p95", "95th", "percentile_95", "latency_95")
_RATE_NAMES = ("requests_per_s", "request_rate", "requests_rate", "rps", "requestcount")


def _external_source(hpa: Document, metric: dict, draft: Draft) -> None:
    """`backends.0.autoscale.external_source` from the External metric's name."""
    external = metric.get("external", {})
    found = external.get("metric", {}) if isinstance(external, dict) else {}
    name = str(found.get("name", "")) if isinstance(found, dict) else ""
    flat = name.lower().replace("-", "_").replace(".", "_")
    where = hpa.where(f"spec.metrics.0.external.metric.name {name}")
    if any(token in flat for token in _P95_NAMES):
        draft.put("backends.0.autoscale.external_source", "response_p95_s", where)
    elif any(token in flat for token in _RATE_NAMES):
        draft.put("backends.0.autoscale.external_source", "requests_per_s", where)
    else:
        draft.placeholder(
            "backends.0.autoscale.external_source",
            "response_p95_s",
            f"what the HPA's external metric {name or '(unnamed)'} measures: "
            "response_p95_s or requests_per_s",
        )


def _read_rules(hpa: Document, field: str, rules: Any, path: str, draft: Draft) -> None:
    if not isinstance(rules, dict):
        raise ConfigError(hpa.where(field), "HPAScalingRules (a mapping)", "fix it")
    window = rules.get("stabilizationWindowSeconds")
    if window is not None:
        value = _whole(hpa, f"{field}.stabilizationWindowSeconds", window, 0)
        draft.put(
            f"{path}.stabilization_window_s",
            float(value),
            hpa.where(f"{field}.stabilizationWindowSeconds {value}"),
        )
    elif path.endswith("scale_up"):  # a table written needs its window; the API's default
        draft.put(
            f"{path}.stabilization_window_s",
            0.0,
            "autoscaling/v2 default: scaleUp.stabilizationWindowSeconds 0",
        )
    else:
        draft.put(
            f"{path}.stabilization_window_s",
            300.0,
            "kube-controller-manager --horizontal-pod-autoscaler-downscale-stabilization 5m",
        )
    select = rules.get("selectPolicy", "Max")
    if select not in ("Max", "Min", "Disabled"):
        raise ConfigError(
            hpa.where(f"{field}.selectPolicy"), f"Max, Min or Disabled, not {select!r}", "fix it"
        )
    draft.put(f"{path}.select_policy", select.lower(), hpa.where(f"{field}.selectPolicy {select}"))
    if "tolerance" in rules:
        draft.put(
            f"{path}.tolerance",
            quantity(hpa, f"{field}.tolerance", rules["tolerance"]),
            hpa.where(f"{field}.tolerance"),
        )
    policies = rules.get("policies")
    if policies is None:
        defaults = (
            [
                {"type": "Percent", "value": 100, "periodSeconds": 15},
                {"type": "Pods", "value": 4, "periodSeconds": 15},
            ]
            if path.endswith("scale_up")
            else [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        )
        policies = defaults
    if not isinstance(policies, list) or not policies:
        raise ConfigError(
            hpa.where(f"{field}.policies"),
            "at least one policy",
            "give one, or selectPolicy: Disabled",
        )
    written = []
    for index, policy in enumerate(policies):
        where = f"{field}.policies.{index}"
        if not isinstance(policy, dict) or policy.get("type") not in ("Pods", "Percent"):
            raise ConfigError(
                hpa.where(f"{where}.type"), "Pods or Percent", "fix the policy's type"
            )
        written.append(
            {
                "type": policy["type"].lower(),
                "value": _whole(hpa, f"{where}.value", policy.get("value"), 1),
                "period_s": float(
                    _whole(hpa, f"{where}.periodSeconds", policy.get("periodSeconds"), 1)
                ),
            }
        )
    draft.put(f"{path}.policies", written, hpa.where(f"{field}.policies"))
