"""Typed request bodies and the answer shapes of the API (Confluent's entities, 7.x field names).

Request models check types strictly (a number is not a string, ``true`` is not an integer): a field of the
wrong type is a 422 with ``error_code`` 422, as Confluent's JSON binding answers. Unknown top-level fields are
ignored (newer clients send 8.x fields); unknown keys inside ``metadata`` and ``ruleSet`` are kept, as
stored content. Each request model converts itself to what ``Service`` takes, raising Confluent's specific
errors (42203 level, 42204 mode, 42210 rule set) for values of the right type but not allowed.

The answer models only document the API (``openapi.yaml``): routes answer pre-rendered bytes
(``render.py``), never validated through them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema

from compat import CompatibilityLevel, CompatibilityPolicy
from registry import contexts, errors, schemas_topic
from registry.modes import Mode
from registry.schema_parser import SchemaRequest
from registry.schema_types import Reference

Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]
#: a JSON scalar, read as its text (Confluent's binding turns scalars into the String field it expects)
Scalar = StrictStr | StrictInt | StrictFloat | StrictBool
SchemaTypeName = Literal["AVRO", "JSON", "PROTOBUF"]
LEVELS = [level.value for level in CompatibilityLevel]
POLICIES = [p.value for p in CompatibilityPolicy]
MODES = [m.value for m in Mode]


def enum_of(values: list[str]) -> Any:
    """Documents the values a string takes (the check itself gives Confluent's error code, not a 422)."""
    return Field(json_schema_extra={"enum": list[JsonValue](values)})


Level = Annotated[str, enum_of(LEVELS)]
Policy = Annotated[str, enum_of(POLICIES)]
#: a level or mode as requests carry it: any scalar is read as text and checked by name (42203 / 42204)
LevelText = Annotated[Scalar, WithJsonSchema({"type": "string", "enum": LEVELS})]
ModeText = Annotated[Scalar, WithJsonSchema({"type": "string", "enum": MODES})]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def absent(description: str | None = None) -> Any:
    """A field left out of the answer when it has no value (documented without a ``null``)."""
    return Field(default=None, description=description, json_schema_extra=_drop_default)


# ---- shapes shared by requests and answers ---------------------------------------------------------------


class SchemaReference(BaseModel):
    name: StrictStr
    subject: StrictStr
    version: Int32


class Metadata(BaseModel):
    """Confluent's ``Metadata``: tags by path, properties, and the names of sensitive properties."""

    model_config = ConfigDict(extra="allow")
    tags: dict[str, list[StrictStr]] | SkipJsonSchema[None] = absent()
    properties: dict[str, StrictStr] | SkipJsonSchema[None] = absent()
    sensitive: list[StrictStr] | SkipJsonSchema[None] = absent()


_MODES_BY_GROUP = {
    "migrationRules": frozenset({"UPGRADE", "DOWNGRADE", "UPDOWN"}),
    "domainRules": frozenset({"WRITE", "READ", "WRITEREAD"}),
    "encodingRules": frozenset({"WRITE", "READ", "WRITEREAD"}),
}
_MODES_ALL = ("UPGRADE", "DOWNGRADE", "UPDOWN", "WRITE", "READ", "WRITEREAD")
#: Confluent's ``RuleKind``: a rule without one is a TRANSFORM
_KINDS = ("TRANSFORM", "CONDITION")


class Rule(BaseModel):
    model_config = ConfigDict(extra="allow", json_schema_extra={"required": ["name"]})
    name: Annotated[StrictStr, Field(min_length=1, max_length=256)] | SkipJsonSchema[None] = absent()
    doc: StrictStr | SkipJsonSchema[None] = absent()
    kind: Annotated[StrictStr, enum_of(list(_KINDS))] | SkipJsonSchema[None] = absent()
    mode: Annotated[StrictStr, enum_of(list(_MODES_ALL))] | SkipJsonSchema[None] = absent()
    type: StrictStr | SkipJsonSchema[None] = absent()
    tags: list[StrictStr] | SkipJsonSchema[None] = absent()
    params: dict[str, StrictStr] | SkipJsonSchema[None] = absent()
    expr: StrictStr | SkipJsonSchema[None] = absent()
    onSuccess: StrictStr | SkipJsonSchema[None] = absent()
    onFailure: StrictStr | SkipJsonSchema[None] = absent()
    disabled: StrictBool | SkipJsonSchema[None] = absent()


class RuleSet(BaseModel):
    """Rule names are unique; migration rules use UPGRADE/DOWNGRADE/UPDOWN, the others WRITE/READ/WRITEREAD."""

    model_config = ConfigDict(extra="allow")
    migrationRules: list[Rule] | SkipJsonSchema[None] = absent()
    domainRules: list[Rule] | SkipJsonSchema[None] = absent()
    encodingRules: list[Rule] | SkipJsonSchema[None] = absent()

    def checked(self) -> dict[str, Any] | None:
        """The rule set as stored, after Confluent's rule checks (42210)."""
        seen: set[str] = set()
        for group, modes in _MODES_BY_GROUP.items():
            for rule in getattr(self, group) or ():
                if not rule.name:
                    raise errors.invalid_ruleset("Rule name missing")
                if len(rule.name) > 256:
                    raise errors.invalid_ruleset(f"Rule name too long: {rule.name[:40]}...")
                if rule.name in seen:
                    raise errors.invalid_ruleset(f"Found rule with duplicate name '{rule.name}'")
                seen.add(rule.name)
                if (rule.mode or "").upper() not in modes:
                    raise errors.invalid_ruleset(f"Rule '{rule.name}' in {group} has invalid mode '{rule.mode}'")
                if rule.kind is not None and rule.kind.upper() not in _KINDS:
                    raise errors.invalid_ruleset(f"Rule '{rule.name}' in {group} has invalid kind '{rule.kind}'")
        return _stored(self)


def _stored(model: BaseModel | None) -> dict[str, Any] | None:
    """``model`` as stored: the fields the request set, a ``null`` one as if left out (Confluent reads a null
    list or map as empty, and writes none back), so ``{"encodingRules": null}`` is never stored or served."""
    return (model.model_dump(exclude_unset=True, exclude_none=True) or None) if model is not None else None


# ---- request bodies ----------------------------------------------------------------------------------------


class RegisterSchemaRequest(BaseModel):
    """The body of register, lookup and the compatibility check."""

    schema_: StrictStr | None = Field(
        None, alias="schema", description="The schema text; empty re-registers the latest version's schema."
    )
    schemaType: Annotated[StrictStr, enum_of(["AVRO", "JSON", "PROTOBUF"])] | None = None
    references: list[SchemaReference] | None = None
    version: Int32 | None = Field(None, description="IMPORT mode only (else it must be the next version).")
    id: Int32 | None = Field(None, description="IMPORT mode only; a negative id means none.")
    metadata: Metadata | None = None
    ruleSet: RuleSet | None = None

    def to_request(self, *, check_rules: bool = False) -> SchemaRequest:
        """What ``Service`` takes; ``check_rules`` applies Confluent's rule checks (42210), as register does."""
        rule_set = None
        if self.ruleSet is not None:
            rule_set = self.ruleSet.checked() if check_rules else _stored(self.ruleSet)
        return SchemaRequest(
            schema=self.schema_,
            schema_type=(self.schemaType or "AVRO").upper(),
            references=tuple(
                Reference(r.name, contexts.normalize(r.subject), r.version) for r in self.references or ()
            ),
            version=self.version,
            id=self.id if self.id is not None and self.id >= 0 else None,  # Confluent: id < 0 = no id
            metadata=_stored(self.metadata),
            rule_set=rule_set,
        )


class ConfigUpdateRequest(BaseModel):
    """`compatibilityLevel` is an alias of `compatibility` (which wins); the level is case-insensitive."""

    compatibility: LevelText | None = None
    compatibilityLevel: LevelText | None = None
    compatibilityPolicy: Annotated[StrictStr, enum_of(POLICIES)] | None = Field(
        None, description="Confluent 8: `LENIENT` relaxes some JSON Schema rules; `STRICT` (default) does not."
    )
    normalize: StrictBool | None = None
    compatibilityGroup: StrictStr | None = None
    defaultMetadata: Metadata | None = None
    overrideMetadata: Metadata | None = None
    defaultRuleSet: RuleSet | None = None
    overrideRuleSet: RuleSet | None = None
    alias: StrictStr | None = None
    validateFields: StrictBool | None = None
    validateRules: StrictBool | None = None

    def to_update(self) -> dict[str, Any]:
        """The fields to set, under their stored names (``compatibilityLevel``)."""
        update: dict[str, Any] = {}
        level = self.compatibility if self.compatibility is not None else self.compatibilityLevel
        if level is not None:
            try:
                update["compatibilityLevel"] = CompatibilityLevel.parse(str(level)).value
            except ValueError:
                raise errors.invalid_compatibility_level() from None
        if self.compatibilityPolicy is not None:
            policy = CompatibilityPolicy.for_name(self.compatibilityPolicy)
            if policy is None:
                raise errors.invalid_compatibility_policy(self.compatibilityPolicy)
            update["compatibilityPolicy"] = policy.value
        for name in schemas_topic.CONFIG_FIELDS:
            if name in ("compatibilityLevel", "compatibilityPolicy"):  # read above
                continue
            value = getattr(self, name, None)
            if isinstance(value, RuleSet):
                value = value.checked()
            elif isinstance(value, BaseModel):
                value = _stored(value)
            if value is not None:
                update[name] = value
        return update


def config_echo(update: dict[str, Any]) -> dict[str, Any]:
    """What an update answers: the fields set, the level named ``compatibility`` as in the request."""
    echo = {"compatibility": update["compatibilityLevel"]} if "compatibilityLevel" in update else {}
    echo.update((k, v) for k, v in update.items() if k != "compatibilityLevel")
    return echo


class ModeUpdateRequest(BaseModel):
    """The mode is case-insensitive."""

    mode: ModeText | None = None

    def to_mode(self) -> Mode:
        try:
            return Mode(str(self.mode if self.mode is not None else "").strip().upper())
        except ValueError:
            raise errors.invalid_mode() from None


# ---- answers (documentation only) -----------------------------------------------------------------------------

GUID_DOC = "Confluent 8's schema GUID: the MD5 identity hash of schema, references, metadata and rule set, as a UUID."


class ErrorMessage(BaseModel):
    error_code: int
    message: str


class Schema(BaseModel):
    """A subject version (Confluent's ``Schema``)."""

    subject: str
    version: int
    id: int
    guid: str = Field(description=GUID_DOC)
    schemaType: SchemaTypeName | SkipJsonSchema[None] = absent("Absent for AVRO.")
    references: list[SchemaReference] | SkipJsonSchema[None] = absent()
    metadata: Metadata | SkipJsonSchema[None] = absent()
    ruleSet: RuleSet | SkipJsonSchema[None] = absent()
    schema_: str = Field(alias="schema")


class SchemaString(BaseModel):
    """A schema by id or GUID (Confluent's ``SchemaString``)."""

    guid: str = Field(description=GUID_DOC)
    schemaType: SchemaTypeName | SkipJsonSchema[None] = absent("Absent for AVRO.")
    schema_: str = Field(alias="schema")
    references: list[SchemaReference] | SkipJsonSchema[None] = absent()
    metadata: Metadata | SkipJsonSchema[None] = absent()
    ruleSet: RuleSet | SkipJsonSchema[None] = absent()
    maxId: int | SkipJsonSchema[None] = absent("With `fetchMaxId=true`.")


class RegisterSchemaResponse(BaseModel):
    """id, version and GUID; the stored content too when the registry completed its metadata or rule set."""

    id: int
    version: int
    guid: str = Field(description=GUID_DOC)
    schemaType: SchemaTypeName | SkipJsonSchema[None] = absent("Absent for AVRO.")
    references: list[SchemaReference] | SkipJsonSchema[None] = absent()
    metadata: Metadata | SkipJsonSchema[None] = absent()
    ruleSet: RuleSet | SkipJsonSchema[None] = absent()
    schema_: str | SkipJsonSchema[None] = Field(None, alias="schema", json_schema_extra=_drop_default)


class ContextId(BaseModel):
    """An id in a context (only the default context, ``.``, exists here)."""

    context: str
    id: int


class SubjectVersion(BaseModel):
    subject: str
    version: int


class _ConfigSettings(BaseModel):
    """The settings of a config besides its level."""

    compatibilityPolicy: Policy | SkipJsonSchema[None] = absent()
    normalize: bool | SkipJsonSchema[None] = absent()
    compatibilityGroup: str | SkipJsonSchema[None] = absent()
    defaultMetadata: Metadata | SkipJsonSchema[None] = absent()
    overrideMetadata: Metadata | SkipJsonSchema[None] = absent()
    defaultRuleSet: RuleSet | SkipJsonSchema[None] = absent()
    overrideRuleSet: RuleSet | SkipJsonSchema[None] = absent()
    alias: str | SkipJsonSchema[None] = absent()
    validateFields: bool | SkipJsonSchema[None] = absent()
    validateRules: bool | SkipJsonSchema[None] = absent()


class Config(_ConfigSettings):
    compatibilityLevel: Level


class ConfigUpdateResponse(_ConfigSettings):
    """The fields that were set (the level as ``compatibility``)."""

    compatibility: Level | SkipJsonSchema[None] = absent()


class ModeResponse(BaseModel):
    mode: Annotated[str, enum_of(MODES)]


class CompatibilityCheckResponse(BaseModel):
    is_compatible: bool
    messages: list[str] | SkipJsonSchema[None] = absent("With `verbose=true`.")


class ServerClusterId(BaseModel):
    scope: dict[str, Any] = Field(description="`path` (empty) and `clusters` (kafka-cluster, schema-registry-cluster).")


class SchemaRegistryServerVersion(BaseModel):
    version: str
    commitId: str


class EmptyObject(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"maxProperties": 0})
