"""Bearer tokens: JWTs from an issuer whose JWKS a real HTTP server in the test serves, with confluent-kafka's client
(``bearer.auth.credentials.source=STATIC_TOKEN``) as the peer; basic authentication on the same server."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.support.credentials import Issuer, UsersFile
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import wait_for


@pytest.fixture
def registry(
    start_registry: Callable[..., RegistryProcess], issuer: Issuer, users_file: UsersFile
) -> Iterator[RegistryProcess]:
    users_file.user("ops", "ops-pw").allow("ops", "Write", ".*")
    users_file.allow("producers", "Write", "Subject:orders-", role=True).allow("svc-reader", "Read", "Subject:orders-")
    rp = start_registry(
        None,
        "--auth",
        "basic,bearer",
        "--users-file",
        users_file.save(),
        "--jwks-url",
        issuer.jwks_url,
        "--jwt-issuer",
        issuer.issuer,
        "--jwt-audience",
        issuer.audience,
        probe={"auth": ("ops", "ops-pw")},
    )
    yield rp


def _get(rp: RegistryProcess, path: str, token: str) -> httpx.Response:
    return httpx.get(rp.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _rejected(resp: httpx.Response, reason: str) -> None:
    assert resp.status_code == 401, resp.text
    assert resp.json() == {"error_code": 401, "message": f"Unauthorized: {reason}"}
    assert resp.headers.get_list("www-authenticate") == [
        'Basic realm="schemakit", charset="UTF-8"',
        f'Bearer realm="schemakit", error="invalid_token", error_description="{reason}"',
    ]


def test_confluent_client_with_a_bearer_token(registry: RegistryProcess, issuer: Issuer) -> None:
    conf = {
        "url": registry.url,
        "bearer.auth.credentials.source": "STATIC_TOKEN",
        "bearer.auth.logical.cluster": "lsrc-1",
    }
    producer = SchemaRegistryClient({**conf, "bearer.auth.token": issuer.token("alice", roles=["producers"])})
    schema_id = producer.register_schema("orders-value", Schema('"string"', "AVRO"))
    assert producer.get_latest_version("orders-value").schema_id == schema_id
    # the same principal without the role may not write; a principal named in a rule reads
    plain = SchemaRegistryClient({**conf, "bearer.auth.token": issuer.token("alice")})
    with pytest.raises(SchemaRegistryError) as e:
        plain.register_schema("orders-key", Schema('"string"', "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    assert e.value.error_message == "User is denied operation Write on Subject: orders-key"
    reader = SchemaRegistryClient({**conf, "bearer.auth.token": issuer.token("svc-reader")})
    assert reader.get_schema(schema_id).schema_str == '"string"'
    assert reader.get_subjects() == ["orders-value"]
    assert plain.get_subjects() == []
    # cached answers (the same GETs again) keep the same decisions
    token = issuer.token("svc-reader")
    assert [_get(registry, "/subjects/orders-value/versions/1", token).status_code for _ in range(3)] == [200] * 3
    other = issuer.token("mallory", roles=["guests"])
    assert _get(registry, "/subjects/orders-value/versions/1", other).status_code == 403


def test_tokens_that_are_refused(registry: RegistryProcess, issuer: Issuer) -> None:
    _rejected(_get(registry, "/subjects", issuer.token("alice", ttl=-120)), "token expired")
    _rejected(
        _get(registry, "/subjects", issuer.token("alice", aud="another-api")), "invalid token: Audience doesn't match"
    )
    _rejected(
        _get(registry, "/subjects", issuer.token("alice", iss="https://evil.test")), "invalid token: Invalid issuer"
    )
    unsigned = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, key=None, algorithm="none")
    _rejected(
        _get(registry, "/subjects", unsigned),
        "token algorithm 'none' is not accepted (one of ES256, ES384, ES512, EdDSA, PS256, PS384, PS512, RS256, "
        "RS384, RS512)",
    )
    shared_secret = jwt.encode(
        {"sub": "alice", "exp": int(time.time()) + 60}, "a-shared-secret-of-32-bytes-or-more", algorithm="HS256"
    )
    assert _get(registry, "/subjects", shared_secret).status_code == 401
    head, payload, signature = issuer.token("alice").split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    more = base64.urlsafe_b64encode(json.dumps({**claims, "roles": ["producers"]}).encode()).rstrip(b"=").decode()
    _rejected(_get(registry, "/subjects", f"{head}.{more}.{signature}"), "invalid token: Signature verification failed")
    _rejected(_get(registry, "/subjects", "not-a-jwt"), "malformed token: Not enough segments")
    # basic still works on the same server, with both challenges on its 401s
    assert httpx.get(registry.url + "/subjects", auth=("ops", "ops-pw")).status_code == 200
    missing = httpx.get(registry.url + "/subjects")
    assert missing.json()["message"] == "Unauthorized: authentication required: basic credentials or a bearer token"
    assert missing.headers.get_list("www-authenticate") == [
        'Basic realm="schemakit", charset="UTF-8"',
        'Bearer realm="schemakit"',
    ]


def test_a_rotated_key_is_fetched_on_its_first_token(registry: RegistryProcess, issuer: Issuer) -> None:
    fetches = issuer.fetches
    issuer.add_key("k2", publish=False)
    _rejected(_get(registry, "/subjects", issuer.token("svc-reader", kid="k2")), "no key for the token's kid 'k2'")
    issuer.published.append("k2")  # the issuer rotates: k2 is in its JWKS now
    # the registry fetches the JWKS again for the unknown kid (at most every few seconds, whatever tokens arrive)
    wait_for(
        lambda: _get(registry, "/subjects", issuer.token("svc-reader", kid="k2")).status_code == 200,
        timeout=20,
        what="the rotated key",
    )
    assert issuer.fetches - fetches <= 6
    assert _get(registry, "/subjects", issuer.token("svc-reader", kid="k1")).status_code == 200


def test_a_static_pem_key_and_nested_claims(
    start_registry: Callable[..., RegistryProcess], issuer: Issuer, users_file: UsersFile, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization

    pem = tmp_path / "idp.pem"
    pem.write_bytes(
        issuer.keys["k1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    users_file.allow("orders-team", "Write", "Subject:orders-", role=True)
    rp = start_registry(
        None,
        "--auth",
        "bearer",
        "--users-file",
        users_file.save(),
        "--jwt-key",
        str(pem),
        "--jwt-principal-claim",
        "preferred_username",
        "--jwt-roles-claim",
        "realm_access.roles",
        probe={"headers": {"Authorization": "Bearer " + issuer.token("probe", preferred_username="probe")}},
    )
    member = issuer.token("x1", preferred_username="alice", realm_access={"roles": ["orders-team"]})
    outsider = issuer.token("x2", preferred_username="bob", realm_access={"roles": ["billing-team"]})
    body = {"schema": '"string"'}
    ok = httpx.post(rp.url + "/subjects/orders-v/versions", json=body, headers={"Authorization": f"Bearer {member}"})
    assert ok.status_code == 200, ok.text
    denied = httpx.post(
        rp.url + "/subjects/orders-v/versions", json=body, headers={"Authorization": f"Bearer {outsider}"}
    )
    assert denied.json() == {"error_code": 40301, "message": "User is denied operation Write on Subject: orders-v"}
    assert "audit outcome=allowed principal=alice mechanism=bearer operation=Write" in rp.log_file.read_text()
    other_key = Issuer()  # same claims, signed by a key the registry does not hold
    try:
        forged = _get(rp, "/subjects", other_key.token("x1", preferred_username="alice"))
        assert forged.status_code == 401 and forged.json()["message"].startswith("Unauthorized: invalid token")
    finally:
        other_key.close()
