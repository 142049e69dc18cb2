"""The JVM engine on Spark Connect: ``from_registry`` as an extension expression for the server's plugin.

A Connect client has no py4j gateway, so the Catalyst expression cannot be built on the client as
``jvm_engine.decode_column`` does. Connect's way for server-side expressions is an extension: the client sends a
protobuf ``Any`` in the plan, and a plugin the server was started with turns it into a Catalyst expression. Ours is
``schemakit.spark.ConnectDecodePlugin`` (in the jar, ``java/``): the ``Any`` (type ``TYPE_URL``) holds Connect's own
``Expression`` message, an unresolved function ``from_registry(column, spec JSON, type JSON)``, which the plugin
reads into the same ``RegistryDecodeExpression`` the classic path builds. The server needs the jar on its
``spark.jars`` and ``spark.connect.extensions.expression.classes=schemakit.spark.ConnectDecodePlugin``; the client
asks the server for that setting once per session (``server_reason``) before using it.

The spec travels in the plan as the classic path's does (it holds the registry options); the expression prints
as ``from_registry(<col>)``.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from pyspark.sql import Column, SparkSession

__all__ = ["PLUGINS_SETTING", "PLUGIN_CLASS", "TYPE_URL", "decode_column", "server_reason"]

PLUGIN_CLASS = "schemakit.spark.ConnectDecodePlugin"
PLUGINS_SETTING = "spark.connect.extensions.expression.classes"
TYPE_URL = "type.googleapis.com/schemakit.spark.FromRegistry"  # ConnectDecodePlugin.TYPE_URL

_lock = threading.Lock()
_reasons: dict[str, str | None] = {}


def server_reason(spark: SparkSession) -> str | None:
    """Why the Connect server behind ``spark`` cannot run the JVM engine, or None when it loads the plugin
    (asked once per session: the setting is static, fixed when the server started)."""
    session_id: str = getattr(spark, "session_id")  # noqa: B009 (only Connect sessions have it)
    with _lock:
        if session_id not in _reasons:
            plugins = spark.conf.get(PLUGINS_SETTING, "") or ""
            _reasons[session_id] = (
                None
                if PLUGIN_CLASS in [name.strip() for name in plugins.split(",")]
                else (
                    f"the Spark Connect server does not load the JVM engine ({PLUGINS_SETTING}={plugins!r}): start it "
                    f"with serdes.spark.jar_path() on spark.jars and {PLUGINS_SETTING}={PLUGIN_CLASS}"
                )
            )
        return _reasons[session_id]


def decode_column(col: Column, spec_json: str, type_json: str) -> Column:
    """``col`` decoded by the server's ``RegistryDecodeExpression`` built from ``spec_json`` (``jvm_engine``'s
    decoder spec) with result type ``type_json`` (Spark's JSON form)."""
    from pyspark.sql.connect.column import Column as ConnectColumn

    return ConnectColumn(_extension_class()(col._expr, spec_json, type_json))


@functools.cache
def _extension_class() -> type:
    from pyspark.sql.connect import proto
    from pyspark.sql.connect.expressions import Expression

    class FromRegistry(Expression):
        """The extension expression (a Connect expression subclass: pyspark has no public API for extensions)."""

        def __init__(self, child: Any, spec_json: str, type_json: str) -> None:
            super().__init__()
            self._child, self._spec_json, self._type_json = child, spec_json, type_json

        def to_plan(self, session: Any) -> Any:
            call = proto.Expression()
            call.unresolved_function.function_name = "from_registry"
            call.unresolved_function.arguments.append(self._child.to_plan(session))
            for text in (self._spec_json, self._type_json):
                call.unresolved_function.arguments.add().literal.string = text
            plan = self._create_proto_expression()
            plan.extension.type_url = TYPE_URL
            plan.extension.value = call.SerializeToString()
            return plan

        @property
        def children(self) -> list[Any]:
            return [self._child]

        def __repr__(self) -> str:  # the spec holds the registry options: never shown
            return f"from_registry({self._child})"

    return FromRegistry
