"""schemakit's schema registry: Confluent's REST API over a log (see docs/architecture.md).

from registry import RegistryConfig, serve
serve(RegistryConfig(log_url="sqlite:///./data", port=8081))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public name -> the module that defines it. Nothing is imported until a name is used, so that importing one
# small module (``registry.schemas_topic``, ``registry.errors``) does not load the server and its log.
_EXPORTS: dict[str, str] = {
    "DEFAULTS": "registry.config",
    "RegistryConfig": "registry.config",
    "ApiError": "registry.errors",
    "ErrorCode": "registry.errors",
    "Mode": "registry.modes",
    "RegistryApp": "registry.app",
    "StartupError": "registry.server",
    "build_app": "registry.server",
    "serve": "registry.server",
}

if TYPE_CHECKING:
    from registry.app import RegistryApp
    from registry.config import DEFAULTS, RegistryConfig
    from registry.errors import ApiError, ErrorCode
    from registry.modes import Mode
    from registry.server import StartupError, build_app, serve


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'registry' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "DEFAULTS",
    "ApiError",
    "ErrorCode",
    "Mode",
    "RegistryApp",
    "RegistryConfig",
    "StartupError",
    "build_app",
    "serve",
]
