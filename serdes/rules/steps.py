"""The rules a serde plan runs: a writer schema's WRITE rules, a reader schema's READ rules, and the migrations
between the writer's version and the reader's (UPGRADE from an older writer, DOWNGRADE from a newer one), all
resolved when the plan is built. A plan without rules gets None and its per-record path does no rule work.

Migrations follow confluent-kafka: with a reader schema from the registry (``use_latest_version`` /
``use_latest_with_metadata``), the writer schema is looked up in the subject (deleted versions included) to find
its version; every version between the two that has migration rules for the direction is a step, run in version
order (UPGRADE: each version's rules from the one before; DOWNGRADE: from the newer one back, in reverse). When
there is at least one step, the record is read with the writer's schema as it is, migrated, and taken as the
reader's; otherwise the format's own schema resolution applies.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

from serdes.models import RegisteredSchema, Rule, Schema
from serdes.plans import Plan, get_version, lookup
from serdes.rules.engine import DOWNGRADE, READ, UPGRADE, WRITE, RuleConfig, Rules, RuleTarget, compile_rules

Step = Callable[[Any, Any, Any], Any]  # (message, ctx, original) -> message
TargetFactory = Callable[[Schema, int | None], RuleTarget]


def has_rules(schema: Schema | None) -> bool:
    rs = schema.rule_set if schema is not None else None
    return rs is not None and bool(rs.domain_rules or rs.migration_rules)


def encoding_rules(
    schema: Schema | None,
    mode: str,
    target: TargetFactory,
    config: RuleConfig,
    schema_id: int | None,
    subject: str | None,
) -> Rules | None:
    """The ``mode`` (WRITE or READ) ``encodingRules`` of ``schema`` (``ENCRYPT_PAYLOAD``): they run on the encoded
    payload after the domain rules on WRITE, before decoding on READ; None when it has none."""
    if schema is None or schema.rule_set is None or not schema.rule_set.encoding_rules:
        return None
    return compile_rules(
        schema.rule_set, mode, dataclasses.replace(target(schema, schema_id), subject=subject), config, encoding=True
    )


def domain_rules(
    schema: Schema,
    mode: str,
    target: TargetFactory,
    config: RuleConfig,
    schema_id: int | None,
    subject: str | None = None,
) -> Rules | None:
    """The ``mode`` (WRITE or READ) rules of ``schema`` (a version of ``subject``, named in DLQ headers), or
    None."""
    if schema.rule_set is None or not schema.rule_set.domain_rules:
        return None
    return compile_rules(schema.rule_set, mode, dataclasses.replace(target(schema, schema_id), subject=subject), config)


def write_rules(
    schema: Schema, target: TargetFactory, config: RuleConfig, schema_id: int | None, subject: str | None = None
) -> Rules | None:
    return domain_rules(schema, WRITE, target, config, schema_id, subject)


def read_rules(
    schema: Schema, target: TargetFactory, config: RuleConfig, schema_id: int | None, subject: str | None = None
) -> Rules | None:
    return domain_rules(schema, READ, target, config, schema_id, subject)


def _has_migrations(rules: tuple[Rule, ...], mode: str) -> bool:
    return any(r.mode in (mode, "UPDOWN") for r in rules)


def migrations(
    subject: str, writer: Schema, reader: RegisteredSchema, target: TargetFactory, config: RuleConfig
) -> Plan[list[Rules]]:
    """The migration steps from ``writer`` (a schema of ``subject``) to ``reader`` (a version of it), in order."""
    if not any(has_rules(s) for s in (writer, reader.schema)) and writer == reader.schema:
        return []
    source = yield from lookup(subject, writer, False, True)
    if source.version == reader.version:
        return []
    mode = UPGRADE if source.version < reader.version else DOWNGRADE
    first, last = (source, reader) if mode == UPGRADE else (reader, source)
    versions = [first]
    for number in range(first.version + 1, last.version):
        versions.append((yield from get_version(subject, number, None)))
    versions.append(last)
    out: list[Rules] = []
    for previous, version in itertools.pairwise(versions):
        rs = version.schema.rule_set
        if rs is None or not _has_migrations(rs.migration_rules, mode):
            continue
        # UPGRADE runs the newer version's rules on the older one's record; DOWNGRADE the same rules backwards
        step_target = version if mode == UPGRADE else previous
        rules = compile_rules(
            rs, mode, dataclasses.replace(target(step_target.schema, step_target.schema_id), subject=subject), config
        )
        if rules is not None:
            out.append(rules)
    if mode == DOWNGRADE:
        out.reverse()
    return out


def chain(*parts: Step | None) -> Step | None:
    """One step running ``parts`` in order (None when there is nothing to run)."""
    steps = [p for p in parts if p is not None]
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def run(message: Any, ctx: Any, original: Any) -> Any:
        for step in steps:
            message = step(message, ctx, original)
        return message

    return run


__all__ = [
    "READ",
    "WRITE",
    "RuleConfig",
    "Step",
    "chain",
    "domain_rules",
    "encoding_rules",
    "has_rules",
    "migrations",
    "write_rules",
]
