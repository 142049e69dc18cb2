"""Confluent's error codes and messages, in one place. Every error the API returns is an ``ApiError``."""

from __future__ import annotations

import enum
from collections.abc import Callable
from http import HTTPStatus


class ErrorCode(enum.IntEnum):
    """The ``error_code`` of an error body: Confluent's codes, or the HTTP status where rest-utils uses it."""

    SUBJECT_NOT_FOUND = 40401
    VERSION_NOT_FOUND = 40402
    SCHEMA_NOT_FOUND = 40403
    SUBJECT_SOFT_DELETED = 40404
    SUBJECT_NOT_SOFT_DELETED = 40405
    VERSION_SOFT_DELETED = 40406
    VERSION_NOT_SOFT_DELETED = 40407
    SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
    SUBJECT_MODE_NOT_CONFIGURED = 40409
    ASSOCIATION_NOT_FOUND = 40410
    ASSOCIATION_FOR_SUBJECT_EXISTS = 40904
    STRONG_ASSOCIATION_FOR_SUBJECT_EXISTS = 40905
    NO_ACTIVE_SUBJECT_VERSION = 40907
    ASSOCIATION_FROZEN = 40908
    INVALID_ASSOCIATION = 42212
    INCOMPATIBLE_SCHEMA = 409
    INVALID_SCHEMA = 42201
    INVALID_VERSION = 42202
    INVALID_COMPATIBILITY_LEVEL = 42203
    INVALID_MODE = 42204
    OPERATION_NOT_PERMITTED = 42205
    REFERENCE_EXISTS = 42206
    INVALID_SUBJECT = 42208
    SCHEMA_TOO_LARGE = 42209
    INVALID_RULESET = 42210
    CONTEXT_NOT_EMPTY = 42211
    STORE_ERROR = 50001
    OPERATION_TIMEOUT = 50002
    FORWARDING_FAILED = 50003
    UNKNOWN_LEADER = 50004
    # HTTP-level errors, where the status is the code
    BAD_REQUEST = 400
    NOT_FOUND = 404
    METHOD_NOT_ALLOWED = 405
    NOT_ACCEPTABLE = 406
    UNSUPPORTED_MEDIA_TYPE = 415
    UNPROCESSABLE_ENTITY = 422
    INTERNAL_SERVER_ERROR = 500
    REQUEST_TIMEOUT = 408
    PAYLOAD_TOO_LARGE = 413
    HEADERS_TOO_LARGE = 431
    SERVICE_UNAVAILABLE = 503
    UNAUTHORIZED = 401
    # Confluent's security plugin
    FORBIDDEN = 40301
    # schema exporters (schema linking)
    EXPORTER_NOT_FOUND = 40450
    INVALID_EXPORTER_NAME = 40950
    INVALID_EXPORTER_CONFIG = 40951
    INVALID_EXPORTER_SUBJECTS = 40952
    EXPORTER_ALREADY_EXISTS = 40960
    EXPORTER_ALREADY_RUNNING = 40961
    EXPORTER_NOT_PAUSED = 40963
    TOO_MANY_EXPORTERS = 40964
    # the DEK registry (Confluent's DekRegistryErrors)
    KEY_NOT_FOUND = 40470
    KEY_NOT_SOFT_DELETED = 40471
    KEY_SOFT_DELETED = 40472
    KEY_ALREADY_EXISTS = 40971
    INVALID_KEY = 42271
    KEY_REFERENCE_EXISTS = 42272
    DEK_GENERATION_FAILED = 50070

    @property
    def status(self) -> int:
        """The HTTP status of an answer with this code: the code itself, or a Confluent code's first three digits."""
        return self if self < 1000 else self // 100


