"""Foreign-key table-table joins (Kafka Streams' KIP-213): ``left.join(right, joiner, foreign_key=f)``
joins each left row with the right row whose key is ``f(left value)``; the result is keyed as the left.

The two tables need not be co-partitioned. Records travel through two internal topics:

1. ``<application_id>-<name>-subscription-registration-topic`` (keyed by foreign key, partitioned as the
   right table): each left update subscribes its row to its foreign key (``Subscription`` with a hash of
   the left value) and, when the foreign key changed or the row was deleted, unsubscribes it from the old
   one. The right side keeps the subscriptions in a store keyed ``(foreign key, primary key)`` and
   answers with the right row.
2. ``<application_id>-<name>-subscription-response-topic`` (keyed by primary key, partitioned as the left
   table): the answers, and on every right update one per subscriber of that key. The left side joins
   an answer with its current row, unless the answer's hash is not that row's (a stale answer to an
   earlier version of the row: dropped, so a result never reflects a foreign key the row has left).

Inner join: a result while the right row exists (a right delete deletes the results of its
subscribers); left join: the joiner sees None for a missing right row or a None foreign key. A left
delete deletes the result. The result is always materialized (its store gives downstream old values).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from streams.change import Change
from streams.ops import Forwarding
from streams.processor import ProcessorContext
from streams.record_serdes import BYTES, bind_serializer
from streams.state.versioned import latest_values
from streams.subscription import (
    CombinedKey,
    CombinedKeySerde,
    Instruction,
    Response,
    ResponseSerde,
    Subscription,
    SubscriptionSerde,
    value_hash,
)
from streams.table_joins import Joiner, TableMaterializeProcessor
from streams.table_ops import TableOptions
from streams.topology import StoreSpec, Topology


class _Builder(Protocol):
    """What the join needs of the DSL's builder (a protocol, so this module does not import the DSL)."""

    topology: Topology

    def new_name(self, prefix: str) -> str: ...


class _Side(Protocol):
    """A materialized input table, as the DSL's ``KTable`` has it."""

    node: str
    store_name: str | None
    key_serde: Any
    value_serde: Any


__all__ = ["foreign_key_join"]


@dataclass(eq=False)
class _LeftSide(Forwarding):
    """What the left side's processors share: the joiner, the kind of join, and the hash of a left value
    (serialized with ``value_serde`` bound to ``hash_topic``) that tells a current answer from a stale one."""

    joiner: Joiner
    left_join: bool
    value_serde: Any
    hash_topic: str

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        ser = bind_serializer(self.value_serde, self.hash_topic, False)
        self._hash: Callable[[Any], bytes] = lambda value: value_hash(ser(value))


@dataclass(eq=False)
class SubscriptionSendProcessor(_LeftSide):
    """Left side: turns each left update into subscriptions (to the registration topic's sink) or, where
    the foreign key is None, into the result at once (to the result node)."""

    foreign_key: Callable[[Any], Any]
    sink: str
    result: str

    def _subscribe(self, fk: Any, instruction: Instruction, h: bytes | None, key: Any) -> None:
        self.context.forward(fk, Subscription(instruction, h, key), to=self.sink)

    def process(self, key: Any, change: Change) -> None:
        if key is None:
            self.context.record_dropped()
            return
        if not change.is_latest:
            self.context.record_dropped()  # out of order, from a versioned table (Kafka's SubscriptionSendProcessor)
            return
        new, old = change.new, change.old
        new_fk = None if new is None else self.foreign_key(new)
        old_fk = None if old is None else self.foreign_key(old)
        if new is None:
            if old_fk is not None:  # the right side answers, and the answer deletes the result
                self._subscribe(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE, None, key)
            elif old is not None and self.left_join:  # the row had a result of its own (None foreign key)
                self.context.forward(key, Change(None), to=self.result)
            return
        h = self._hash(new)
        if old_fk is not None and old_fk != new_fk:
            self._subscribe(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE, h, key)
        if new_fk is None:
            if self.left_join:
                self.context.forward(key, Change(self.joiner(key, new, None)), to=self.result)
            elif old_fk is not None:  # an inner result the old foreign key may have given goes
                self.context.forward(key, Change(None), to=self.result)
            return
        changed = old_fk is not None and old_fk != new_fk  # an inner result of the old key may need deleting
        instruction = (
            Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
            if self.left_join or changed
            else Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
        )
        self._subscribe(new_fk, instruction, h, key)


@dataclass(eq=False)
class SubscriptionReceiveProcessor(Forwarding):
    """Right side: keeps the subscription store and answers with the right row, as instructed."""

    subscriptions: str
    right_store: str

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._subs = context.get_state_store(self.subscriptions)
        self._right = latest_values(context.get_state_store(self.right_store))

    def process(self, fk: Any, sub: Subscription) -> None:
        if fk is None or sub is None:
            self.context.record_dropped()
            return
        instruction, key = sub.instruction, sub.primary_key
        combined = CombinedKey(fk, key)
        if instruction in (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE):
            self._subs.delete(combined)
        else:
            self._subs.put(combined, sub.hash)
        if instruction == Instruction.DELETE_KEY_NO_PROPAGATE:
            return
        if instruction == Instruction.DELETE_KEY_AND_PROPAGATE:
            self._forward(key, Response(None, None))
            return
        right = self._right(fk)
        if right is not None or instruction == Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            self._forward(key, Response(sub.hash, right))


