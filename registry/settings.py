"""The config and mode in force (Confluent's ``/config`` and ``/mode``): for a subject, its context, or the registry.

Both are read from ``State`` as the log wrote them; what applies to a subject is its own value, else its
context's (the subject ``:.ctx:``), else the global one. ``Settings`` only reads: changing a config or a mode is
a write, and ``Service`` makes it (``put_config``, ``put_mode``...).
"""

from __future__ import annotations

from typing import Any

from compat import CompatibilityLevel
from registry import contexts, errors
from registry.modes import Mode
from registry.state import State


class Settings:
    """``default_compatibility`` is the level of a registry whose global config names none (``--compatibility``)."""

    def __init__(self, state: State, default_compatibility: CompatibilityLevel) -> None:
        self.state = state
        self.default_compatibility = default_compatibility

    # ---- what applies -----------------------------------------------------------------------------------

    def global_config(self) -> dict[str, Any]:
        cfg = {"compatibilityLevel": self.default_compatibility}
        cfg.update(self.state.configs.get(None) or {})
        return cfg

    def effective_config(self, subject: str) -> dict[str, Any]:
        """Subject config over its context's config (``:.ctx:``) over the global one."""
        cfg = self.global_config()
        configs = self.state.configs
        context_key = contexts.qualify(contexts.context_of(subject), "")
        if context_key != subject:
            cfg.update(configs.get(context_key) or {})
        cfg.update(configs.get(subject) or {})
        return cfg

    def effective_level(self, subject: str) -> CompatibilityLevel:
        return CompatibilityLevel.parse(str(self.effective_config(subject).get("compatibilityLevel")))

    def normalize_default(self, subject: str) -> bool:
        """Whether the subject's schemas are normalized when a request does not say (``?normalize=``)."""
        return bool(self.effective_config(subject).get("normalize", False))

    def effective_mode(self, subject: str | None) -> str:
        """Subject mode, else its context's mode (``:.ctx:``), else the global one."""
        modes = self.state.modes
        if subject is not None:
            if subject in modes:
                return modes[subject]
            context_key = contexts.qualify(contexts.context_of(subject), "")
            if context_key in modes:
                return modes[context_key]
        return modes.get(None, Mode.READWRITE)

    def mode_scope(self, subject: str) -> list[str]:
        """The subjects a mode of ``subject`` governs: itself, or every subject of a context (``:.ctx:``)."""
        context, name = contexts.split(subject)
        if name:
            return [subject]
        return [s for s in self.state.subjects if contexts.context_of(s) == context]

    # ---- what was set (GET /config, GET /mode) ----------------------------------------------------------

    def get_config(self, subject: str | None, *, default_to_global: bool) -> dict[str, Any]:
        if subject is None:
            return self.global_config()
        cfg = self.state.configs.get(subject)
        if cfg is None:
            if default_to_global:
                return self.global_config()
            raise errors.subject_config_not_found(subject)
        if "compatibilityLevel" not in cfg:
            return {**cfg, "compatibilityLevel": self.global_config()["compatibilityLevel"]}
        return dict(cfg)

    def get_mode(self, subject: str | None, *, default_to_global: bool) -> str:
        if subject is None:
            return self.state.modes.get(None, Mode.READWRITE)
        m = self.state.modes.get(subject)
        if m is None:
            if default_to_global:
                return self.state.modes.get(None, Mode.READWRITE)
            raise errors.subject_mode_not_found(subject)
        return m
