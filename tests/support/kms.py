"""Field-level encryption in the tests: the one ``local-kms`` secret, confluent-kafka's executors, the ENCRYPT rule
and registering a subject under it.

Tink, under the executor, keeps the first ``local-kms`` client registered in a process and hands it out for every
later key URL, whatever secret a later serializer is configured with. Tests that compare our serdes (which use
the secret they are given) with the executor must therefore all use one secret, since pytest may run them in
one process.
"""

from __future__ import annotations

from typing import Any

import httpx
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    Clock,
    EncryptionExecutor,
    FieldEncryptionExecutor,
)
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver

LOCAL_KMS_SECRET = "schemakit-tests-local-kms"


def encryption_executors(clock: Clock | None = None) -> RuleRegistry:
    """confluent-kafka's field (ENCRYPT) and payload (ENCRYPT_PAYLOAD) executors in a rule registry of their own,
    on ``clock`` (a test's clock moves DEK expiry forward), with the ``local-kms`` driver registered."""
    LocalKmsDriver.register()
    rules = RuleRegistry()
    rules.register_executor(FieldEncryptionExecutor(clock or Clock()))
    rules.register_executor(EncryptionExecutor(clock or Clock()))
    return rules


def encrypt_rule(kek: str, *, payload: bool = False, **params: str) -> dict[str, Any]:
    """An ENCRYPT rule on the PII-tagged fields (ENCRYPT_PAYLOAD on the whole payload with ``payload``) under the
    local-kms KEK ``kek``; ``params`` add to or override its ``encrypt.*`` parameters."""
    rule: dict[str, Any] = {
        "name": "encrypt",
        "kind": "TRANSFORM",
        "mode": "WRITEREAD",
        "type": "ENCRYPT_PAYLOAD" if payload else "ENCRYPT",
        "params": {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "mykey", **params},
        "onFailure": "ERROR,ERROR",
    }
    if not payload:
        rule["tags"] = ["PII"]
    return rule


def register_encrypted(url: str, subject: str, schema: str, schema_type: str, rule: dict[str, Any]) -> None:
    """Registers ``schema`` under ``subject`` with ``rule`` in its rule set (an encoding rule for ENCRYPT_PAYLOAD,
    a domain rule otherwise)."""
    rule_set = {"encodingRules" if rule["type"] == "ENCRYPT_PAYLOAD" else "domainRules": [rule]}
    body = {"schema": schema, "schemaType": schema_type, "ruleSet": rule_set}
    resp = httpx.post(f"{url}/subjects/{subject}/versions", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
