"""The HTTP layer of the registry: Confluent's REST API on FastAPI, behind a pure-ASGI read cache.

- ``api.py``: ``build_api`` (the FastAPI app) and the ASGI layers in front of it; ``RegistryApp``, the whole
  stack with the schema browser, is ``registry/app.py``
- ``read_cache.py``: cached read answers, and the seam where authentication/authorization plug in
- ``routing.py``: ``RegistryRoute``, what every route does around its endpoint (415/406, forwarding) and the
  error answers it documents by itself
- ``routers/``: one router per resource (subjects, schemas, config, mode, compatibility, contexts, metadata), and
  per part of one whose routes share a dependency (``schemas.by_id``, ``schemas.by_guid``)
- ``params.py`` / ``models.py``: typed parameters and request bodies; ``render.py``: answer bodies
- ``content.py``: media types and ``Accept`` negotiation; ``errors.py``: Confluent's error envelope
- ``openapi.py``: the OpenAPI document (``openapi.yaml`` is generated from it)

Operations live in ``registry/service.py``; nothing here decides what a request does to the state.
"""
