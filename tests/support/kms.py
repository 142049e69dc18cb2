"""The ``local-kms`` secret of every test that runs confluent-kafka's encryption executor.

Tink, under the executor, keeps the first ``local-kms`` client registered in a process and hands it out for every
later key URL, whatever secret a later serializer is configured with. Tests that compare our serdes (which use
the secret they are given) with the executor must therefore all use one secret, since pytest may run them in
one process.
"""

LOCAL_KMS_SECRET = "schemakit-tests-local-kms"
