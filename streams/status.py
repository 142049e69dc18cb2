"""An application's status as its query servers tell it: ``schemakit streams status --url http://instance``.

Two halves, one vocabulary. The server half, ``instance_status``, is the body of an instance's ``GET /v1/tasks``:
its state and, for every task it holds, the role (active, standby, warm-up), the task's state, how many input
records it has not processed yet (``input_lag``, active tasks), how many changelog records its state is behind
(``changelog_lag``, as the instances last reported it), and, while restoring, what is left to restore. The
client half, ``application_status``, asks one instance for the application's ``/v1/metadata`` (every instance,
its ``application_server``, its active and standby tasks), then each instance for its ``/v1/tasks``; an instance
that does not answer is listed with the reason, not left out. ``status_table`` prints it for people.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

__all__ = ["StatusError", "application_status", "instance_status", "status_table"]

_ROLES = {"STANDBY": "standby", "WARMUP": "warm-up"}


class StatusError(Exception):
    """The instance asked for the application's metadata could not give it."""


def instance_status(
    metrics: Mapping[str, Any], input_lags: Mapping[str, int], changelog_lags: Mapping[str, int]
) -> dict[str, Any]:
    """``GET /v1/tasks``: this instance's state and tasks, from ``app.metrics()``, ``app.input_lags()`` and
    this instance's entry of ``app.task_lags()``."""
    tasks = []
    for task, entry in metrics["task_states"].items():
        state = entry["state"]
        item: dict[str, Any] = {
            "task": task,
            "role": _ROLES.get(state, "active"),
            "state": state,
            "input_lag": input_lags.get(task),
            "changelog_lag": changelog_lags.get(task, entry.get("lag")),
        }
        if "to_restore" in entry:
            item["restore_remaining"] = max(0, entry["to_restore"] - entry["restored"])
        if "processed" in entry:
            item["processed"] = entry["processed"]
        tasks.append(item)
    return {
        "instance": metrics["instance"],
        "state": metrics["state"],
        "generation": metrics["generation"],
        "leader": metrics["leader"],
        "tasks": tasks,
    }


def _get(client: httpx.Client, url: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object at ``url``, which must carry ``fields``; anything else is a ``StatusError`` saying what."""
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        raise StatusError(f"GET {url}: {exc or type(exc).__name__}") from exc
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200:
        message = body.get("message") if isinstance(body, dict) else None
        raise StatusError(f"GET {url}: HTTP {response.status_code}: {message or response.text[:200]}")
    if not isinstance(body, dict) or any(f not in body for f in fields):
        raise StatusError(f"GET {url}: not a schemakit streams query server's answer: {response.text[:200]}")
    return body


def application_status(url: str, timeout: float = 5.0) -> dict[str, Any]:
    """The application's status as the instance at ``url`` (an ``application_server``) and its peers report it:
    ``application_id``, ``generation``, ``asked`` (the instance that answered the metadata), ``instances``
    (each with its server, state, active and standby tasks, or ``error`` if it did not answer) and ``tasks``
    (one entry per task on each instance that answered, sorted by task then role)."""
    base = url.rstrip("/")
    with httpx.Client(timeout=timeout) as client:
        metadata = _get(client, f"{base}/v1/metadata", ("application_id", "instance", "generation", "instances"))
        instances: list[dict[str, Any]] = []
        tasks: list[dict[str, Any]] = []
        for member in metadata["instances"]:
            host = member["host"]
            entry: dict[str, Any] = {
                "instance": host["instance"],
                "server": host["server"],
                "state": None,
                "leader": None,
                "active_tasks": member["tasks"],
                "standby_tasks": member["standby_tasks"],
            }
            instances.append(entry)
            if host["server"] is None:
                entry["error"] = "it has no application_server"
                continue
            try:
                local = _get(client, f"{host['server'].rstrip('/')}/v1/tasks", ("state", "leader", "tasks"))
            except StatusError as exc:
                entry["error"] = str(exc)
                continue
            entry["state"], entry["leader"] = local["state"], local["leader"]
            tasks += [{"instance": host["instance"], **task} for task in local["tasks"]]
    tasks.sort(key=lambda t: (_task_key(t["task"]), t["role"] != "active", t["instance"]))
    return {
        "application_id": metadata["application_id"],
        "generation": metadata["generation"],
        "asked": metadata["instance"],
        "instances": instances,
        "tasks": tasks,
    }


def _task_key(task: str) -> tuple[int, int]:
    sub, _, partition = task.partition("_")
    return (int(sub), int(partition)) if sub.isdigit() and partition.isdigit() else (-1, -1)


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _columns(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell (streams may not import the command line's ``schemakit.output``)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows])


def status_table(status: Mapping[str, Any]) -> str:
    """The status for people: a line for the application, a table of instances, a table of tasks."""
    instances = []
    for inst in status["instances"]:
        state = f"unreachable: {inst['error']}" if inst.get("error") else _cell(inst["state"])
        if inst.get("leader"):
            state += " (leader)"
        active, standby = ", ".join(inst["active_tasks"]) or "-", ", ".join(inst["standby_tasks"]) or "-"
        instances.append([inst["instance"], _cell(inst["server"]), active, standby, state])
    tasks = [
        [
            t["task"],
            t["instance"],
            t["role"],
            t["state"],
            _cell(t["input_lag"]),
            _cell(t["changelog_lag"]),
            _cell(t.get("restore_remaining")),
        ]
        for t in status["tasks"]
    ]
    return "\n".join(
        [
            f"application {status['application_id']}, assignment generation {status['generation']}",
            "",
            _columns(["INSTANCE", "SERVER", "ACTIVE", "STANDBY", "STATE"], instances),
            "",
            _columns(["TASK", "INSTANCE", "ROLE", "STATE", "INPUT LAG", "CHANGELOG LAG", "TO RESTORE"], tasks),
        ]
    )
