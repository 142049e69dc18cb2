"""The DEK registry: Confluent's ``/dek-registry/v1`` API for client-side field-level encryption keys.

A KEK (key encryption key) names a key in a KMS; the DEKs (data encryption keys) under it are versioned per
subject and algorithm and stored wrapped by that KEK (``encryptedKeyMaterial``). When a KEK is *shared*, the
registry itself may use it: it generates DEK material, wraps it through the KMS, and returns the raw
``keyMaterial`` with every read.

- ``records``: the ``_dek_registry_keys`` record format (Confluent's key and value JSON);
- ``state``: the KEKs and DEKs, a pure function of that topic;
- ``kms``: DEK material and wrapping through a KMS (``local-kms`` built in, cloud KMSs through confluent-kafka's
  drivers);
- ``service``: the operations, with Confluent's rules and errors.

The topic is written, forwarded and replayed by the same machinery as ``_schemas`` (``registry.store.LogStore``,
the election's fenced appender, the forwarder).
"""
