"""The kinds of change Confluent's JSON Schema diff reports (its ``Difference.Type`` names): which are compatible
under each policy, and the sentence Confluent gives for each. :mod:`compat.json_schema` finds the changes."""

from __future__ import annotations

from compat.levels import CompatibilityPolicy

COMPATIBLE_CHANGES: frozenset[str] = frozenset(
    {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "MAX_CONTAINS_INCREASED",
        "MAX_CONTAINS_REMOVED",
        "MIN_CONTAINS_DECREASED",
        "MIN_CONTAINS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        # unevaluated* mirror additional*: allowing more is compatible (draft 2019-09 and later)
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)

#: LENIENT adds changes that only reject data outside what the old schema declared: properties added to
#: an open object (optional, or required with a default), properties removed from a closed one, and
#: narrowed or forbidden additional/unevaluated properties (Confluent's ``COMPATIBLE_CHANGES_LENIENT``)
COMPATIBLE_CHANGES_LENIENT: frozenset[str] = COMPATIBLE_CHANGES | {
    "ADDITIONAL_PROPERTIES_NARROWED",
    "ADDITIONAL_PROPERTIES_REMOVED",
    "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_PROPERTIES_REMOVED",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
}


def compatible_changes(policy: CompatibilityPolicy = CompatibilityPolicy.STRICT) -> frozenset[str]:
    """The change kinds that count as compatible under ``policy``."""
    return COMPATIBLE_CHANGES_LENIENT if policy is CompatibilityPolicy.LENIENT else COMPATIBLE_CHANGES


_KEYWORD_ADDED_OR_REMOVED = {
    "MAXIMUM_ADDED",
    "MINIMUM_ADDED",
    "EXCLUSIVE_MAXIMUM_ADDED",
    "EXCLUSIVE_MINIMUM_ADDED",
    "MULTIPLE_OF_ADDED",
    "MAX_LENGTH_ADDED",
    "MIN_LENGTH_ADDED",
    "PATTERN_ADDED",
    "REQUIRED_ATTRIBUTE_ADDED",
    "MAX_PROPERTIES_ADDED",
    "MIN_PROPERTIES_ADDED",
    "DEPENDENCY_ARRAY_ADDED",
    "DEPENDENCY_SCHEMA_ADDED",
    "MAX_ITEMS_ADDED",
    "MIN_ITEMS_ADDED",
    "MAX_CONTAINS_ADDED",
    "MIN_CONTAINS_ADDED",
    "UNIQUE_ITEMS_ADDED",
    "ADDITIONAL_ITEMS_REMOVED",
    "ADDITIONAL_PROPERTIES_REMOVED",
    "UNEVALUATED_PROPERTIES_REMOVED",
    "UNEVALUATED_ITEMS_REMOVED",
    "SCHEMA_ADDED",
}
_VALUE_INCREASED = {
    "MIN_LENGTH_INCREASED",
    "MINIMUM_INCREASED",
    "EXCLUSIVE_MINIMUM_INCREASED",
    "MIN_PROPERTIES_INCREASED",
    "MULTIPLE_OF_EXPANDED",
    "MIN_ITEMS_INCREASED",
    "MIN_CONTAINS_INCREASED",
}
_VALUE_DECREASED = {
    "MAX_LENGTH_DECREASED",
    "MAXIMUM_DECREASED",
    "MAX_ITEMS_DECREASED",
    "MAX_CONTAINS_DECREASED",
    "EXCLUSIVE_MAXIMUM_DECREASED",
    "MAX_PROPERTIES_DECREASED",
}
_NARROWED = {
    "ADDITIONAL_ITEMS_NARROWED",
    "ENUM_ARRAY_NARROWED",
    "SUM_TYPE_NARROWED",
    "ADDITIONAL_PROPERTIES_NARROWED",
    "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_ITEMS_NARROWED",
}
_VALUE_CHANGED = {"PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"}
_TYPE_CHANGED = {
    "TYPE_CHANGED",
    "TYPE_NARROWED",
    "COMBINED_TYPE_CHANGED",
    "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    "ENUM_ARRAY_CHANGED",
}
_EXTENDED = {"DEPENDENCY_ARRAY_EXTENDED", "PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED", "NOT_TYPE_EXTENDED"}
_ADDED_TO_OPEN = {
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
}


def is_compatible_change(kind: str, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT) -> bool:
    return kind in compatible_changes(policy)


def describe(kind: str, path: str, new: str = "new", old: str = "old") -> str:
    """Confluent's sentence for a difference; ``new`` is the update (reader), ``old`` the original."""
    if kind in _KEYWORD_ADDED_OR_REMOVED:
        return f"The keyword at path '{path}' in the {new} schema is not present in the {old} schema"
    if kind in _VALUE_INCREASED:
        return f"The value at path '{path}' in the {new} schema is more than its value in the {old} schema"
    if kind in _VALUE_DECREASED:
        return f"The value at path '{path}' in the {new} schema is less than its value in the {old} schema"
    if kind in _VALUE_CHANGED:
        return f"The value at path '{path}' is different between the {new} and {old} schema"
    if kind in _NARROWED:
        return (
            f"An array or combined type at path '{path}' has fewer elements in the {new} schema than the {old} schema"
        )
    if kind in _EXTENDED:
        return f"An array or combined type at path '{path}' has more elements in the {new} schema than the {old} schema"
    if kind in _TYPE_CHANGED:
        return f"A type at path '{path}' is different between the {new} schema and the {old} schema"
    if kind in _ADDED_TO_OPEN:
        return (
            f"The {new} schema has an open content model and has a property or item at path '{path}' "
            f"which is missing in the {old} schema"
        )
    if kind == "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL":
        return (
            f"The {new} schema has an unopen content model and has a required property at path "
            f"'{path}' which is missing in the {old} schema"
        )
    if kind in ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"):
        # sic: Confluent's sentence lacks "schema" after the first name
        return (
            f"The {new} has a closed content model and is missing a property or item present "
            f"at path '{path}' in the {old} schema"
        )
    if kind in (
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ):
        return (
            f"A property or item is missing in the {new} schema but present at path '{path}' in the "
            f"{old} schema and is not covered by its partially open content model"
        )
    if kind in (
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ):
        return (
            f"The {new} schema has a property or item at path '{path}' which is missing in the {old} "
            f"schema and is not covered by its partially open content model"
        )
    return f"{kind} at path '{path}'"
