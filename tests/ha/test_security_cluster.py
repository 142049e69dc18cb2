"""Three instances on the test broker with HTTPS, basic and client-certificate authentication: followers forward
writes to the https leader (verified with --inter-node-ca), and the leader authorizes them, for callers it can
authenticate again (basic) and for certificate callers whose identity the follower signs (--inter-node-secret)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.support.credentials import Pki, UsersFile
from tests.support.registry_cluster import wait_for_leader, wait_writable
from tests.support.registry_process import RegistryProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ADMIN = ("admin", "admin-pw")


def test_forwarded_writes_are_authorized_by_the_leader(
    start_registry: Callable[..., RegistryProcess],
    ha_log_url: str,
    kafka_bootstrap: str,
    pki: Pki,
    users_file: UsersFile,
) -> None:
    users_file.user("admin", "admin-pw").allow("admin", "Write", ".*")
    users_file.user("alice", "alice-pw").allow("alice", "Write", "Subject:team-a-")
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-a-")
    users_file.allow("CN=orders-app,O=Acme", "Write", "Subject:orders-")
    path = users_file.save()
    tag = uuid.uuid4().hex[:10]
    topic, election, group = f"schemas-{tag}", f"schemas-{tag}-leader", f"sr-{tag}"
    nodes = [
        start_registry(
            ha_log_url,
            "--topic",
            topic,
            "--election-topic",
            election,
            "--group-id",
            group,
            "--auth",
            "basic,mtls",
            "--users-file",
            path,
            "--inter-node-secret",
            "cluster-secret",
            *pki.serve_options(),
            "--inter-node-ca",
            pki.ca,
            scheme="https",
            probe={"verify": pki.context(), "auth": ADMIN},
            wait=False,  # the three start side by side
        )
        for _ in range(3)
    ]
    for node in nodes:
        node.wait_ready()
    leader_url = wait_for_leader(kafka_bootstrap, election)["url"]
    assert leader_url.startswith("https://127.0.0.1:")
    leader = next(n for n in nodes if n.url == leader_url)
    followers = [n for n in nodes if n is not leader]
    tls = pki.context()
    app_tls = pki.context(pki.client("orders-app"))
    billing_tls = pki.context(pki.client("billing-app"))
    with httpx.Client(verify=tls, timeout=30) as http:
        # every follower knows the leader
        wait_writable([n.url for n in followers], "warmup", timeout=60, verify=tls, auth=ADMIN)
        follower = followers[0]
        body = {"schema": '"string"'}
        # basic: the leader authenticates the forwarded Authorization again and authorizes
        ok = http.post(f"{follower.url}/subjects/team-a-x/versions", json=body, auth=("alice", "alice-pw"))
        assert ok.status_code == 200, ok.text
        denied = http.post(f"{follower.url}/subjects/team-a-x/versions", json=body, auth=("bob", "bob-pw"))
        assert denied.status_code == 403
        assert denied.json() == {"error_code": 40301, "message": "User is denied operation Write on Subject: team-a-x"}
        assert http.get(f"{follower.url}/subjects/team-a-x/versions", auth=("bob", "bob-pw")).json() == [1]
        # a stranger gets 401 from the follower itself
        stranger = http.post(f"{follower.url}/subjects/team-a-x/versions", json=body, auth=("bob", "wrong"))
        assert stranger.status_code == 401
    # client certificates: the follower signs the caller's subject, the leader authorizes that principal
    with httpx.Client(verify=app_tls, timeout=30) as app:
        assert app.post(f"{followers[1].url}/subjects/orders-value/versions", json=body).status_code == 200
        assert app.get(f"{followers[1].url}/subjects/orders-value/versions").json() == [1]
    with httpx.Client(verify=billing_tls, timeout=30) as billing:
        refused = billing.post(f"{followers[1].url}/subjects/orders-value/versions", json={"schema": '"long"'})
        assert refused.json() == {
            "error_code": 40301,
            "message": "User is denied operation Write on Subject: orders-value",
        }
    leader_log, follower_log = leader.log_file.read_text(), followers[1].log_file.read_text()
    line = 'audit outcome=denied principal="CN=billing-app,O=Acme" mechanism=forwarded operation=Write'
    assert line in leader_log and line not in follower_log
    assert "audit outcome=denied principal=bob mechanism=basic operation=Write resource=Subject:team-a-x" in leader_log
    # the leader believes no unsigned or badly signed identity, and never the TLS peer of a forwarded request
    with httpx.Client(verify=app_tls, timeout=30) as app:
        forged = app.post(
            f"{leader.url}/subjects/team-a-y/versions",
            json=body,
            headers={
                "X-Schemakit-Forwarded": "1",
                "X-Schemakit-Principal": "admin",
                "X-Schemakit-Principal-Signature": f"t={int(time.time())},v1={'0' * 64}",
            },
        )
        assert forged.status_code == 401
        assert forged.json()["message"] == "Unauthorized: the forwarded identity's signature does not verify"
        as_peer = app.post(
            f"{leader.url}/subjects/orders-value/versions", json=body, headers={"X-Schemakit-Forwarded": "1"}
        )
        assert as_peer.status_code == 401
