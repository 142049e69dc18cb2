"""Confluent's error codes and messages, in one place. Every error the API returns is an ``ApiError``."""

from __future__ import annotations


class ApiError(Exception):
    """An error answer: HTTP status plus Confluent's ``{"error_code", "message"}`` body."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


# 404s
def subject_not_found(subject: str) -> ApiError:
    return ApiError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: object) -> ApiError:
    return ApiError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> ApiError:
    return ApiError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> ApiError:
    return ApiError(
        404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> ApiError:
    return ApiError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> ApiError:
    return ApiError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> ApiError:
    return ApiError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted",
    )


def subject_config_not_found(subject: str) -> ApiError:
    return ApiError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_found(subject: str) -> ApiError:
    return ApiError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def association_not_found(resource: str) -> ApiError:
    return ApiError(404, 40410, f"Association for '{resource}' not found.")


# 409
def incompatible_schema(subject: str, details: list[str]) -> ApiError:
    return ApiError(
        409,
        409,
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
        f"details: [{', '.join(details)}]",
    )


# 422s
def invalid_schema(message: str) -> ApiError:
    return ApiError(422, 42201, message)


def invalid_version(version: str) -> ApiError:
    return ApiError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. "
        'Allowed values are between [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level() -> ApiError:
    return ApiError(
        422,
        42203,
        "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, "
        "forward_transitive, and full_transitive",
    )


def invalid_mode() -> ApiError:
    return ApiError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")


def operation_not_permitted(message: str) -> ApiError:
    return ApiError(422, 42205, message)


def reference_exists(what: str) -> ApiError:
    return ApiError(422, 42206, f"One or more references exist to the schema {what}.")


def invalid_subject(subject: str) -> ApiError:
    return ApiError(422, 42208, f"The specified subject '{subject}' is not a valid.")


def schema_too_large() -> ApiError:
    return ApiError(422, 42209, "Register operation failed because schema is too large")


def invalid_ruleset(message: str) -> ApiError:
    return ApiError(422, 42210, message)


# 5xx
def store_error(message: str) -> ApiError:
    return ApiError(500, 50001, message)


def store_timeout(message: str) -> ApiError:
    return ApiError(500, 50002, message)


def forwarding_failed(message: str) -> ApiError:
    return ApiError(500, 50003, message)


def leader_not_known() -> ApiError:
    return ApiError(500, 50004, "Leader not known.")


# HTTP-level errors (status used as error code, as rest-utils does)
def bad_request(message: str) -> ApiError:
    return ApiError(400, 400, message)


def not_found_route() -> ApiError:
    return ApiError(404, 404, "HTTP 404 Not Found")


def method_not_allowed() -> ApiError:
    return ApiError(405, 405, "HTTP 405 Method Not Allowed")


def unsupported_media_type() -> ApiError:
    return ApiError(415, 415, "HTTP 415 Unsupported Media Type")
