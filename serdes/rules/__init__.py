"""Data-contract rules (Confluent's ``ruleSet``) executed by the serializers and deserializers.

- ``engine``: which rules run in which mode, actions (NONE, ERROR, DLQ), ``RuleError``;
- ``cel`` / ``cel_compiler``: CEL, compiled to Python closures with cel-python behind them;
- ``jsonata``: JSONata (migrations between major versions);
- ``fields`` and ``avro_walk`` / ``json_walk`` / ``proto_walk``: which fields a ``CEL_FIELD`` rule sees;
- ``dlq``: the dead-letter action;
- ``encryption`` (``ENCRYPT``, ``ENCRYPT_PAYLOAD``: client-side field-level encryption through the registry's DEK
  registry), on ``kms`` (wrapping DEKs: local-kms, confluent-kafka's cloud drivers) and ``tink_wire`` (Tink's
  key and ciphertext formats on ``cryptography``);
- ``steps``: what the serdes call: the rules of a writer or reader schema, and the migrations between versions.

The engines (cel-python, jsonata-python) are the ``rules`` extra: ``pip install 'schemakit[rules]'``; the cloud
KMS drivers of encryption rules the ``kms`` extra. Nothing here
is imported by a serde whose schemas carry no rules.
"""
