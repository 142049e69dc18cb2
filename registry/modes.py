"""The registry's modes (``/mode``), with Confluent's names."""

from __future__ import annotations

import enum


class Mode(enum.StrEnum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    IMPORT = "IMPORT"
    FORWARD = "FORWARD"  # global only; registers like IMPORT (ids and versions as given)


#: modes that refuse writes
READ_ONLY_MODES = frozenset({Mode.READONLY, Mode.READONLY_OVERRIDE})
#: modes that store schemas as given, with the caller's ids and versions
IMPORT_MODES = frozenset({Mode.IMPORT, Mode.FORWARD})
