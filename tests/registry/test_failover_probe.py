"""How a follower judges the announced leader dead: only a refused connection (the host answers, nothing
listens) counts; a listener, even one too busy or paused to accept, or a bad URL never does."""

from __future__ import annotations

import socket

from registry.leader import refuses_connections
from tests.support.ports import free_port


def test_only_a_refused_connection_proves_the_leader_gone() -> None:
    assert refuses_connections(f"http://127.0.0.1:{free_port()}") is True
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(0)
        url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        assert refuses_connections(url) is False
    with socket.socket() as paused:
        # A process that never accepts (a SIGSTOPped leader): once its backlog is full the kernel drops
        # further handshakes and the probe times out, which proves nothing.
        paused.bind(("127.0.0.1", 0))
        paused.listen(0)
        port = paused.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            assert refuses_connections(f"http://127.0.0.1:{port}", timeout=0.2) is False
    assert refuses_connections("http://127.0.0.1:notaport") is False
    assert refuses_connections("not a url") is False
