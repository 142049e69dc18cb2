"""Authentication and authorization as FastAPI dependencies, and the read cache's guard (``ReadGuard``).

Every API router is mounted with ``Authenticated`` (``api.py``): the caller's principal, or 401 with
``WWW-Authenticate``. Routes add what they require, or their router does for all of its routes (the README's
table of operations and permissions):

- ``ReadSubject`` / ``WriteSubject``: ``Read`` / ``Write`` on ``Subject:<subject>``;
- ``ReadConfig`` / ``WriteConfig`` / ``WriteMode``: the global ``Config:`` / ``Mode:`` resources;
- ``WriteContext``: deleting a context is ``Write`` on ``Subject::.ctx:`` (its subjects' prefix);
- ``ImportIfId``: registering with an ``id`` also needs ``Write`` on ``Import:``;
- ``ManageExporters``: every ``/exporters`` route needs ``Write`` on ``Exporter:``;
- ``ReadSchemaId``: reading an id needs ``Read`` on one of the subjects holding it (``ReadSchemaGuid``: by GUID);
- ``Readable``: a predicate for listings (``GET /subjects``, ``/schemas``), which list only what the caller may read.

Each check marks the read cache's ticket with what the answer requires (``access``) and, for per-caller answers,
with the principal (``partition``); ``SecurityGuard`` checks the same on every cache hit, from memoized
credentials and decisions (kept per credential and answer until the users file changes), so cached reads stay
authorized without entering the framework. A denial answers 403
``{"error_code": 40301, "message": "User is denied operation Write on Subject: orders"}``; writes and denials
are audited (``registry/security/audit.py``). Without ``--auth`` (``app.state.security`` is None) every
dependency returns at once and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping
from dataclasses import dataclass, field
from time import monotonic
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import Depends, Request

from registry import contexts, errors
from registry.http.models import RegisterSchemaRequest
from registry.http.params import ContextPath, JsonBody, SchemaIdPath, ServiceDep, SubjectPath
from registry.http.read_cache import SHARED, TICKET, ReadTicket, Scope
from registry.security import AuthenticationFailed, Operation, Principal, Security, audit, forwarded
from registry.security.permissions import CONFIG, EXPORTER, IMPORT, MODE, subject_resource

#: the scope key of the request's principal, once authenticated
PRINCIPAL = "schemakit.principal"
#: ``ticket.access`` of answers any authenticated caller may have
AUTHENTICATED = ("authenticated",)


def _security(request: Request) -> Security | None:
    security: Security | None = request.app.state.security
    return security


def _request_line(scope: MutableMapping[str, Any]) -> str:
    path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    query = scope.get("query_string", b"")
    return f"{scope['method']} {path}" + (f"?{query.decode('latin-1')}" if query else "")


def _client(scope: MutableMapping[str, Any]) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


def _ticket(scope: MutableMapping[str, Any]) -> ReadTicket | None:
    ticket: ReadTicket | None = scope.get(TICKET)
    return ticket


async def principal_of(request: Request) -> Principal | None:
    """The caller's principal (authenticated once per request), None without ``--auth``; 401 if none."""
    security = _security(request)
    if security is None:
        return None
    scope = request.scope
    principal: Principal | None = scope.get(PRINCIPAL)
    if principal is None:
        try:
            principal = await security.authenticator.authenticate(scope, request.body)
        except AuthenticationFailed as e:
            audit.record("unauthenticated", reason=e.reason, request=_request_line(scope), client=_client(scope))
            raise errors.unauthorized(e.reason, security.challenges(e)) from None
        scope[PRINCIPAL] = principal
    ticket = _ticket(scope)
    if ticket is not None and ticket.access is None:
        ticket.access = AUTHENTICATED
    return principal


def _display(resource: str) -> str:
    """``Subject:orders`` -> ``Subject: orders``; ``Config:`` -> ``Config`` (the 403 message)."""
    kind, _, name = resource.partition(":")
    return f"{kind}: {name}" if name else kind


def check(request: Request, principal: Principal, operation: Operation, resources: tuple[str, ...], shown: str) -> None:
    """Allow if the principal may do ``operation`` on one of ``resources``, else 403 (``shown`` names the
    resource in the message). Writes are audited either way, reads when denied."""
    security = _security(request)
    assert security is not None
    scope = request.scope
    allowed = security.authorizer.allows_any(principal, operation, resources)
    if not allowed or operation is Operation.WRITE:
        audit.record(
            "allowed" if allowed else "denied",
            principal=principal.name,
            mechanism=principal.mechanism,
            operation=operation.value,
            resource=shown,
            request=_request_line(scope),
            client=_client(scope),
        )
    if not allowed:
        raise errors.forbidden(operation.value, _display(shown))
    ticket = _ticket(scope)
    if ticket is not None:
        ticket.access = (operation, resources)


