"""A local Spark Connect server for the tests, in a process of its own.

``SparkSession.builder.remote("local[2]")`` would start the server inside the test process, and pyspark refuses
that while the classic session of the other Spark tests (``tests/support/spark.py``) runs there. So the server is
what ``remote("local[2]")`` starts (a ``local[2]`` session with Spark's Connect plugin), run by
``python -m tests.support.spark_connect PORT [key=value ...]`` until its standard input closes, and the tests
connect to ``sc://127.0.0.1:PORT`` as a remote client would: the test process has no JVM of the server's, so a
py4j call on the Connect session would fail there as it does for a real remote user. Its Python workers run this
interpreter from the working directory, so they import the code under test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tests.support.ports import free_port
from tests.support.spark import TEST_CONF
from tests.support.waiting import wait_for

SERVER_CONF = {
    "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
    "spark.connect.grpc.binding.address": "127.0.0.1",
    **TEST_CONF,
}


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def connect_server(conf: Mapping[str, str] | None = None, timeout: float = 120.0) -> Iterator[str]:
    """A Connect server with ``conf`` added to its settings; yields its ``sc://`` URL and stops it on exit."""
    port = free_port()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "TZ": "UTC"}
    settings = [f"{key}={value}" for key, value in (conf or {}).items()]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.spark_connect", str(port), *settings],
        stdin=subprocess.PIPE,
        env=env,
    )
    try:
        wait_for(
            lambda: server.poll() is not None or _listening(port), timeout, interval=0.5, what="the Connect server"
        )
        if server.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited with status {server.returncode} (see its stderr)")
        yield f"sc://127.0.0.1:{port}"
    finally:
        assert server.stdin is not None
        server.stdin.close()  # the server stops its session and exits
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextmanager
def connect_session(url: str) -> Iterator[Any]:
    """A Spark Connect client session on ``url``, stopped on exit.

    ``SparkSession.builder.remote(url)`` refuses a remote session next to the classic session the other tests
    use, so this is pyspark's Connect builder, with what ``remote()`` adds: ``SPARK_CONNECT_MODE_ENABLED``, which
    makes ``pyspark.sql.functions`` build Connect columns. It is removed again on exit, for the classic tests.
    One at a time: the Connect builder returns the active session whatever its URL."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        session = ConnectSession.builder.remote(url).getOrCreate()
        try:
            yield session
        finally:
            session.stop()
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def main(argv: list[str]) -> None:
    from pyspark.sql import SparkSession

    port, settings = argv[0], dict(item.split("=", 1) for item in argv[1:])
    time.tzset()
    builder = SparkSession.builder.master("local[2]").appName("schemakit-connect-tests")
    for key, value in {**SERVER_CONF, "spark.connect.grpc.binding.port": port, **settings}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    sys.stdin.read()  # until the test process closes our standard input (or exits)
    session.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
