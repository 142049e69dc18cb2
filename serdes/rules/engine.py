"""Running a schema's rules, with the semantics of Confluent's data contracts (as confluent-kafka runs them).

``compile_rules(rule_set, mode, target)`` builds, once per plan, the ``Rules`` a serializer (mode ``WRITE``) or
deserializer (``READ``, or ``UPGRADE``/``DOWNGRADE`` for migrations) runs on every record:

- which rules: ``domainRules`` for WRITE/READ (READ in reverse order), the target's ``migrationRules`` for UPGRADE,
  the source's in reverse for DOWNGRADE; a rule's ``mode`` must match (WRITEREAD = WRITE or READ, UPDOWN = UPGRADE
  or DOWNGRADE); ``disabled`` rules, and all rules of a set whose ``enableAt`` is neither ALL nor CLIENT, are
  skipped; a field transform is skipped when another one with the same kind, mode, type and tags runs before it;
- each rule: ``CEL`` (the whole message as ``message``), ``CEL_FIELD`` (each selected field as ``value`` with
  ``fullName``, ``name``, ``typeName``, ``tags`` and the containing ``message``), ``JSONATA``, or ``ENCRYPT`` /
  ``ENCRYPT_PAYLOAD`` (``serdes.rules.encryption``; the latter in ``encodingRules``, on the encoded payload, with
  ``compile_rules(..., encoding=True)``); an expression
  ``guard ; expr`` runs ``expr`` only where ``guard`` holds. A CONDITION fails when it is false, a TRANSFORM's
  result replaces the message (or the field);
- then its action: ``onSuccess`` (default NONE) or, when it failed or raised, ``onFailure`` (default ERROR).
  ``"A,B"`` gives the action for WRITE/UPGRADE and for READ/DOWNGRADE. ERROR raises ``RuleError``; DLQ produces the
  record to the dead-letter topic first (``serdes.rules.dlq``); NONE goes on with the next rule. A record that
  carries a ``__rule.name`` header (it came back from a DLQ) skips that rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from serdes.errors import RuleError
from serdes.models import Rule, RuleSet, Schema
from serdes.rules.fields import ConditionFailed, FieldInfo, Selection, Walker

WRITE, READ, UPGRADE, DOWNGRADE = "WRITE", "READ", "UPGRADE", "DOWNGRADE"
DLQ_RULE_NAME = "__rule.name"


@dataclass(frozen=True)
class RuleTarget:
    """What the rules of one schema need of its format: the schema (its ``metadata`` gives tags and rule
    parameters), a walker factory for field rules, conversions between the format's messages and the plain
    values CEL and JSONata see (identity for dicts), and the schema id and subject for errors and DLQ headers."""

    schema: Schema
    walker: Callable[[Selection, bool], Walker | None]
    to_value: Callable[[Any], Any] = field(default=lambda m: m)  # for CEL
    from_value: Callable[[Any, Any], Any] = field(default=lambda value, like: value)
    to_json: Callable[[Any], Any] = field(default=lambda m: m)  # for JSONata
    from_json: Callable[[Any, Any], Any] = field(default=lambda value, like: value)
    schema_id: int | None = None
    subject: str | None = None


class RuleConfig:
    """What a serde's rules share: ``rule_config`` as confluent-kafka's ``rule.conf`` (``dlq.topic``,
    ``dlq.auto.flush``, ``producer`` or producer settings such as ``bootstrap.servers``), the DLQ producer made
    from it on first use."""

    def __init__(self, conf: dict[str, Any] | None = None, client: Any = None) -> None:
        self.conf = dict(conf or {})
        self.client = client  # the serde's registry client: encryption rules reach the DEK registry through it
        self._dlq: Any = None
        self._dek_registry: Any = None

    def dek_registry(self) -> Any:
        """The ``DekRegistry`` (KEKs and DEKs met, cached) of this serde's encryption rules, made on first use."""
        if self._dek_registry is None:
            from serdes.rules.encryption import DekRegistry

            if self.client is None:
                raise ValueError("encryption rules need the serde's registry client")
            self._dek_registry = DekRegistry(self.client, self.conf)
        return self._dek_registry

    def dlq(self) -> Any:
        if self._dlq is None:
            from serdes.rules.dlq import DeadLetterQueue

            self._dlq = DeadLetterQueue(self.conf)
        return self._dlq

    def close(self) -> None:
        """Flush and close the DLQ producer, if one was made (idempotent); the DLQ sends nothing after this."""
        self.dlq().close()


def _matches(rule_mode: str, mode: str) -> bool:
    if rule_mode == "WRITEREAD":
        return mode in (WRITE, READ)
    if rule_mode == "UPDOWN":
        return mode in (UPGRADE, DOWNGRADE)
    return rule_mode == mode


