"""``Topology.describe()`` in Kafka Streams' exact text, and the Mermaid and Graphviz diagrams of
``streams/topology_render.py``, through ``schemakit streams describe`` too.

Kafka's text is checked against what Kafka's own ``KStreamKTableJoinTest`` expects of two topologies (a stream
re-keyed, repartitioned and joined with two tables), built here node for node with the processor API. The
diagrams are checked for structure: every line a flowchart (or dot) statement, every id declared once, every
edge between declared ids, a subgraph per sub-topology holding its nodes and stores; and ``dot`` itself parses
the Graphviz text where it is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import pytest

from streams import Processor, StreamsBuilder, Topology
from streams.cli import FORMATS as CLI_FORMATS
from streams.topology import StoreSpec
from streams.topology_render import FORMATS, dot, kafka_text, mermaid, render
from tests.support import REPO_ROOT
from tests.support.cli import run_in_process


class _Noop(Processor):
    def process(self, record: object) -> None:
        pass


def _rekeyed_joins(names: dict[str, str], shared_repartition: bool) -> Topology:
    """Kafka's ``stream("topic").map(...)`` joined with ``table("topic2")`` and ``table("topic3")``, written
    to ``out-one`` and ``out-two``: one repartition topic read by both joins (``shared_repartition``, Kafka's
    generated names) or one per join (names given)."""
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000000", "topic")
    t.add_processor("KSTREAM-MAP-0000000007", _Noop, "KSTREAM-SOURCE-0000000000")
    for table, store, source, ktable in (
        ("topic2", "topic2-STATE-STORE-0000000001", "KSTREAM-SOURCE-0000000002", "KTABLE-SOURCE-0000000003"),
        ("topic3", "topic3-STATE-STORE-0000000004", "KSTREAM-SOURCE-0000000005", "KTABLE-SOURCE-0000000006"),
    ):
        t.add_source(source, table)
        t.add_processor(ktable, _Noop, source)
        t.add_state_store(StoreSpec(store), ktable)
    joins = [
        ("first", "topic2-STATE-STORE-0000000001", "out-one"),
        ("second", "topic3-STATE-STORE-0000000004", "out-two"),
    ]
    for which, store, out in joins:
        if shared_repartition and which == "second":
            reader = names["source"]
        else:
            prefix = "" if shared_repartition else f"{which}-"
            t.add_processor(names[f"{prefix}filter"], _Noop, "KSTREAM-MAP-0000000007")
            t.add_sink(names[f"{prefix}sink"], names[f"{prefix}topic"], names[f"{prefix}filter"], internal=True)
            reader = names[f"{prefix}source"]
            t.add_source(reader, names[f"{prefix}topic"], internal=True)
        t.add_processor(names[f"{which}-join"], _Noop, reader)
        t.connect_processor_and_state_stores(names[f"{which}-join"], stores=[store])
        t.add_sink(names[f"{which}-out"], out, names[f"{which}-join"])
    return t


# What Kafka's KStreamKTableJoinTest expects of describe() (shouldReuseRepartitionTopicWithGeneratedName).
KAFKA_GENERATED_NAMES = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
    "      --> KSTREAM-MAP-0000000007\n"
    "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
    "      --> KSTREAM-FILTER-0000000009\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-FILTER-0000000009 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000008\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Sink: KSTREAM-SINK-0000000008 (topic: KSTREAM-MAP-0000000007-repartition)\n"
    "      <-- KSTREAM-FILTER-0000000009\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000010 (topics: [KSTREAM-MAP-0000000007-repartition])\n"
    "      --> KSTREAM-JOIN-0000000011, KSTREAM-JOIN-0000000016\n"
    "    Processor: KSTREAM-JOIN-0000000011 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> KSTREAM-SINK-0000000012\n"
    "      <-- KSTREAM-SOURCE-0000000010\n"
    "    Processor: KSTREAM-JOIN-0000000016 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> KSTREAM-SINK-0000000017\n"
    "      <-- KSTREAM-SOURCE-0000000010\n"
    "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
    "      --> KTABLE-SOURCE-0000000003\n"
    "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
    "      --> KTABLE-SOURCE-0000000006\n"
    "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
    "      <-- KSTREAM-JOIN-0000000011\n"
    "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
    "      <-- KSTREAM-JOIN-0000000016\n"
    "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000002\n"
    "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000005\n\n"
)

# The same test class, shouldCreateRepartitionTopicsWithUserProvidedName.
KAFKA_USER_NAMES = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
    "      --> KSTREAM-MAP-0000000007\n"
    "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
    "      --> first-join-repartition-filter, second-join-repartition-filter\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: first-join-repartition-filter (stores: [])\n"
    "      --> first-join-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Processor: second-join-repartition-filter (stores: [])\n"
    "      --> second-join-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Sink: first-join-repartition-sink (topic: first-join-repartition)\n"
    "      <-- first-join-repartition-filter\n"
    "    Sink: second-join-repartition-sink (topic: second-join-repartition)\n"
    "      <-- second-join-repartition-filter\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: first-join-repartition-source (topics: [first-join-repartition])\n"
    "      --> first-join\n"
    "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
    "      --> KTABLE-SOURCE-0000000003\n"
    "    Processor: first-join (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> KSTREAM-SINK-0000000012\n"
    "      <-- first-join-repartition-source\n"
    "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
    "      <-- first-join\n"
    "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000002\n"
    "\n"
    "  Sub-topology: 2\n"
    "    Source: second-join-repartition-source (topics: [second-join-repartition])\n"
    "      --> second-join\n"
    "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
    "      --> KTABLE-SOURCE-0000000006\n"
    "    Processor: second-join (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> KSTREAM-SINK-0000000017\n"
    "      <-- second-join-repartition-source\n"
    "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
    "      <-- second-join\n"
    "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000005\n\n"
)


def test_describe_is_kafkas_text_for_two_joins_sharing_a_repartition_topic() -> None:
    names = {
        "filter": "KSTREAM-FILTER-0000000009",
        "sink": "KSTREAM-SINK-0000000008",
        "topic": "KSTREAM-MAP-0000000007",
        "source": "KSTREAM-SOURCE-0000000010",
        "first-join": "KSTREAM-JOIN-0000000011",
        "first-out": "KSTREAM-SINK-0000000012",
        "second-join": "KSTREAM-JOIN-0000000016",
        "second-out": "KSTREAM-SINK-0000000017",
    }
    assert _rekeyed_joins(names, shared_repartition=True).describe() == KAFKA_GENERATED_NAMES


KAFKA_NAMES = {"first-out": "KSTREAM-SINK-0000000012", "second-out": "KSTREAM-SINK-0000000017"}
for _which in ("first", "second"):
    KAFKA_NAMES |= {
        f"{_which}-filter": f"{_which}-join-repartition-filter",
        f"{_which}-sink": f"{_which}-join-repartition-sink",
        f"{_which}-topic": f"{_which}-join",
        f"{_which}-source": f"{_which}-join-repartition-source",
        f"{_which}-join": f"{_which}-join",
    }


def test_describe_is_kafkas_text_for_two_joins_with_named_repartition_topics() -> None:
    topology = _rekeyed_joins(KAFKA_NAMES, shared_repartition=False)
    assert topology.describe() == KAFKA_USER_NAMES == render(topology.description(), "text")


# -- the DSL topology of the guide: a re-key and join with a table, a group-by and a count -------------------


def orders_per_tier() -> StreamsBuilder:
    """Orders re-keyed by customer (a repartition), joined with the customers table (a store), grouped by tier
    (a second repartition) and counted (a second store)."""
    b = StreamsBuilder()
    customers = b.table("customers", key=str, value="json", store="customers")
    (
        b.stream("orders", key=str, value="json")
        .select_key(lambda k, order: order["customer"])
        .join(customers, lambda order, customer: {**order, "tier": customer["tier"]}, name="with-customer")
        .group_by(lambda k, order: order["tier"], key=str, name="by-tier")
        .count(store="orders-per-tier")
        .to_stream()
        .to("tier-counts", key=str, value=int)
    )
    return b


def _expected_structure() -> tuple[dict[str, set[str]], dict[str, set[str]], set[tuple[str, str]]]:
    """(sub-topology members by its title, stores by sub-topology title, data-flow edges between labels)
    of ``orders_per_tier``, as its Kafka text says."""
    desc = orders_per_tier().build().description()
    members, stores, edges = {}, {}, set()
    for sub in desc.sub_topologies:
        title = f"Sub-topology {sub.id}"
        members[title] = {n.name for n in sub.nodes}
        stores[title] = set(sub.stores)
        for node in sub.nodes:
            edges |= {(node.name, child) for child in node.successors}
            if node.kind == "source":
                edges |= {(topic, node.name) for topic in node.topics}
            if node.kind == "sink":
                edges.add((node.name, node.topics[0]))
    return members, stores, edges


def test_dsl_topology_text_has_the_repartitions_join_and_stores() -> None:
    text = kafka_text(orders_per_tier().build().description())
    assert text.startswith("Topologies:\n   Sub-topology: 0\n") and text.endswith("\n\n")
    assert text.count("Sub-topology:") == 3
    assert "    Processor: with-customer (stores: [customers])\n" in text
    assert "(topics: [with-customer-left-repartition])" in text and "(topic: with-customer-left-repartition)" in text
    assert "(topics: [by-tier-repartition])" in text and "(topic: by-tier-repartition)" in text
    assert re.search(r"Processor: KSTREAM-AGGREGATE-\d{10} \(stores: \[orders-per-tier\]\)", text)
    assert "    Sink: KSTREAM-SINK-0000000011 (topic: tier-counts)\n      <-- KTABLE-TOSTREAM-0000000010\n" in text
    for line in text.splitlines():  # every line is one of Kafka's
        assert re.fullmatch(
            r"Topologies:|   Sub-topology: 0|  Sub-topology: \d+|    (Source|Processor|Sink): .+|      (-->|<--) .+|",
            line,
        ), line


MERMAID_LINE = re.compile(
    r"flowchart TB"
    r"|    (?P<topic>t\d+)\[/\"(?P<tlabel>[^\"]+)\"/\]"
    r"|    subgraph (?P<sub>sub\d+) \[\"(?P<title>[^\"]+)\"\]"
    r"|        (?P<node>n\d+)(?:\[\"(?P<plabel>[^\"]+)\"\]|\(\[\"(?P<rlabel>[^\"]+)\"\]\))"
    r"|        (?P<store>s\d+)\[\(\"(?P<slabel>[^\"]+)\"\)\]"
    r"|    end"
    r"|    (?P<a>[tns]\d+) (?P<arrow>-->|-\.-) (?P<b>[tns]\d+)"
    r"|    classDef (?P<classdef>\w+) [\w#:,.\- ]+"
    r"|    class (?P<members>[tns]\d+(?:,[tns]\d+)*) (?P<cls>\w+)"
)


def check_mermaid(text: str) -> tuple[dict[str, str], dict[str, set[str]], set[tuple[str, str]], set[tuple[str, str]]]:
    """Check ``text`` line by line as a Mermaid flowchart; returns (label by id, labels of each subgraph by
    its title, data-flow edges and store links between labels)."""
    lines = text.splitlines()
    assert lines[0] == "flowchart TB" and text.endswith("\n")
    labels: dict[str, str] = {}
    subgraphs: dict[str, set[str]] = {}
    current: str | None = None
    edges: set[tuple[str, str]] = set()
    links: set[tuple[str, str]] = set()
    classes_defined: set[str] = set()
    for line in lines:
        m = MERMAID_LINE.fullmatch(line)
        assert m, f"not a flowchart statement: {line!r}"
        declared = m["topic"] or m["node"] or m["store"]
        if declared:
            assert declared not in labels, f"id {declared} declared twice"
            labels[declared] = m["tlabel"] or m["plabel"] or m["rlabel"] or m["slabel"]
            assert (current is None) == (m["topic"] is not None), f"{line!r}: topics outside, nodes inside subgraphs"
            if current is not None:
                subgraphs[current].add(labels[declared])
        elif m["sub"]:
            assert current is None, "subgraphs are not nested"
            assert m["title"] not in subgraphs
            current = m["title"]
            subgraphs[current] = set()
        elif line == "    end":
            assert current is not None
            current = None
        elif m["a"]:
            assert m["a"] in labels and m["b"] in labels, f"{line!r}: an edge between undeclared ids"
            (edges if m["arrow"] == "-->" else links).add((labels[m["a"]], labels[m["b"]]))
        elif m["classdef"]:
            classes_defined.add(m["classdef"])
        elif m["cls"]:
            assert m["cls"] in classes_defined
            assert all(i in labels for i in m["members"].split(","))
    assert current is None, "a subgraph is not closed"
    return labels, subgraphs, edges, links


def test_mermaid_is_a_valid_flowchart_of_the_topology() -> None:
    text = mermaid(orders_per_tier().build().description())
    labels, subgraphs, edges, links = check_mermaid(text)
    members, stores, expected_edges = _expected_structure()
    assert {title: found - stores[title] for title, found in subgraphs.items()} == members
    assert {title: found & {"customers", "orders-per-tier"} for title, found in subgraphs.items()} == stores
    assert edges == expected_edges
    assert {store for _, store in links} == {"customers", "orders-per-tier"}
    assert ("with-customer", "customers") in links
    topics = {label for i, label in labels.items() if i.startswith("t")}
    assert topics == {"orders", "customers", "tier-counts", "with-customer-left-repartition", "by-tier-repartition"}
    # repartition topics get their own class (drawn dashed)
    assert re.search(r"^    class (t\d+,t\d+) repartition$", text, re.MULTILINE)


DOT_LINE = re.compile(
    r"digraph topology \{|\}|    \}"
    r"|    (graph|node|edge) \[[^\]]+\];"
    r"|    rankdir=TB;"
    r"|    subgraph cluster_(?P<cluster>\d+) \{"
    r"|        label=\"(?P<title>[^\"]+)\"; .+;"
    r"|\s+(?P<id>[tns]\d+) \[label=\"(?P<label>[^\"]+)\", shape=(?P<shape>\w+), .+\];"
    r"|    (?P<a>[tns]\d+) -> (?P<b>[tns]\d+)(?P<dotted> \[style=dotted, arrowhead=none\])?;"
)


def test_dot_has_a_cluster_per_sub_topology_and_the_edges() -> None:
    text = dot(orders_per_tier().build().description())
    labels: dict[str, str] = {}
    clusters: dict[str, set[str]] = {}
    current: str | None = None
    edges, links = set(), set()
    for line in text.splitlines():
        m = DOT_LINE.fullmatch(line)
        assert m, f"not an expected dot statement: {line!r}"
        if m["cluster"]:
            assert current is None, "clusters are not nested"
        elif m["title"]:
            current = m["title"]
            assert current not in clusters
            clusters[current] = set()
        elif m["id"]:
            assert m["id"] not in labels
            labels[m["id"]] = m["label"]
            if current is not None:
                clusters[current].add(m["label"])
        elif line == "    }":
            current = None
        elif m["a"]:
            assert m["a"] in labels and m["b"] in labels
            (links if m["dotted"] else edges).add((labels[m["a"]], labels[m["b"]]))
    members, stores, expected_edges = _expected_structure()
    assert clusters == {title: members[title] | stores[title] for title in members}
    assert edges == expected_edges
    assert links == {
        (n.name, s)
        for sub in orders_per_tier().build().description().sub_topologies
        for n in sub.nodes
        for s in n.stores
    }


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt-get install graphviz)")
def test_graphviz_parses_the_dot_text() -> None:
    text = dot(orders_per_tier().build().description())
    done = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    texts = {el.text for el in ElementTree.fromstring(done.stdout).iter("{http://www.w3.org/2000/svg}text")}
    members, stores, _ = _expected_structure()
    labels = set(members) | {label for names in (*members.values(), *stores.values()) for label in names}
    topics = {"orders", "customers", "with-customer-left-repartition", "by-tier-repartition", "tier-counts"}
    assert texts == labels | topics  # every sub-topology, node, store and topic drawn, nothing else


MERMAID_TOOLS = REPO_ROOT / ".tools" / "mermaid"


@pytest.mark.skipif(
    shutil.which("node") is None or not (MERMAID_TOOLS / "node_modules" / "mermaid").is_dir(),
    reason="Mermaid's parser is not installed (make diagram-tools: npm's mermaid and jsdom in .tools/mermaid)",
)
def test_mermaids_own_parser_accepts_the_flowcharts(tmp_path: Path) -> None:
    b = StreamsBuilder()
    countries = b.global_table("countries", key=str, value=str, store="countries")
    b.stream("orders", key=str, value=str).join(countries, lambda k, v: v, lambda v, c: f"{v}:{c}").to("out")
    charts = {
        "tiers": mermaid(orders_per_tier().build().description()),
        "kafka": mermaid(_rekeyed_joins(KAFKA_NAMES, shared_repartition=False).description()),
        "global": mermaid(b.build().description()),
    }
    # A control: the parser must refuse a chart with an edge to nowhere.
    charts["broken"] = charts["tiers"] + "    t0 -->\n"
    for name, text in charts.items():
        (tmp_path / f"{name}.mmd").write_text(text)
    done = subprocess.run(
        ["node", str(REPO_ROOT / "tests" / "support" / "mermaid_parse.mjs"), str(MERMAID_TOOLS)]
        + [str(tmp_path / f"{name}.mmd") for name in charts],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results = {Path(r["file"]).stem: r for r in map(json.loads, done.stdout.splitlines())}
    assert {name: r["ok"] for name, r in results.items()} == {
        "tiers": True,
        "kafka": True,
        "global": True,
        "broken": False,
    }
    assert {results[name]["diagram"] for name in ("tiers", "kafka", "global")} == {"flowchart-v2"}


def test_global_table_is_a_sub_topology_without_tasks_in_every_format() -> None:
    b = StreamsBuilder()
    countries = b.global_table("countries", key=str, value=str, store="countries")
    b.stream("orders", key=str, value=str).join(countries, lambda k, v: v, lambda v, c: f"{v}:{c}").to("out")
    desc = b.build().description()
    assert kafka_text(desc).endswith(
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: countries-source (topics: [countries])\n"
        "      --> countries-processor\n"
        "    Processor: countries-processor (stores: [countries])\n"
        "      --> none\n"
        "      <-- countries-source\n\n"
    )
    _, subgraphs, edges, links = check_mermaid(mermaid(desc))
    assert subgraphs["Global store (sub-topology 1, no tasks)"] == {
        "countries-source",
        "countries-processor",
        "countries",
    }
    assert ("countries", "countries-source") in edges and ("countries-processor", "countries") in links


def test_render_and_the_command_accept_the_same_formats() -> None:
    assert CLI_FORMATS == FORMATS
    with pytest.raises(ValueError, match="unknown topology format 'svg'"):
        render(orders_per_tier().build().description(), "svg")


# -- the command ------------------------------------------------------------------------------------------------

APP_MODULE = """
from tests.streams.test_topology_render import orders_per_tier