class _SubjectAccess:
    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    async def __call__(self, request: Request, subject: SubjectPath) -> None:
        principal = await principal_of(request)
        if principal is not None:
            # the one spelling (``:.:orders`` is ``orders``), so a rule cannot be dodged by another spelling
            resource = subject_resource(contexts.normalize(subject))
            check(request, principal, self.operation, (resource,), resource)


async def _context_access(request: Request, context: ContextPath) -> None:
    """Deleting a context is a write on its subjects' common prefix, ``Subject::.ctx:``."""
    principal = await principal_of(request)
    if principal is None:
        return
    try:
        name = contexts.parse_context(unquote(context))
    except ValueError:
        return  # the route answers 400
    resource = subject_resource(contexts.qualify(name, ""))
    check(request, principal, Operation.WRITE, (resource,), resource)


class _GlobalAccess:
    def __init__(self, operation: Operation, resource: str) -> None:
        self.operation = operation
        self.resource = resource

    async def __call__(self, request: Request) -> None:
        principal = await principal_of(request)
        if principal is not None:
            check(request, principal, self.operation, (self.resource,), self.resource)


async def _schema_id_access(request: Request, id: SchemaIdPath, service: ServiceDep) -> None:
    principal = await principal_of(request)
    if principal is None:
        return
    # the id in the context the route will look it up in (``?subject=`` may name another context)
    context = service.id_context(id, request.query_params.get("subject", ""))
    _check_id_read(request, principal, service, context, id, f"Schema:{id}")


def _check_id_read(
    request: Request, principal: Principal, service: Any, context: str, schema_id: int, label: str
) -> None:
    pairs = service.state.space(context).id_versions.get(schema_id)
    if pairs is None:
        return  # no such id: the route answers 40403
    resources = tuple(sorted({subject_resource(s) for s, _ in pairs}))
    check(request, principal, Operation.READ, resources, label)


async def _schema_guid_access(request: Request, guid: str, service: ServiceDep) -> None:
    """Reading a schema by GUID: as by its id, in the context the route reads it from (the first that has it)."""
    principal = await principal_of(request)
    if principal is None:
        return
    try:
        context, schema_id = service.guid_ids(guid)[0]
    except errors.ApiError:
        return  # the route answers 40403
    _check_id_read(request, principal, service, context, schema_id, f"Schema:{guid}")


async def _import_if_id(
    request: Request, body: Annotated[RegisterSchemaRequest, Depends(JsonBody(RegisterSchemaRequest))]
) -> None:
    if body.id is None:
        return
    principal = await principal_of(request)
    if principal is not None:
        check(request, principal, Operation.WRITE, (IMPORT,), IMPORT)


async def _readable(request: Request) -> Callable[[str], bool]:
    """Which subjects the caller may read; the answer is then the caller's own (its cache partition)."""
    principal = await principal_of(request)
    security = _security(request)
    if principal is None or security is None or not security.authorizer.enforcing:
        return _everything
    ticket = _ticket(request.scope)
    if ticket is not None:
        ticket.partition = principal
    allows = security.authorizer.allows
    return lambda subject: allows(principal, Operation.READ, subject_resource(subject))


def _everything(subject: str) -> bool:
    return True


Authenticated = Depends(principal_of)
ReadSubject = Depends(_SubjectAccess(Operation.READ))
WriteSubject = Depends(_SubjectAccess(Operation.WRITE))
ReadConfig = Depends(_GlobalAccess(Operation.READ, CONFIG))
WriteConfig = Depends(_GlobalAccess(Operation.WRITE, CONFIG))
WriteMode = Depends(_GlobalAccess(Operation.WRITE, MODE))
ManageExporters = Depends(_GlobalAccess(Operation.WRITE, EXPORTER))
WriteContext = Depends(_context_access)
ReadSchemaId = Depends(_schema_id_access)
ReadSchemaGuid = Depends(_schema_guid_access)
ImportIfId = Depends(_import_if_id)
#: a route argument: ``readable(subject)`` is True for subjects the caller may read
Readable = Annotated[Callable[[str], bool], Depends(_readable)]