def _rules_for(rule_set: RuleSet, mode: str, encoding: bool) -> list[Rule]:
    if encoding:
        rules = list(rule_set.encoding_rules)
    else:
        rules = list(rule_set.migration_rules if mode in (UPGRADE, DOWNGRADE) else rule_set.domain_rules)
    if mode in (READ, DOWNGRADE):
        rules.reverse()
    return rules


FIELD_TRANSFORMS = frozenset({"CEL_FIELD", "ENCRYPT"})


def _same_field_transform(a: Rule, b: Rule) -> bool:
    return (
        bool(a.tags)
        and a.kind == "TRANSFORM"
        and (a.kind, a.mode, a.type, sorted(a.tags)) == (b.kind, b.mode, b.type, sorted(b.tags))
    )


def _action(names: str | None, rule: Rule, mode: str) -> str | None:
    if not names:
        return None
    if rule.mode in ("WRITEREAD", "UPDOWN") and "," in names:
        write, _, read = names.partition(",")
        return (write if mode in (WRITE, UPGRADE) else read).strip() or None
    return names.strip()


class _Failed(Exception):
    """A condition was false."""


@dataclass(frozen=True, slots=True)
class _Step:
    rule: Rule
    run: Callable[[Any], Any]  # message -> result; raises when the rule cannot run
    on_success: str | None
    on_failure: str | None
    stops: bool = False  # the executor is unknown: run the failure action, then stop, as confluent-kafka does


def _expression(
    expr: str, make: Callable[[str], Callable[[dict[str, Any]], Any]]
) -> Callable[[dict[str, Any], bool, Any], Any]:
    """``evaluate(bindings, condition, unchanged)`` for ``guard ; expr`` (or a plain ``expr``): where the guard
    does not hold, a condition passes and a transform gives ``unchanged``."""
    guard_text, sep, body_text = expr.partition(";")
    body = make(body_text if sep else expr)
    if not sep or not guard_text.strip():
        return lambda bindings, condition, unchanged: body(bindings)
    guard = make(guard_text)

    def guarded(bindings: dict[str, Any], condition: bool, unchanged: Any) -> Any:
        if not guard(bindings):
            return True if condition else unchanged
        return body(bindings)

    return guarded


def _cel(expr: str) -> Callable[[dict[str, Any]], Any]:
    from serdes.rules.cel import CelProgram

    return CelProgram(expr).evaluate


def _raiser(error: Exception) -> Callable[..., Any]:
    def fail(*args: Any) -> Any:
        raise error

    return fail


def _encryption_step(
    rule: Rule, mode: str, target: RuleTarget, metadata_tags: dict[str, Any], config: RuleConfig
) -> Callable[[Any], Any]:
    from serdes.rules.encryption import Encryption

    try:
        encryption = Encryption(rule, mode, target.schema, target.subject, config.dek_registry())
    except ValueError as e:
        return _raiser(e)
    if (rule.type or "").upper() == "ENCRYPT_PAYLOAD":
        return encryption.payload
    walker = target.walker(Selection(rule.tags, metadata_tags), False)
    if walker is None:
        return lambda message: message  # no field of this schema is selected
    visit = encryption.field
    return lambda message: walker(message, visit)


def _compile_step(
    rule: Rule, mode: str, target: RuleTarget, metadata_tags: dict[str, Any], config: RuleConfig
) -> Callable[[Any], Any]:
    condition = rule.kind == "CONDITION"
    rule_type = (rule.type or "").upper()
    expr = rule.expr or ""
    if rule_type in ("ENCRYPT", "ENCRYPT_PAYLOAD"):
        return _encryption_step(rule, mode, target, metadata_tags, config)
    if rule_type == "CEL":
        try:
            evaluate = _expression(expr, _cel)
        except ValueError as e:
            return _raiser(e)
        to_value, from_value = target.to_value, target.from_value

        def cel(message: Any) -> Any:
            result = evaluate({"message": to_value(message)}, condition, message)
            return result if condition or result is message else from_value(result, message)

        return cel
    if rule_type == "CEL_FIELD":
        try:
            evaluate = _expression(expr, _cel)
        except ValueError as e:
            return _raiser(e)
        walker = target.walker(Selection(rule.tags, metadata_tags), condition)
        if walker is None:
            return lambda message: message  # no field of this schema is selected
        containing_value = target.to_value

        def visit(info: FieldInfo, value: Any, containing: Any) -> Any:
            bindings = {
                "value": value,
                "fullName": info.full_name,
                "name": info.name,
                "typeName": info.type_name,
                "tags": sorted(info.tags),
                "message": containing_value(containing),
            }
            return evaluate(bindings, condition, value)

        return lambda message: walker(message, visit)
    if rule_type == "JSONATA":
        from serdes.rules.jsonata import JsonataProgram

        try:
            program = JsonataProgram(expr)
        except ValueError as e:
            return _raiser(e)
        return lambda message: target.from_json(program.evaluate(target.to_json(message)), message)
    raise LookupError(f"no rule executor of type {rule.type!r}")