class ApiError(Exception):
    """An error answer: HTTP status plus Confluent's ``{"error_code", "message"}`` body, and any headers the
    answer needs (``Retry-After``)."""

    def __init__(self, status: int, error_code: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message
        #: extra response headers (``WWW-Authenticate`` of a 401)
        self.headers = headers


def _error(code: ErrorCode, message: str, headers: tuple[tuple[str, str], ...] = ()) -> ApiError:
    return ApiError(code.status, code, message, headers)


def _naming(code: ErrorCode, template: str) -> Callable[[object], ApiError]:
    """The factory of ``code``'s errors about one thing the client named (a subject, a key, an exporter): its
    name, clipped, stands at ``{}`` in ``template``."""

    def error(name: object) -> ApiError:
        return _error(code, template.format(clip(name)))

    return error


def _with_message(code: ErrorCode) -> Callable[[str], ApiError]:
    """The factory of ``code``'s errors whose message its caller words (a parser's detail, a store's failure)."""

    def error(message: str) -> ApiError:
        return _error(code, message)

    return error


# 401 / 403
def unauthorized(reason: str, challenges: list[str]) -> ApiError:
    return _error(ErrorCode.UNAUTHORIZED, f"Unauthorized: {reason}", tuple(("www-authenticate", c) for c in challenges))


def forbidden(operation: str, resource: str) -> ApiError:
    """Confluent's security plugin's wording: ``User is denied operation Write on Subject: orders``."""
    return _error(ErrorCode.FORBIDDEN, f"User is denied operation {operation} on {resource}")


#: characters of one piece of client input an error message repeats (a subject, a version, a parser's detail)
MAX_ECHO = 1000


def clip(text: object, limit: int = MAX_ECHO) -> str:
    """``text`` as an error message may repeat it: whole when short, else its start and end around a note of
    how much was left out (a 1 MB bad default must not come back whole)."""
    s = str(text)
    if len(s) <= limit:
        return s
    half = limit // 2
    return f"{s[:half]}...({len(s) - 2 * half} characters omitted)...{s[-half:]}"


# 404s
subject_not_found = _naming(ErrorCode.SUBJECT_NOT_FOUND, "Subject '{}' not found.")


version_not_found = _naming(ErrorCode.VERSION_NOT_FOUND, "Version {} not found.")


def schema_not_found(schema_id: int | str | None = None) -> ApiError:
    return _error(
        ErrorCode.SCHEMA_NOT_FOUND, "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    )


# A delete refused because of what an earlier delete did or did not do, worded as Confluent does (no space
# after the first full stop either).
_SOFT_DELETED = " was soft deleted.Set permanent=true to delete permanently"
_NOT_SOFT_DELETED = " was not deleted first before being permanently deleted"


def _named(subject: str, version: int | None = None) -> str:
    """A subject, or one of its versions, as Confluent's messages name it."""
    return f"Subject '{clip(subject)}'" + ("" if version is None else f" Version {version}")


def subject_soft_deleted(subject: str) -> ApiError:
    return _error(ErrorCode.SUBJECT_SOFT_DELETED, _named(subject) + _SOFT_DELETED)


def subject_not_soft_deleted(subject: str) -> ApiError:
    return _error(ErrorCode.SUBJECT_NOT_SOFT_DELETED, _named(subject) + _NOT_SOFT_DELETED)


def version_soft_deleted(subject: str, version: int) -> ApiError:
    return _error(ErrorCode.VERSION_SOFT_DELETED, _named(subject, version) + _SOFT_DELETED)


def version_not_soft_deleted(subject: str, version: int) -> ApiError:
    return _error(ErrorCode.VERSION_NOT_SOFT_DELETED, _named(subject, version) + _NOT_SOFT_DELETED)


def subject_config_not_found(subject: str) -> ApiError:
    return _error(ErrorCode.SUBJECT_COMPATIBILITY_NOT_CONFIGURED, _not_configured(subject, "compatibility"))


def subject_mode_not_found(subject: str) -> ApiError:
    return _error(ErrorCode.SUBJECT_MODE_NOT_CONFIGURED, _not_configured(subject, "mode"))


def _not_configured(subject: str, setting: str) -> str:
    return f"{_named(subject)} does not have subject-level {setting} configured"


association_not_found = _naming(ErrorCode.ASSOCIATION_NOT_FOUND, "Association for '{}' not found.")


# associations (Confluent 8): the codes and texts of Confluent's client-side mock, which mirrors the server's
def invalid_association(prop: str, detail: str) -> ApiError:
    return _error(
        ErrorCode.INVALID_ASSOCIATION,
        f"The association specified an invalid value for property: '{clip(prop)}', detail: {detail}",
    )


def invalid_association_parameters() -> ApiError:
    return _error(ErrorCode.INVALID_ASSOCIATION, "Association parameters are invalid")


def association_for_resource_exists(association_type: str, resource_id: str) -> ApiError:
    return _error(
        ErrorCode.INVALID_ASSOCIATION,
        f"An association of type '{clip(association_type)}' already exists for resource '{clip(resource_id)}'",
    )


def association_for_subject_exists(association_type: str, subject: str) -> ApiError:
    return _error(
        ErrorCode.ASSOCIATION_FOR_SUBJECT_EXISTS,
        f"An association of type '{clip(association_type)}' already exists for subject '{clip(subject)}'",
    )


def strong_association_for_subject_exists(association_type: str, subject: str) -> ApiError:
    return _error(
        ErrorCode.STRONG_ASSOCIATION_FOR_SUBJECT_EXISTS,
        f"A strong association of type '{clip(association_type)}' already exists for subject '{clip(subject)}'",
    )


no_active_subject_version = _naming(
    ErrorCode.NO_ACTIVE_SUBJECT_VERSION, "No active (non-deleted) version exists for subject '{}'"
)


def association_frozen(association_type: str, subject: str) -> ApiError:
    return _error(
        ErrorCode.ASSOCIATION_FROZEN,
        f"The association of type '{clip(association_type)}' is frozen for subject '{clip(subject)}'",
    )


# schema exporters: 40450 and Confluent's 409xx
exporter_not_found = _naming(ErrorCode.EXPORTER_NOT_FOUND, "Exporter '{}' not found.")


invalid_exporter_name = _with_message(ErrorCode.INVALID_EXPORTER_NAME)


invalid_exporter_config = _with_message(ErrorCode.INVALID_EXPORTER_CONFIG)


invalid_exporter_subjects = _with_message(ErrorCode.INVALID_EXPORTER_SUBJECTS)


exporter_already_exists = _naming(ErrorCode.EXPORTER_ALREADY_EXISTS, "Exporter '{}' already exists.")


exporter_already_running = _naming(ErrorCode.EXPORTER_ALREADY_RUNNING, "Exporter '{}' is already running.")


exporter_not_paused = _naming(ErrorCode.EXPORTER_NOT_PAUSED, "Exporter '{}' is not paused.")


def too_many_exporters(limit: int) -> ApiError:
    return _error(ErrorCode.TOO_MANY_EXPORTERS, f"Too many exporters: at most {limit} may exist.")


# 409
def incompatible_schema(subject: str, details: list[str]) -> ApiError:
    return _error(
        ErrorCode.INCOMPATIBLE_SCHEMA,
        f'Schema being registered is incompatible with an earlier schema for subject "{clip(subject)}", '
        f"details: [{', '.join(details)}]",
    )


# 422s
invalid_schema = _with_message(ErrorCode.INVALID_SCHEMA)


def limit_exceeded(what: str, limit: int, option: str | None = None) -> ApiError:
    """A schema past one of the registry's limits (``registry/limits.py``): 42201 naming the limit and the
    option that sets it."""
    return invalid_schema(f"Invalid schema: {what} exceeds the limit of {limit}" + (f" ({option})" if option else ""))


invalid_version = _naming(
    ErrorCode.INVALID_VERSION,
    "The specified version '{}' is not a valid version id. "
    'Allowed values are between [1, 2^31-1] and the string "latest"',
)


def invalid_compatibility_level() -> ApiError:
    return _error(
        ErrorCode.INVALID_COMPATIBILITY_LEVEL,
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, "
        "forward_transitive, and full_transitive",
    )


def invalid_compatibility_policy(policy: str) -> ApiError:
    """Confluent stores an unknown ``compatibilityPolicy`` as absent (a silent STRICT); a typo is refused here."""
    return _error(
        ErrorCode.INVALID_COMPATIBILITY_LEVEL,
        f"Invalid compatibility policy '{clip(policy, 100)}'. Valid values are STRICT and LENIENT "
        "(Confluent's LOGICAL is not supported)",
    )


def invalid_mode() -> ApiError:
    return _error(ErrorCode.INVALID_MODE, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")


operation_not_permitted = _with_message(ErrorCode.OPERATION_NOT_PERMITTED)


def reference_exists(subject: str, version: int) -> ApiError:
    """Names the referenced version as Confluent prints its ``SchemaKey``."""
    key = f"{{magic=1,keytype=SCHEMA,subject={clip(subject)},version={version}}}"
    return _error(ErrorCode.REFERENCE_EXISTS, f"One or more references exist to the schema {key}.")


invalid_subject = _naming(ErrorCode.INVALID_SUBJECT, "The specified subject '{}' is not a valid.")


def schema_too_large() -> ApiError:
    return _error(ErrorCode.SCHEMA_TOO_LARGE, "Register operation failed because schema is too large")


invalid_ruleset = _with_message(ErrorCode.INVALID_RULESET)


def context_not_empty(context: str) -> ApiError:
    return _error(ErrorCode.CONTEXT_NOT_EMPTY, f"The specified context '{context}' is not empty.")


# 5xx
store_error = _with_message(ErrorCode.STORE_ERROR)


store_timeout = _with_message(ErrorCode.OPERATION_TIMEOUT)


forwarding_failed = _with_message(ErrorCode.FORWARDING_FAILED)


def leader_not_known() -> ApiError:
    return _error(ErrorCode.UNKNOWN_LEADER, "Leader not known.")


# HTTP-level errors (status used as error code, as rest-utils does)
#: A request body field of the wrong type (a Jackson binding error in Confluent's registry).
unprocessable_entity = _with_message(ErrorCode.UNPROCESSABLE_ENTITY)


bad_request = _with_message(ErrorCode.BAD_REQUEST)


def http_error(status: int) -> ApiError:
    """An error of the HTTP layer (unknown path, wrong method...): the status is the code, the message its status
    line, as Jersey words it in Confluent's registry (``HTTP 404 Not Found``)."""
    return ApiError(status, status, f"HTTP {status} {HTTPStatus(status).phrase}")


def not_found_route() -> ApiError:
    return http_error(ErrorCode.NOT_FOUND)


def not_acceptable() -> ApiError:
    """No type the ``Accept`` header allows is one the registry produces (Jersey's answer in Confluent's)."""
    return http_error(ErrorCode.NOT_ACCEPTABLE)


def unsupported_media_type() -> ApiError:
    return http_error(ErrorCode.UNSUPPORTED_MEDIA_TYPE)


def internal_server_error() -> ApiError:
    return _error(ErrorCode.INTERNAL_SERVER_ERROR, "Internal server error")


def request_timeout(message: str) -> ApiError:
    return _error(ErrorCode.REQUEST_TIMEOUT, message, (("connection", "close"),))


def payload_too_large(limit: int) -> ApiError:
    return _error(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"Request body is larger than the limit of {limit} bytes (--max-request-bytes)",
        (("connection", "close"),),
    )


def overloaded(message: str, retry_after: int = 1) -> ApiError:
    """Too much schema work in progress: 503 with ``Retry-After``, which Confluent's clients retry with back-off
    (confluent-kafka, the Java ``RestService``, schemakit's own client), moving to the next URL where they
    have several."""
    return _error(ErrorCode.SERVICE_UNAVAILABLE, message, (("retry-after", str(retry_after)),))


# The DEK registry's errors, worded as Confluent's DekRegistryErrors
key_not_found = _naming(ErrorCode.KEY_NOT_FOUND, "Key '{}' not found")


key_not_soft_deleted = _naming(
    ErrorCode.KEY_NOT_SOFT_DELETED, "Key '{}' was not deleted first before being permanently deleted"
)


key_soft_deleted = _naming(ErrorCode.KEY_SOFT_DELETED, "Key '{}' must be undeleted first")


key_already_exists = _naming(ErrorCode.KEY_ALREADY_EXISTS, "Key '{}' already exists; use a different value")


def invalid_key(field: str) -> ApiError:
    return _error(ErrorCode.INVALID_KEY, f"Invalid or missing value for field '{field}' of key")


key_reference_exists = _naming(ErrorCode.KEY_REFERENCE_EXISTS, "One or more references exist to the key '{}'")


#: The KMS could not wrap or unwrap a shared KEK's DEK (it refused, is unreachable, or its driver is missing).
dek_generation_failed = _with_message(ErrorCode.DEK_GENERATION_FAILED)
