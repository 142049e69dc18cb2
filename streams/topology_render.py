"""A topology shown to people: Kafka Streams' ``Topology.describe()`` text, a Mermaid flowchart, a Graphviz graph.

``Topology.description()`` (``streams/topology.py``) gives a ``TopologyDescription``: its sub-topologies, each
node with its topics, stores, successors and predecessors, in the order Kafka Streams prints them, so that one
model feeds the three renderings here and they cannot disagree. ``kafka_text`` is byte for byte Kafka's format:

- ``Topologies:`` then each sub-topology, the first indented three spaces and the others two (Kafka appends
  ``" "`` once after the heading and ``"  "`` before each one), each followed by an empty line;
- nodes ordered as Kafka's ``NodeComparator``: the largest sub-tree first (a node's size is one plus its
  children's sizes), then by name; an empty list of successors or predecessors is ``none``;
- successors and predecessors: the largest sub-tree first, then in the order they were linked. Kafka sorts
  them with the same comparator, but into sets built while the sizes still grow, in hash-map order, so where
  sizes tie its order is an accident of hashing; the order linked gives Kafka's own for the common cases (a
  join's ``JOINTHIS, JOINOTHER``; two joins reading one repartition topic);
- a source has only ``-->``, a sink only ``<--``, a processor both.

Where the two cannot match: Kafka prints a set of several topics or stores in hash order, here they are in the
order they were added; a global table gets the sub-topology id after the last task sub-topology (ids name tasks,
``<sub>_<partition>``, so they cannot move) and its nodes are named after its store (``<store>-source``,
``<store>-processor``), since the DSL here gives a global table no nodes of its own.

In the diagrams every topic is one node outside the sub-topologies, so a repartition topic is the edge that links
the sub-topology writing it to the one reading it; stores sit in the sub-topology of the processors using them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "FORMATS",
    "NodeDescription",
    "SubTopologyDescription",
    "TopologyDescription",
    "dot",
    "kafka_text",
    "mermaid",
    "render",
]

FORMATS = ("text", "mermaid", "dot")

NodeKind = Literal["source", "processor", "sink"]


@dataclass(frozen=True)
class NodeDescription:
    """One node: ``topics`` are the topics a source reads or (one) a sink writes, as Kafka prints them
    (repartition topics with their ``-repartition`` suffix, without the application id); ``internal``: they
    are the application's own (repartition or foreign-key join topics)."""

    kind: NodeKind
    name: str
    topics: tuple[str, ...] = ()
    internal: bool = False
    stores: tuple[str, ...] = ()
    successors: tuple[str, ...] = ()
    predecessors: tuple[str, ...] = ()


@dataclass(frozen=True)
class SubTopologyDescription:
    """A sub-topology (``global_store``: the one that fills a global table on every instance; it has no tasks)."""

    id: int
    nodes: tuple[NodeDescription, ...]
    global_store: bool = False

    @property
    def stores(self) -> list[str]:
        """The stores its processors use, in node order, each once."""
        found: list[str] = []
        for node in self.nodes:
            found += [s for s in node.stores if s not in found]
        return found


@dataclass(frozen=True)
class TopologyDescription:
    sub_topologies: tuple[SubTopologyDescription, ...]


# -- Kafka's text ---------------------------------------------------------------------------------------------


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names) if names else "none"


def _node_text(node: NodeDescription) -> str:
    if node.kind == "source":
        return f"Source: {node.name} (topics: [{', '.join(node.topics)}])\n      --> {_names(node.successors)}"
    if node.kind == "sink":
        return f"Sink: {node.name} (topic: {node.topics[0]})\n      <-- {_names(node.predecessors)}"
    return (
        f"Processor: {node.name} (stores: [{', '.join(node.stores)}])\n"
        f"      --> {_names(node.successors)}\n      <-- {_names(node.predecessors)}"
    )


def kafka_text(description: TopologyDescription) -> str:
    """Kafka Streams' ``TopologyDescription.toString()``."""
    parts = ["Topologies:\n "]
    for sub in description.sub_topologies:
        heading = f"Sub-topology: {sub.id}"
        if sub.global_store:
            heading += " for global store (will not generate tasks)"
        nodes = "".join(f"    {_node_text(node)}\n" for node in sub.nodes)
        parts.append(f"  {heading}\n{nodes}\n")
    return "".join(parts)


# -- diagrams -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Graph:
    """The diagram's elements with short unique ids (``t``: topics, ``n``: nodes, ``s``: stores), shared by
    the Mermaid and Graphviz renderings."""

    topics: dict[str, tuple[str, bool]]  # topic -> (id, internal)
    nodes: dict[str, str]  # node name -> id
    stores: dict[str, str]  # store -> id
    edges: list[tuple[str, str]]  # data flow: topic -> source, parent -> child, sink -> topic
    store_links: list[tuple[str, str]]  # processor -> store it uses


def _graph(description: TopologyDescription) -> _Graph:
    topics: dict[str, tuple[str, bool]] = {}
    nodes: dict[str, str] = {}
    stores: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    links: list[tuple[str, str]] = []

    def topic_id(topic: str, internal: bool) -> str:
        if topic not in topics:
            topics[topic] = (f"t{len(topics)}", internal)
        return topics[topic][0]

    for sub in description.sub_topologies:
        for node in sub.nodes:
            nodes[node.name] = f"n{len(nodes)}"
        for store in sub.stores:
            stores.setdefault(store, f"s{len(stores)}")
    for sub in description.sub_topologies:
        for node in sub.nodes:
            me = nodes[node.name]
            if node.kind == "source":
                edges += [(topic_id(t, node.internal), me) for t in node.topics]
            elif node.kind == "sink":
                edges.append((me, topic_id(node.topics[0], node.internal)))
            edges += [(me, nodes[child]) for child in node.successors]
            links += [(me, stores[s]) for s in node.stores]
    return _Graph(topics, nodes, stores, edges, links)


