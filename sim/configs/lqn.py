"""A model's product-form part as a layered queueing network (LQN XML, `.lqnx`: LQNS's and
LINE's format).

The compiled plan (`sim.model.plan`) gives the layers: the clients are a reference task (closed:
multiplicity = users, `think-time` = Z; open: an `open-arrival-rate` on the first server's
entry); the front (httpd) is a task of `proxy.workers` threads on a processor of
`proxy.cores`; each backend node a task of its request threads on its own processor,
called `share` times per request (the balancer's long-run split); a non-CPU wait (`io_wait`,
a connect delay) a call to an infinite-server task; the database a task on its processor
calling its disks.  Every station's demand is the plan's, per visit.  What LQN cannot say
(keep-alive holds, timeouts, retries, refusals, GC, session replication, sticky routing,
process management) is named in a comment at the top of the file and returned as `unsaid`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from sim.model.classes import session_requests
from sim.model.plan import Plan, analytic_share
from sim.model.schema import AbClients, ClosedClients, Model, OpenClients, SessionClients


class LqnError(ValueError):
    """A model with no LQN counterpart; the message says which part and why."""


@dataclass
class ExportedLqn:
    xml: str
    unsaid: list[str] = field(default_factory=list)


def export_lqn(model: Model, plan: Plan, name: str = "model") -> ExportedLqn:
    builder = _Builder(model, plan)
    root = builder.build(name)
    unsaid = unsaid_by_lqn(model, plan)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    comment = "\n".join(
        [
            "<!-- Written by tiersim export lqn from the model's compiled plan: its product-form part.",
            "     What LQN cannot say (left out of this file):",
            *(f"       - {_xml_comment(line)}" for line in unsaid),
            "-->",
        ]
    )
    return ExportedLqn(f'<?xml version="1.0" encoding="UTF-8"?>\n{comment}\n{body}\n', unsaid)


class _Builder:
    def __init__(self, model: Model, plan: Plan) -> None:
        self.model, self.plan = model, plan
        self.stations = {s.name: s for s in plan.stations}
        self.root = ET.Element("lqn-model")

    def build(self, name: str) -> ET.Element:
        clients = self.model.clients
        self.root.attrib.update(
            {
                "name": name,
                "description": self.model.meta.name,
                "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
                "xsi:noNamespaceSchemaLocation": "lqn.xsd",
            }
        )
        ET.SubElement(
            self.root,
            "solver-params",
            {"comment": name, "conv_val": "1e-06", "it_limit": "200", "underrelax_coeff": "0.5"},
        )
        if isinstance(clients, OpenClients):
            if clients.rate_per_s is None:
                raise LqnError(
                    "clients.schedule / interarrival: LQN's open arrivals are Poisson at one rate"
                )
            rate: float | None = clients.rate_per_s
        elif isinstance(clients, SessionClients):
            rate = clients.session_rate_per_s * session_requests(clients)
        else:
            rate = None
        first = self._front(rate) if self.model.proxy is not None else None
        nodes = self._nodes(rate if first is None else None)
        if first is not None:
            self._calls(first, nodes)
        if rate is None:
            self._reference(first, nodes)
        return self.root

    # ------------------------------------------------------------------ layers
    def _reference(self, first: ET.Element | None, nodes: list[tuple[str, float]]) -> None:
        clients = self.model.clients
        assert isinstance(clients, (ClosedClients, AbClients))
        population = self.plan.population
        host = self.stations.get("clients.cpu")
        processor = self._processor("clients", host.servers if host else None)
        task = ET.SubElement(
            processor,
            "task",
            {"name": "clients", "scheduling": "ref", "multiplicity": str(population)},
        )
        if self.plan.think_s > 0:
            task.set("think-time", _number(self.plan.think_s))
        activity = self._entry(task, "clients", host.demand_s if host else 0.0)
        connect = self.stations.get("clients.connect")
        if connect is not None:
            self._call(activity, self._delay("clients_connect", connect.demand_s), 1.0)
        if first is not None:
            self._call(activity, "proxy", 1.0)
        else:
            for entry, share in nodes:
                self._call(activity, entry, share)

    def _front(self, rate: float | None) -> ET.Element:
        proxy = self.model.proxy
        assert proxy is not None
        station = self.stations.get("proxy.cpu")
        processes = proxy.processes
        processor = self._processor("proxy_cpu", proxy.cores)
        task = self._task(processor, "proxy", None if processes is None else processes.workers)
        activity = self._entry(task, "proxy", station.demand_s if station else 0.0, rate)
        return activity

    def _nodes(self, rate: float | None) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for node in self.plan.nodes:
            share = analytic_share(self.plan, node)
            group = node.spec
            cpu = self.stations.get(f"{node.name}.cpu")
            processor = self._processor(f"{node.name}_cpu", group.cores)
            task = self._task(processor, node.name, group.request_threads)
            activity = self._entry(
                task,
                node.name,
                cpu.demand_s / share if cpu else 0.0,
                None if rate is None else rate * share,
            )
            io = self.stations.get(f"{node.name}.io_wait")
            if io is not None:
                self._call(activity, self._delay(f"{node.name}_io", io.demand_s / share), 1.0)
            if group.db_calls and self.model.database is not None:
                self._call(activity, self._database(), float(group.db_calls))
            out.append((node.name, share))
        return out

    def _database(self) -> str:
        if self.root.find("processor[@name='database_cpu']") is not None:
            return "database"
        database = self.model.database
        assert database is not None
        visits = sum(analytic_share(self.plan, n) * n.spec.db_calls for n in self.plan.nodes)
        cpu, disks = self.stations.get("database.cpu"), self.stations.get("database.disks")
        processor = self._processor("database_cpu", database.cores)
        task = self._task(processor, "database", database.connections)
        activity = self._entry(task, "database", cpu.demand_s / visits if cpu else 0.0)
        if disks is not None:
            disk_processor = self._processor("database_disks", database.disks, "fcfs")
            disk_task = self._task(disk_processor, "disks", None)
            self._entry(disk_task, "disks", disks.demand_s / visits)
            self._call(activity, "disks", 1.0)
        return "database"

    def _calls(self, first: ET.Element, nodes: list[tuple[str, float]]) -> None:
        for entry, share in nodes:
            self._call(first, entry, share)

    # ------------------------------------------------------------------ elements
    def _processor(self, name: str, servers: int | None, scheduling: str = "ps") -> ET.Element:
        attributes = {"name": name, "scheduling": "inf" if servers is None else scheduling}
        if servers is not None:
            attributes["multiplicity"] = str(servers)
            if scheduling == "ps":
                attributes["quantum"] = "0.001"  # LQNS requires one for ps; LINE reads it
        return ET.SubElement(self.root, "processor", attributes)

    def _task(self, processor: ET.Element, name: str, threads: int | None) -> ET.Element:
        attributes = {"name": name, "scheduling": "inf" if threads is None else "fcfs"}
        if threads is not None:
            attributes["multiplicity"] = str(threads)
        return ET.SubElement(processor, "task", attributes)

    def _entry(
        self, task: ET.Element, name: str, demand_s: float, rate: float | None = None
    ) -> ET.Element:
        entry = ET.SubElement(task, "entry", {"name": name, "type": "PH1PH2"})
        if rate is not None:
            entry.set("open-arrival-rate", _number(rate))
        phases = ET.SubElement(entry, "entry-phase-activities")
        return ET.SubElement(
            phases,
            "activity",
            {"name": f"{name}_work", "phase": "1", "host-demand-mean": _number(demand_s)},
        )

    def _delay(self, name: str, demand_s: float) -> str:
        processor = self._processor(name, None)
        task = self._task(processor, name, None)
        self._entry(task, name, demand_s)
        return name

    def _call(self, activity: ET.Element, entry: str, mean: float) -> None:
        ET.SubElement(activity, "synch-call", {"dest": entry, "calls-mean": _number(mean)})


def unsaid_by_lqn(model: Model, plan: Plan) -> list[str]:
    """The plan's approximations (what the product-form network leaves out, LQN's too), and
    the mechanisms an LQN has no element for, where the model has them."""
    out = [str(a) for a in plan.approximations]
    if plan.classes:
        out.append("request classes ([[classes]]): one class with the mix-weighted demands")
    proxy = model.proxy
    if proxy is not None:
        pool = proxy.backend_pool
        if pool.timeout_s is not None or pool.acquire_timeout_s is not None:
            out.append("proxy.backend_pool timeouts (timeout, acquire): no LQN call is abandoned")
        if pool.module == "mod_jk":
            out.append("mod_jk's retries and recovery (retries, retry_interval, recover_time)")
        if pool.ttl_s is not None:
            out.append("proxy.backend_pool.ttl_s: connections closed when idle")
    said = {a.path for a in plan.approximations}  # each said once, in the plan's words
    for index, group in enumerate(model.backends):
        if group.accept_queue is not None and f"backends.{index}.accept_queue" not in said:
            out.append(
                f"backends.{index}.accept_queue: a full queue refuses; LQN queues are unbounded"
            )
        limit = _connection_limit(model, index)
        if limit is not None:
            out.append(limit)
        if group.connection_idle_timeout_s is not None:
            out.append(f"backends.{index}.connection_idle_timeout_s: idle connections closed")
        if group.connector == "blocking":
            out.append(
                f"backends.{index}.connector = blocking: a thread held for a connection's life"
            )
        if group.jvm is not None:
            out.append(f"backends.{index}.jvm: garbage-collection pauses, heap and JIT warm-up")
        if group.jdbc_pool is not None:
            out.append(f"backends.{index}.jdbc_pool: a per-node connection pool to the database")
        if group.events:
            out.append(f"backends.{index}.events: crashes and slow-downs in time")
    if model.cluster.active:
        out.append("cluster.replication: session replication between the nodes")
    if len(plan.nodes) > 1 and model.balancer.sticky_session:
        out.append("balancer.sticky_session: a session's requests pinned to one node")
    clients = model.clients
    if isinstance(clients, ClosedClients) and clients.ramp:
        out.append(
            f"clients.ramp: {len(clients.ramp)} step(s) in time; the LQN holds the peak, "
            f"{clients.users} users, throughout (a steady state has no schedule)"
        )
    if isinstance(clients, ClosedClients) and clients.requests_per_user is not None:
        out.append(
            "clients.requests_per_user: a finite workload; the LQN is its steady state, "
            "with no start or end"
        )
    if model.clients.keep_alive:
        out.append(
            "clients.keep_alive: a persistent connection's hold on a worker between requests"
        )
    return list(dict.fromkeys(out))


def _connection_limit(model: Model, index: int) -> str | None:
    """Tomcat NIO's `maxConnections` where it can bind: below the node's threads (a request
    then waits for a connection, not a thread), or below the connections the clients can hold
    open at once (a front's workers, or one per user without a front).  The 8192 of a stock
    Tomcat behind a front of a few hundred workers binds nothing: an LQN leaves nothing out."""
    group = model.backends[index]
    limit = group.max_connections
    if limit is None:
        return None
    path = f"backends.{index}.max_connections = {limit}"
    if group.threads is not None and limit < group.threads:
        return f"{path}: a connection limit below the node's {group.threads} threads"
    # the front opens at most a connection per worker to each node; without a front, each
    # user keeps one (open arrivals: any number)
    opened = (
        model.proxy.workers if model.proxy is not None else getattr(model.clients, "users", None)
    )
    if opened is None or opened > limit:
        return f"{path}: connections beyond it wait in the accept queue; LQN has no such limit"
    return None


def _number(value: float) -> str:
    return f"{value:.12g}"


def _xml_comment(text: str) -> str:
    return text.replace("--", "- -")
