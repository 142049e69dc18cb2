"""The topology resolved against the log: real topic names, partition counts and the tasks of each
sub-topology.

``resolve`` runs once when an application starts: it checks that the user's topics exist, sizes and
creates the internal topics (repartition topics, changelogs, the membership and assignment topics) and
refuses sub-topologies whose input topics are not co-partitioned. ``TopicNames`` is the one place
internal topic names are made.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from streams.errors import CoPartitioningError, MissingTopicError, StreamsError
from streams.log.base import Log, TopicPartition
from streams.topology import StoreSpec, SubTopology, Topology, internal_topic_name

__all__ = ["Metadata", "TopicNames", "resolve"]


@dataclass(frozen=True)
class TopicNames:
    """Internal topics carry the application id, so that applications sharing a log do not collide."""

    application_id: str

    def topic(self, name: str, internal: bool) -> str:
        """The real name of a topology topic; ``internal``: a repartition topic, or (named ``...-topic``) a
        foreign-key join's subscription or response topic, which keep their own suffix."""
        if not internal:
            return name
        return f"{self.application_id}-{internal_topic_name(name)}"

    def changelog(self, store: str) -> str:
        return f"{self.application_id}-{store}-changelog"

    def membership(self) -> str:
        """Compacted, one partition: each instance's status and heartbeats (``streams/membership.py``)."""
        return f"{self.application_id}-membership"

    def assignment(self) -> str:
        """Compacted, one partition: the leader's numbered assignments."""
        return f"{self.application_id}-assignment"

    def leader(self) -> str:
        """The lease the instances elect their leader with (on Kafka also a one-partition topic and group)."""
        return f"{self.application_id}-leader"


@dataclass
class Metadata:
    """Real topic names, partition counts, tasks per sub-topology."""

    names: TopicNames
    sub_topologies: dict[int, SubTopology] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)  # topic -> partition count
    sub_of_topic: dict[str, int] = field(default_factory=dict)
    tasks_per_sub: dict[int, int] = field(default_factory=dict)
    source_topics: list[str] = field(default_factory=list)
    store_sub: dict[str, int] = field(default_factory=dict)
    store_specs: dict[str, StoreSpec] = field(default_factory=dict)

    def input_partitions(self, sub_id: int, partition: int) -> list[TopicPartition]:
        """The partitions task ``<sub_id>_<partition>`` reads."""
        return [
            TopicPartition(self.names.topic(t, s.internal), partition)
            for s in self.sub_topologies[sub_id].sources
            for t in s.topics
        ]

    def store_partitions(self, store: str) -> int:
        """How many tasks, and so partitions, store ``store`` is split into."""
        return self.tasks_per_sub[self.store_sub[store]]

    def task_ids(self) -> list[str]:
        """Every task of the application, ``<sub-topology>_<partition>``."""
        return [f"{sub}_{p}" for sub, count in sorted(self.tasks_per_sub.items()) for p in range(count)]

    def stateful_task_ids(self) -> set[str]:
        """Tasks with changelogged stores: the ones standbys and warm-ups are placed for."""
        logged = {self.store_sub[name] for name, spec in self.store_specs.items() if spec.logged}
        return {task for task in self.task_ids() if int(task.partition("_")[0]) in logged}


def resolve(topology: Topology, log: Log, names: TopicNames, dead_letter_topics: Iterable[str] = ()) -> Metadata:
    """Check user topics (and the dead-letter topic), size and create internal topics, check co-partitioning."""
    md = Metadata(names)

    def partitions_of_existing(topic: str, role: str) -> int:
        info = log.describe_topic(topic)
        if info is None:
            raise MissingTopicError(
                f"{role} topic {topic!r} does not exist in {log.safe_url}: create it before starting "
                f"application {names.application_id!r}"
            )
        return info.partitions

    subs = topology.sub_topologies()
    md.sub_topologies = {s.id: s for s in subs}
    for sub in subs:
        for src in sub.sources:
            for t in src.topics:
                md.sub_of_topic[names.topic(t, src.internal)] = sub.id
                if not src.internal:
                    md.partitions[t] = partitions_of_existing(t, "source")
    # Repartition topics: the partition count given, else the max over the writing sub-topology's inputs.
    writers: dict[str, SubTopology] = {}
    for sub in subs:
        for sink in sub.sinks:
            if sink.internal:
                writers[sink.topic] = sub
    unresolved = dict(topology.repartition_topics)
    by_topic = {names.topic(name, True): rt for name, rt in topology.repartition_topics.items()}
    while unresolved:
        progress = False
        for name, rt in list(unresolved.items()):
            topic = names.topic(name, True)
            if rt.partitions is not None:
                md.partitions[topic] = rt.partitions
            elif rt.sized_by_reader:  # co-partitioned with the other inputs of the sub-topology that reads it
                reader = md.sub_topologies[md.sub_of_topic[topic]]
                inputs = [
                    t
                    for t in (names.topic(t, s.internal) for s in reader.sources for t in s.topics)
                    if t != topic and not (t in by_topic and by_topic[t].sized_by_reader)
                ]
                if not inputs:
                    raise StreamsError(f"cannot size internal topic {topic!r}: its reader has no other input")
                if any(t not in md.partitions for t in inputs):
                    continue
                md.partitions[topic] = max(md.partitions[t] for t in inputs)
            else:
                writer = writers[name]
                inputs = [names.topic(t, s.internal) for s in writer.sources for t in s.topics]
                if any(t not in md.partitions for t in inputs):
                    continue
                md.partitions[topic] = max(md.partitions[t] for t in inputs)
            del unresolved[name]
            progress = True
        if not progress:
            raise StreamsError(f"cannot size repartition topics {sorted(unresolved)}: they feed each other")
    for sub in subs:
        widths = {tp.topic: md.partitions[tp.topic] for tp in md.input_partitions(sub.id, 0)}
        counts = set(widths.values())
        if len(counts) > 1:
            detail = ", ".join(f"{t} has {n}" for t, n in sorted(widths.items()))
            raise CoPartitioningError(
                f"sub-topology {sub.id} reads topics that are not co-partitioned ({detail}); every topic "
                "read by one sub-topology must have the same number of partitions: repartition one side "
                "with .repartition(partitions=N)"
            )
        md.tasks_per_sub[sub.id] = counts.pop()
        for store in sub.stores:
            md.store_sub[store] = sub.id
            md.store_specs[store] = topology.stores[store]
    for sub in subs:
        for sink in sub.sinks:
            if not sink.internal:
                md.partitions.setdefault(sink.topic, partitions_of_existing(sink.topic, "sink"))
    for glob in topology.global_tables.values():  # read whole by every instance: no tasks, no co-partitioning
        md.partitions[glob.topic] = partitions_of_existing(glob.topic, "global table")
    for topic in dead_letter_topics:
        partitions_of_existing(topic, "dead-letter")
    for name in topology.repartition_topics:
        topic = names.topic(name, True)
        log.ensure_topic(topic, md.partitions[topic])
    for store, sub_id in md.store_sub.items():
        spec = topology.stores[store]
        if spec.logged:
            log.ensure_topic(
                names.changelog(store), md.tasks_per_sub[sub_id], compacted=True, config=spec.changelog_config()
            )
    log.ensure_topic(names.membership(), 1, compacted=True)
    log.ensure_topic(names.assignment(), 1, compacted=True)
    md.source_topics = sorted(md.sub_of_topic)
    return md