builder = orders_per_tier()
topology = builder.build()

def make():
    return orders_per_tier().build()
"""


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], str]:
    name = f"render_app_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(APP_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return lambda attr: f"{name}:{attr}"


def test_streams_describe_command_prints_each_format(
    capsys: pytest.CaptureFixture[str], app_module: Callable[[str], str]
) -> None:
    topology = orders_per_tier().build()
    for attr in ("builder", "topology", "make"):
        result = run_in_process(capsys, "streams", "describe", app_module(attr))
        assert (result.code, result.out) == (0, topology.describe())
    for fmt in ("mermaid", "dot"):
        result = run_in_process(capsys, "streams", "describe", app_module("topology"), "--format", fmt)
        assert (result.code, result.out) == (0, render(topology.description(), fmt))


def test_streams_describe_reports_what_is_not_a_topology(
    capsys: pytest.CaptureFixture[str], app_module: Callable[[str], str]
) -> None:
    result = run_in_process(capsys, "streams", "describe", "os:sep")
    assert result.code == 2
    assert "os:sep is a str, not a StreamsApp, Topology or StreamsBuilder" in result.err
    result = run_in_process(capsys, "streams", "describe", app_module("nothing"))
    assert result.code == 2 and "has no attribute 'nothing'" in result.err


# -- the guide's example, its drawing and the README's diagram are of one topology -------------------------------


def _fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_guides_example_is_the_topology_drawn_in_the_readme_and_the_guide() -> None:
    guide = (REPO_ROOT / "docs" / "streams.md").read_text()
    (example,) = [block for block in _fenced_blocks(guide, "python") if "builder = b" in block]
    scope: dict[str, object] = {"StreamsBuilder": StreamsBuilder}
    exec(example, scope)  # the guide's code, as printed
    builder = scope["builder"]
    assert isinstance(builder, StreamsBuilder)
    topology = builder.build()
    assert topology.describe() == orders_per_tier().build().describe()
    (diagram,) = _fenced_blocks((REPO_ROOT / "README.md").read_text(), "mermaid")
    assert diagram == render(topology.description(), "mermaid")
    # The guide's image is Graphviz's drawing of `--format dot`: its texts are the topology's labels.
    svg = ElementTree.parse(REPO_ROOT / "docs" / "images" / "streams-topology.svg").getroot()
    texts = {el.text for el in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert "](images/streams-topology.svg)" in guide
    desc = topology.description()
    expected = {f"Sub-topology {sub.id}" for sub in desc.sub_topologies}
    for sub in desc.sub_topologies:
        expected |= {n.name for n in sub.nodes} | set(sub.stores)
        expected |= {t for n in sub.nodes for t in n.topics}
    assert texts == expected