@dataclass(eq=False)
class ForeignTableChangeProcessor(Forwarding):
    """Right side: a right row's update goes to every left row subscribed to its key."""

    subscriptions: str

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._subs = context.get_state_store(self.subscriptions)

    def process(self, fk: Any, change: Change) -> None:
        if fk is None:
            self.context.record_dropped()
            return
        if not change.is_latest:
            self.context.record_dropped()  # out of order, from a versioned table (Kafka's ForeignTableJoinProcessor)
            return
        subs = self._subs
        prefix = subs.key_bytes(CombinedKey(fk, None))
        for combined, h in subs.prefix_scan(prefix):
            self._forward(combined.primary_key, Response(h, change.new))


@dataclass(eq=False)
class ResponseJoinProcessor(_LeftSide):
    """Left side: joins an answer with the row's current value, unless the answer is stale."""

    left_store: str

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._left = latest_values(context.get_state_store(self.left_store))

    def process(self, key: Any, response: Response) -> None:
        if key is None or response is None:
            self.context.record_dropped()
            return
        current = self._left(key)
        if response.hash is None:  # the row was deleted: delete the result, unless it is back already
            if current is None:
                self._forward(key, Change(None))
            return
        if current is None or self._hash(current) != response.hash:
            return  # stale: the row changed (or went) since this answer was asked for
        if response.value is None:
            self._forward(key, Change(self.joiner(key, current, None) if self.left_join else None))
        else:
            self._forward(key, Change(self.joiner(key, current, response.value)))


def foreign_key_join(
    builder: _Builder,
    kind: str,
    left: _Side,
    right: _Side,
    foreign_key: Callable[[Any], Any],
    joiner: Joiner,
    spec: StoreSpec | None,
    name: str | None,
) -> tuple[str, str, TableOptions]:
    """Add a foreign-key join of the materialized ``left`` and ``right`` (left sending old values) to the
    topology; returns the result's node, store and options."""
    if kind not in ("inner", "left"):
        raise ValueError(f"a foreign-key join is inner or left, not {kind!r}")
    assert left.store_name is not None and right.store_name is not None
    topology = builder.topology
    base = name or builder.new_name("KTABLE-FK-JOIN")
    left_join = kind == "left"
    left_key, left_value = topology.key_serde(left.key_serde), topology.value_serde(left.value_serde)
    right_key, right_value = topology.key_serde(right.key_serde), topology.value_serde(right.value_serde)
    registration, response = f"{base}-subscription-registration-topic", f"{base}-subscription-response-topic"
    hash_topic = f"{base}-subscription-hash"  # what the left value serde is bound to for hashing
    if spec is None:
        spec = StoreSpec(f"{base}-STATE-STORE", key=left_key)
        spec.timestamped = True
    subs = StoreSpec(f"{base}-subscription-store", key=CombinedKeySerde(right_key, left_key), value=BYTES, cache=False)
    topology.add_repartition_topic(registration, sized_by_reader=True)
    topology.add_repartition_topic(response, sized_by_reader=True)
    send, send_sink, result = f"{base}-subscription-send", f"{base}-subscription-registration-sink", base
    fk, left_store = foreign_key, left.store_name

    # left side: subscribe
    topology.add_processor(
        send,
        lambda: SubscriptionSendProcessor(joiner, left_join, left_value, hash_topic, fk, send_sink, result),
        left.node,
    )
    topology.add_sink(send_sink, registration, send, key=right_key, value=SubscriptionSerde(left_key), internal=True)
    # right side: keep subscriptions, answer them and every right update
    receive_source, receive = f"{base}-subscription-registration-source", f"{base}-subscription-receive"
    topology.add_source(receive_source, registration, key=right_key, value=SubscriptionSerde(left_key), internal=True)
    right_store = right.store_name
    topology.add_processor(receive, lambda: SubscriptionReceiveProcessor(subs.name, right_store), receive_source)
    topology.add_state_store(subs, receive)
    topology.connect_processor_and_state_stores(receive, stores=[right_store])
    fan_out = f"{base}-foreign-table-change"
    topology.add_processor(fan_out, lambda: ForeignTableChangeProcessor(subs.name), right.node)
    topology.connect_processor_and_state_stores(fan_out, stores=[subs.name])
    topology.add_sink(
        f"{base}-subscription-response-sink",
        response,
        receive,
        fan_out,
        key=left_key,
        value=ResponseSerde(right_value),
        internal=True,
    )
    # left side: join the answers
    answer_source, answer = f"{base}-subscription-response-source", f"{base}-subscription-response-join"
    topology.add_source(answer_source, response, key=left_key, value=ResponseSerde(right_value), internal=True)
    topology.add_processor(
        answer, lambda: ResponseJoinProcessor(joiner, left_join, left_value, hash_topic, left_store), answer_source
    )
    topology.connect_processor_and_state_stores(answer, stores=[left_store])
    options = TableOptions()
    store_name = spec.name
    topology.add_processor(result, lambda: TableMaterializeProcessor(store_name, options), answer, send)
    topology.add_state_store(spec, result)
    return result, store_name, options
