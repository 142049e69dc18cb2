"""``schemakit streams status`` against two running instances with query servers: the instances and their
active and standby tasks are the apps' own assignment, each task's state is what its instance reports, and the
lags (input records not processed, changelog records behind) come down to zero once everything is processed
and the standbys caught up; a task held on a record shows the records behind it as its input lag. An address
where nothing listens, or a server that is not a query server, is a clear error."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsApp, StreamsBuilder
from streams.log import open_log
from tests.streams.topologies import two_served_instances
from tests.support.cli import run_in_process
from tests.support.http_stub import StubServer
from tests.support.ports import free_port
from tests.support.topics import create_topics, produce
from tests.support.waiting import wait_for

PARTITIONS = 4
RECORDS = [(f"k{i % 25:02d}", {"v": i}) for i in range(200)]


@pytest.fixture
def two_instances(log_url: str, tmp_path: Path, names: Callable[[str], str]) -> Iterator[tuple[StreamsApp, StreamsApp]]:
    lg = open_log(log_url)
    src, out, app_id = names("in"), names("out"), names("status")
    create_topics(lg, PARTITIONS, src, out)
    produce(lg, src, RECORDS)

    with two_served_instances(src, out, app_id, log_url, tmp_path) as (first, second):
        wait_for(
            lambda: all(len(a.tasks()) == len(a.standby_tasks()) == PARTITIONS // 2 for a in (first, second)),
            what="two active tasks and two standbys each",
        )
        yield first, second
    lg.close()


def _status(capsys: pytest.CaptureFixture[str], url: str) -> dict[str, Any]:
    result = run_in_process(capsys, "streams", "status", "--url", url, "--output", "json")
    assert result.code == 0, result.err
    return result.json()


def test_status_lists_each_instances_tasks_as_assigned(
    capsys: pytest.CaptureFixture[str], two_instances: tuple[StreamsApp, StreamsApp]
) -> None:
    first, second = two_instances
    apps = {a.instance_id: a for a in two_instances}

    def settled() -> dict[str, Any] | None:
        status = _status(capsys, str(second.config.application_server))
        lags_zero = all(t["input_lag"] in (0, None) and t["changelog_lag"] == 0 for t in status["tasks"])
        assigned = all(
            (i["active_tasks"], i["standby_tasks"])
            == (apps[i["instance"]].tasks(), apps[i["instance"]].standby_tasks())
            for i in status["instances"]
        )
        return status if lags_zero and assigned and len(status["tasks"]) == 2 * PARTITIONS else None

    status = wait_for(settled, what="every record processed, standbys caught up, status settled")
    assert status["application_id"] == first.application_id and status["asked"] == second.instance_id
    assert status["generation"] == first.assignment().generation
    assert {i["instance"]: i["server"] for i in status["instances"]} == {
        a.instance_id: a.config.application_server for a in two_instances
    }
    assert sum(bool(i["leader"]) for i in status["instances"]) == 1
    for inst in status["instances"]:
        app = apps[inst["instance"]]
        assert inst["state"] == "RUNNING" and "error" not in inst
        mine = {t["task"]: t for t in status["tasks"] if t["instance"] == app.instance_id}
        states = app.metrics()["task_states"]
        assert {t: (v["role"], v["state"]) for t, v in mine.items()} == {
            **{t: ("active", "RUNNING") for t in app.tasks()},
            **{t: ("standby", states[t]["state"]) for t in app.standby_tasks()},
        }
        for task in app.tasks():
            # counters restart when a task moves (the first instance may have processed it all alone)
            assert mine[task]["input_lag"] == 0 and mine[task]["processed"] == states[task]["processed"]
    # every task is active on one instance and standby on the other
    for role in ("active", "standby"):
        assert sorted(t["task"] for t in status["tasks"] if t["role"] == role) == [f"0_{p}" for p in range(PARTITIONS)]

    # For people: a table of instances, then one of tasks.
    result = run_in_process(capsys, "streams", "status", "--url", str(first.config.application_server))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"application {first.application_id}, assignment generation {status['generation']}"
    assert lines[2].split() == ["INSTANCE", "SERVER", "ACTIVE", "STANDBY", "STATE"]
    for app in two_instances:
        row = next(line for line in lines if line.startswith(app.instance_id))
        assert f"{app.config.application_server}  {', '.join(app.tasks())}  {', '.join(app.standby_tasks())}" in row
    task_rows = [line.split() for line in lines[lines.index("") + 1 + len(two_instances) + 1 :] if line]
    assert task_rows[0] == ["TASK", "INSTANCE", "ROLE", "STATE", "INPUT", "LAG", "CHANGELOG", "LAG", "TO", "RESTORE"]
    assert [row[:3] for row in task_rows[1:]] == [[t["task"], t["instance"], t["role"]] for t in status["tasks"]]


def test_status_of_an_address_where_nothing_listens(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_in_process(capsys, "streams", "status", "--url", url, "--timeout", "2")
    assert result.code == 1
    assert result.err.startswith(f"schemakit streams status: GET {url}/v1/metadata: ")


def test_input_lag_counts_the_records_a_task_has_not_processed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, names: Callable[[str], str]
) -> None:
    """A task held on its first record: the nine behind it are its input lag, until it is let go."""
    url = f"sqlite:///{tmp_path / 'log'}"
    lg = open_log(url)
    src, app_id = names("in"), names("lag")
    create_topics(lg, 1, src)
    produce(lg, src, [(f"k{i}", {"v": i}) for i in range(10)])
    release = threading.Event()
    b = StreamsBuilder()
    b.stream(src, key=str, value="json").foreach(lambda k, v: release.wait(30) if v["v"] == 0 else None)
    app = StreamsApp(
        b.build(), app_id, url, state_dir=tmp_path / "state", application_server=f"http://127.0.0.1:{free_port()}"
    )
    try:
        with app:
            server = str(app.config.application_server)

            def lag_of_0_0(status: dict[str, Any]) -> Any:
                return next((t["input_lag"] for t in status["tasks"] if t["task"] == "0_0"), None)

            wait_for(lambda: lag_of_0_0(_status(capsys, server)) == 9, what="a lag of the nine records held back")
            release.set()
            wait_for(lambda: lag_of_0_0(_status(capsys, server)) == 0, what="no lag once let go")
    finally:
        release.set()
        lg.close()


def test_status_of_a_server_that_is_not_a_query_server(capsys: pytest.CaptureFixture[str]) -> None:
    with StubServer("application/json", lambda: b'{"version": "7.6.0"}') as other:
        result = run_in_process(capsys, "streams", "status", "--url", other.url)
    assert result.code == 1
    assert result.err == (
        f"schemakit streams status: GET {other.url}/v1/metadata: not a schemakit streams query server's answer: "
        '{"version": "7.6.0"}\n'
    )