def _sub_title(sub: SubTopologyDescription) -> str:
    return f"Global store (sub-topology {sub.id}, no tasks)" if sub.global_store else f"Sub-topology {sub.id}"


_MERMAID_SHAPES = {"source": '(["{}"])', "processor": '["{}"]', "sink": '(["{}"])'}
_MERMAID_CLASSES = {
    "source": "fill:#e3f2fd,stroke:#1565c0",
    "processor": "fill:#f5f5f5,stroke:#616161",
    "sink": "fill:#e8f5e9,stroke:#2e7d32",
    "store": "fill:#fff3e0,stroke:#ef6c00",
    "topic": "fill:#ffffff,stroke:#424242",
    "repartition": "fill:#fce4ec,stroke:#ad1457,stroke-dasharray:4 3",
}


def _mermaid_label(text: str) -> str:
    """Text inside a quoted Mermaid label: a double quote is written as the entity ``#quot;``."""
    return text.replace('"', "#quot;")


def mermaid(description: TopologyDescription) -> str:
    """A Mermaid flowchart: a subgraph per sub-topology; topics (repartition topics dashed) between them;
    sources and sinks rounded, stores as cylinders linked to their processors by dotted lines."""
    graph = _graph(description)
    lines = ["flowchart TB"]
    for topic, (tid, _) in graph.topics.items():
        lines.append(f'    {tid}[/"{_mermaid_label(topic)}"/]')
    members: dict[str, list[str]] = {kind: [] for kind in _MERMAID_CLASSES}
    for sub in description.sub_topologies:
        lines.append(f'    subgraph sub{sub.id} ["{_mermaid_label(_sub_title(sub))}"]')
        for node in sub.nodes:
            nid = graph.nodes[node.name]
            lines.append(f"        {nid}{_MERMAID_SHAPES[node.kind].format(_mermaid_label(node.name))}")
            members[node.kind].append(nid)
        for store in sub.stores:
            sid = graph.stores[store]
            lines.append(f'        {sid}[("{_mermaid_label(store)}")]')
            members["store"].append(sid)
        lines.append("    end")
    lines += [f"    {a} --> {b}" for a, b in graph.edges]
    lines += [f"    {a} -.- {b}" for a, b in graph.store_links]
    for tid, internal in graph.topics.values():
        members["repartition" if internal else "topic"].append(tid)
    for kind, style in _MERMAID_CLASSES.items():
        if members[kind]:
            lines.append(f"    classDef {kind} {style}")
            lines.append(f"    class {','.join(members[kind])} {kind}")
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    """A Graphviz double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_DOT_NODE_STYLE = {
    "source": 'shape=box, style="rounded,filled", fillcolor="#e3f2fd", color="#1565c0"',
    "processor": 'shape=box, style=filled, fillcolor="#f5f5f5", color="#616161"',
    "sink": 'shape=box, style="rounded,filled", fillcolor="#e8f5e9", color="#2e7d32"',
}
_DOT_STORE_STYLE = 'shape=cylinder, style=filled, fillcolor="#fff3e0", color="#ef6c00"'
_DOT_TOPIC_STYLE = {
    False: 'shape=parallelogram, style=filled, fillcolor="#ffffff", color="#424242"',
    True: 'shape=parallelogram, style="dashed,filled", fillcolor="#fce4ec", color="#ad1457"',
}


def dot(description: TopologyDescription) -> str:
    """A Graphviz digraph: a ``cluster_<id>`` subgraph per sub-topology, the same elements as ``mermaid``."""
    graph = _graph(description)
    lines = [
        "digraph topology {",
        "    rankdir=TB;",
        '    graph [fontname="Helvetica", fontsize=12];',
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [color="#616161"];',
    ]
    for topic, (tid, internal) in graph.topics.items():
        lines.append(f"    {tid} [label={_dot_string(topic)}, {_DOT_TOPIC_STYLE[internal]}];")
    for sub in description.sub_topologies:
        lines.append(f"    subgraph cluster_{sub.id} {{")
        lines.append(f'        label={_dot_string(_sub_title(sub))}; style="rounded,dashed"; color="#9e9e9e";')
        for node in sub.nodes:
            lines.append(
                f"        {graph.nodes[node.name]} [label={_dot_string(node.name)}, {_DOT_NODE_STYLE[node.kind]}];"
            )
        for store in sub.stores:
            lines.append(f"        {graph.stores[store]} [label={_dot_string(store)}, {_DOT_STORE_STYLE}];")
        lines.append("    }")
    lines += [f"    {a} -> {b};" for a, b in graph.edges]
    lines += [f"    {a} -> {b} [style=dotted, arrowhead=none];" for a, b in graph.store_links]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(description: TopologyDescription, fmt: str) -> str:
    """A topology's ``description`` as ``fmt``: ``text`` (Kafka's describe), ``mermaid`` or ``dot``."""
    if fmt == "text":
        return kafka_text(description)
    if fmt == "mermaid":
        return mermaid(description)
    if fmt == "dot":
        return dot(description)
    raise ValueError(f"unknown topology format {fmt!r}: use one of {', '.join(FORMATS)}")