class SecurityGuard:
    """The read cache's ``ReadGuard``: serves a hit only to a caller whose credentials are already verified
    and who may have the answer (the ticket's ``access``); per-caller answers from the caller's partition.

    Its decisions are kept per ``Authorization`` value (the raw header bytes: a hit does no decoding), and under
    it per ticket, so a repeated read by the same credentials costs two dict lookups: each credential's decisions
    hold while the credential does (its ``until``) and only while the users and the rules are those they were
    made under (the authenticator's and the authorizer's ``generation``, bumped when the users file is loaded),
    so a removed user or a changed password or rule is never admitted from them. Refusals are not kept (the app
    answers them, from the authenticator's own memory of failures). Callers by client certificate, and any
    request when forwarded identities are accepted (``--inter-node-secret``), are decided by the slower path
    (``_admit_scanning``), which reads the headers as the authenticator does."""

    #: decisions kept; past that many, all are dropped (a client can make one per credential it holds)
    MAX_DECISIONS = 4096

    def __init__(self, security: Security) -> None:
        self.authenticator = security.authenticator
        self.authorizer = security.authorizer
        #: with a secret, a forwarded request may carry a signed identity that wins over its ``Authorization``
        self._signed_identities = security.authenticator.inter_node_secret is not None
        #: Authorization value -> its credential's decisions
        self._decisions: dict[bytes, _Kept] = {}
        self._kept = 0  # decisions held by all of them

    def admit(self, scope: Scope, ticket: ReadTicket, authorization: bytes | None) -> Hashable | None:
        if authorization is None or self._signed_identities:
            return self._admit_scanning(scope, ticket)
        kept = self._decisions.get(authorization)
        if (
            kept is not None
            and kept.authenticated == self.authenticator.generation
            and kept.authorized == self.authorizer.generation
            and kept.until >= monotonic()
        ):
            partition = kept.partitions.get(ticket)
            if partition is not None:
                return partition
        return self._admit_credential(authorization, ticket)

    def _admit_scanning(self, scope: Scope, ticket: ReadTicket) -> Hashable | None:
        """Decides as the authenticator reads the headers: a forwarded request is the app's to authenticate
        (its signed identity, if any, wins over ``Authorization``), and without ``Authorization`` the caller is
        the client certificate's."""
        authorization = None
        for k, v in scope["headers"]:
            if k == b"authorization":
                authorization = v
            elif k == forwarded.FORWARDED_HEADER:
                return None
        if authorization is None:
            principal = self.authenticator.certificate(scope)
            return None if principal is None else self._decide(principal, ticket)
        return self._admit_credential(authorization, ticket)

    def _admit_credential(self, authorization: bytes, ticket: ReadTicket) -> Hashable | None:
        """Decides from the remembered credential and keeps the decision (the miss of ``admit``)."""
        remembered = self.authenticator.remembered(authorization)
        if remembered is None:
            return None
        partition = self._decide(remembered[1], ticket)
        if partition is None:
            return None
        if self._kept >= self.MAX_DECISIONS:
            self._decisions = {}
            self._kept = 0
        kept = self._decisions.get(authorization)
        if (
            kept is None
            or kept.authenticated != self.authenticator.generation
            or kept.authorized != self.authorizer.generation
            or kept.until != remembered[0]
        ):  # none yet, or made under other users, rules or a credential since verified again: start afresh
            kept = _Kept(remembered[0], self.authenticator.generation, self.authorizer.generation)
            self._decisions[authorization] = kept
        kept.partitions[ticket] = partition
        self._kept += 1
        return partition

    def _decide(self, principal: Principal, ticket: ReadTicket) -> Hashable | None:
        """The partition to serve ``principal`` from, or None if the ticket's ``access`` is not granted."""
        access = ticket.access
        if access != AUTHENTICATED:
            if access is None:
                return None
            operation: Operation = access[0]  # type: ignore[index]
            resources: tuple[str, ...] = access[1]  # type: ignore[index]
            if not self.authorizer.allows_any(principal, operation, resources):
                return None
        return SHARED if ticket.partition == SHARED else principal


@dataclass(slots=True, eq=False)
class _Kept:
    """One credential's kept decisions, and what they hold under."""

    until: float  # the remembered credential's (``time.monotonic``)
    authenticated: int  # the authenticator's generation they were made under
    authorized: int  # the authorizer's
    #: ticket -> the partition its answer is served from
    partitions: dict[ReadTicket, Hashable] = field(default_factory=dict)


async def forward_headers(request: Request) -> list[tuple[bytes, bytes]]:
    """The headers a follower forwards a write with: the caller's (authenticated here first, so a stranger gets
    401 without reaching the leader), plus the signed principal when the caller authenticated by certificate
    and the leader cannot check it again (``registry/security/forwarded.py``)."""
    headers: list[tuple[bytes, bytes]] = [(k, v) for k, v in request.scope["headers"] if k not in forwarded.HEADERS]
    principal = await principal_of(request)
    security = _security(request)
    if principal is None or security is None or any(k == b"authorization" for k, _ in headers):
        return headers
    secret = security.config.inter_node_secret
    if secret is None:
        raise errors.unauthorized("this instance cannot forward a certificate's identity (no --inter-node-secret)", [])
    scope = request.scope
    headers += forwarded.sign(
        secret.encode(),
        principal,
        scope["method"],
        scope.get("raw_path") or scope["path"].encode(),
        scope.get("query_string", b""),
        await request.body(),
    )
    return headers