def compile_rules(
    rule_set: RuleSet | None, mode: str, target: RuleTarget, config: RuleConfig, encoding: bool = False
) -> Rules | None:
    """The rules of ``rule_set`` that run in ``mode`` on messages of ``target``'s schema (with ``encoding``, its
    ``encodingRules``, on the encoded payload's bytes); None when there are none (the serde's plan then has no
    rule step at all)."""
    if rule_set is None:
        return None
    if rule_set.enable_at not in (None, "ALL", "CLIENT"):
        return None
    rules = _rules_for(rule_set, mode, encoding)
    metadata = target.schema.metadata
    metadata_tags = dict(metadata.tags) if metadata is not None else {}
    steps = []
    for i, rule in enumerate(rules):
        if rule.disabled or not _matches(rule.mode, mode):
            continue
        if (rule.type or "").upper() in FIELD_TRANSFORMS:
            others = rules[:i] if mode in (WRITE, UPGRADE) else rules[i + 1 :]
            if any(_same_field_transform(rule, other) for other in others):
                continue
        on_success, on_failure = _action(rule.on_success, rule, mode), _action(rule.on_failure, rule, mode)
        try:
            run = _compile_step(rule, mode, target, metadata_tags, config)
        except LookupError as e:
            steps.append(_Step(rule, _raiser(e), on_success, on_failure, stops=True))
            continue
        steps.append(_Step(rule, run, on_success, on_failure))
    if not steps:
        return None
    return Rules(tuple(steps), mode, target, config)


class Rules:
    """The compiled rules of one schema in one mode: ``rules(message, ctx, original)`` runs them on a record
    (``original``: what DLQ sends, the record as given or the bytes read)."""

    def __init__(self, steps: Sequence[_Step], mode: str, target: RuleTarget, config: RuleConfig) -> None:
        self.steps = tuple(steps)
        self.mode = mode
        self.target = target
        self.config = config

    def __call__(self, message: Any, ctx: Any, original: Any = None) -> Any:
        headers = getattr(ctx, "headers", None) if ctx is not None else None
        for step in self.steps:
            rule = step.rule
            if headers and _replayed(headers, rule.name):
                continue
            try:
                result = step.run(message)
                if rule.kind == "CONDITION":
                    if not result:
                        raise _Failed
                elif rule.kind == "TRANSFORM" or not rule.kind:
                    message = result
            except RuleError:
                raise
            except Exception as e:
                self._act(step, step.on_failure or "ERROR", message, e, ctx, original)
                if step.stops:
                    return message
                continue
            if message is None:
                self._act(step, step.on_failure or "ERROR", message, None, ctx, original)
            elif step.on_success:
                self._act(step, step.on_success, message, None, ctx, original)
        return message

    def _act(self, step: _Step, action: str, message: Any, cause: Exception | None, ctx: Any, original: Any) -> None:
        action = action.upper()
        if action == "NONE":
            return
        error = self._error(step.rule, cause, ctx)
        if action == "DLQ":
            self.config.dlq().send(
                self._dlq_topic(step.rule),
                step.rule,
                self.mode,
                self.target.subject,
                ctx,
                original if original is not None else message,
                error,
            )
        elif action != "ERROR":
            raise RuleError(
                f"unknown rule action {action!r}",
                rule=step.rule.name,
                mode=self.mode,
                topic=getattr(ctx, "topic", None),
                schema_id=self.target.schema_id,
            ) from cause
        raise error from cause

    def _dlq_topic(self, rule: Rule) -> str | None:
        """confluent-kafka's order: the ``dlq.topic`` of the rule config, the rule's params, the schema's
        metadata properties."""
        topic = self.config.conf.get("dlq.topic") or rule.params.get("dlq.topic")
        metadata = self.target.schema.metadata
        if not topic and metadata is not None:
            topic = metadata.properties.get("dlq.topic")
        return topic

    def _error(self, rule: Rule, cause: Exception | None, ctx: Any) -> RuleError:
        if cause is None or isinstance(cause, _Failed):
            detail = rule.doc or (f"expression is false: {rule.expr}" if rule.expr else "condition failed")
        elif isinstance(cause, ConditionFailed):
            detail = rule.doc or f"expression is false for field {cause.field}: {rule.expr}"
        else:
            detail = f"{type(cause).__name__}: {cause}"
        return RuleError(
            f"{rule.kind} {rule.type} failed: {detail}",
            rule=rule.name,
            mode=self.mode,
            topic=getattr(ctx, "topic", None),
            schema_id=self.target.schema_id,
        )


def _replayed(headers: Any, name: str) -> bool:
    """The record came from a dead-letter queue for this rule (its last ``__rule.name`` header names it)."""
    value = None
    if isinstance(headers, dict):
        value = headers.get(DLQ_RULE_NAME)
    else:
        for k, v in headers:
            if k == DLQ_RULE_NAME:
                value = v
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode()
        except UnicodeDecodeError:
            return False
    return value == name
