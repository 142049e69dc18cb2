"""``/ui/api/``: read-only helper endpoints of the schema browser, for what Confluent's API answers only in many
requests. Not part of Confluent's API, so not in ``openapi.yaml``; errors are Confluent's ``{"error_code",
"message"}`` all the same.

- ``GET /ui/api/subjects``: one page of subjects matching a search and filters, with each one's latest
  version, id, type, effective compatibility level and mode, and the number of matches;
- ``GET /ui/api/subjects/{subject}``: the subject's versions (soft-deleted ones too) with ids, texts,
  references and who references each;
- ``GET /ui/api/subjects/{subject}/compare?old=&new=``: ``new`` checked against ``old`` at each of the seven
  levels (``_TRANSITIVE``: against every live version up to ``old`` too) and, for JSON Schema and Protobuf,
  every change with Confluent's kind — the same rules as the registry and ``schemakit registry diff``;
- ``GET /ui/api/whoami``: who the caller is and whether the pages should offer writes (never cached).

The first three are cacheable reads (``RegistryRoute``): pure functions of the request and the state. They
show only what the caller may read, by the registry's security rules when authentication is on (``access.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from registry import contexts, errors
from registry.http import render
from registry.http.params import Limit, Offset, ServiceDep, SubjectPath
from registry.http.routing import RegistryRoute, ok
from registry.modes import READ_ONLY_MODES
from registry.schema_types.compatibility import LevelVerdict, change_kinds, level_verdicts
from registry.service import Service
from registry.state import Version
from registry.ui.access import CONFIG, READ, WRITE, Caller, caller, identify, subject_resource

router = APIRouter(prefix="/ui/api", route_class=RegistryRoute, include_in_schema=False)
#: the page size when the caller names none (and the largest one served)
PAGE = 50
MAX_PAGE = 1000

Search = Annotated[str, Query(alias="q", description="Case-insensitive substring of the subject name.")]
TypeFilter = Annotated[str, Query(alias="type", description="AVRO, JSON or PROTOBUF (latest version's type).")]
LevelFilter = Annotated[str, Query(alias="compatibility", description="Effective compatibility level.")]
DeletedFilter = Annotated[
    Literal["exclude", "include", "only"],
    Query(alias="deleted", description="Subjects whose versions are all soft-deleted: hide, show, or only them."),
]
VersionNumber = Annotated[int, Query(ge=1, description="A version number (soft-deleted ones too).")]
#: who is calling (401 when authentication is on and the credentials do not authenticate)
CallerDep = Annotated[Caller, Depends(caller)]


@router.get("/subjects")
async def subjects_page(
    service: ServiceDep,
    who: CallerDep,
    q: Search = "",
    schema_type: TypeFilter = "",
    level: LevelFilter = "",
    deleted: DeletedFilter = "exclude",
    offset: Offset = 0,
    limit: Limit = PAGE,
) -> Response:
    state = service.state
    needle = q.strip().lower()
    schema_type = schema_type.strip().upper()
    level = level.strip().upper()
    rows = []
    for subject in sorted(state.subjects):
        if (needle and needle not in subject.lower()) or not who.may(READ, subject_resource(subject)):
            continue
        every = state.versions(subject, deleted=True)
        live = [v for v in every if not v.deleted]
        if not every or (deleted == "exclude" and not live) or (deleted == "only" and live):
            continue
        latest = (live or every)[-1]
        if schema_type and latest.content.schema_type != schema_type:
            continue
        row_level = str(service.settings.effective_config(subject).get("compatibilityLevel"))
        if level and row_level != level:
            continue
        rows.append((latest, len(live), row_level))
    offset = max(offset, 0)
    limit = PAGE if limit < 0 else min(limit, MAX_PAGE)
    page = [
        {
            "subject": v.subject,
            "latestVersion": v.version,
            "versions": count,
            "id": v.id,
            "schemaType": v.content.schema_type,
            "compatibility": row_level,
            "mode": service.settings.effective_mode(v.subject),
            "deleted": count == 0,
        }
        for v, count, row_level in rows[offset : offset + limit]
    ]
    return ok(render.dumps({"total": len(rows), "offset": offset, "limit": limit, "subjects": page}))


@router.get("/subjects/{subject}")
async def subject_detail(service: ServiceDep, who: CallerDep, subject: SubjectPath) -> Response:
    who.require(READ, subject_resource(subject))
    state = service.state
    every = state.versions(subject, deleted=True)
    if not every:
        raise errors.subject_not_found(subject)
    versions = []
    for v in every:
        referrers = sorted(state.referrers.get(v.ref_key, ()))
        versions.append(
            {
                "version": v.version,
                "id": v.id,
                "schemaType": v.content.schema_type,
                "schema": v.content.schema,
                "references": v.content.references_json(),
                "referencedBy": [_ref(state.subjects[s][n]) for s, n in referrers if n in state.subjects.get(s, {})],
                "deleted": v.deleted,
                "timestamp": v.timestamp,
            }
        )
    config = service.settings.effective_config(subject)
    body = {
        "subject": subject,
        "compatibility": config.get("compatibilityLevel"),
        "mode": service.settings.effective_mode(subject),
        "versions": versions,
    }
    return ok(render.dumps(body))


def _ref(v: Version) -> dict[str, Any]:
    return {"subject": v.subject, "version": v.version, "id": v.id, "deleted": v.deleted}


@router.get("/subjects/{subject}/compare")
async def compare(
    service: ServiceDep, who: CallerDep, subject: SubjectPath, old: VersionNumber, new: VersionNumber
) -> Response:
    who.require(READ, subject_resource(subject))
    state = service.state
    every = {v.version: v for v in state.versions(subject, deleted=True)}
    if not every:
        raise errors.subject_not_found(subject)
    for n in (old, new):
        if n not in every:
            raise errors.version_not_found(n)
    older = [v for n, v in sorted(every.items()) if n < old and n != new and not v.deleted]
    parsed = [await _parsed(service, v) for v in [*older, every[old], every[new]]]
    *chain, new_parsed = parsed
    versions = [(v.version, p) for v, p in zip([*older, every[old]], chain, strict=True)]

    def check() -> tuple[list[LevelVerdict], list[str] | None]:
        return level_verdicts(new_parsed, versions), change_kinds(chain[-1], new_parsed)

    # the checks and the diff cost what the schemas make them cost: in the bounded schema pool, off the loop
    verdicts, changes = await service.parser.schema_work(check)
    body = {
        "subject": subject,
        "old": {"version": old, "id": every[old].id},
        "new": {"version": new, "id": every[new].id},
        "levels": [
            {"level": lv.level, "is_compatible": lv.is_compatible, "reasons": lv.reasons, "messages": lv.messages}
            for lv in verdicts
        ],
        "changes": changes,
    }
    return ok(render.dumps(body))


async def _parsed(service: Service, v: Version) -> Any:
    return await service.parser.parsed_content(v.content, v.id, contexts.context_of(v.subject))


whoami_router = APIRouter(prefix="/ui/api", include_in_schema=False)


@whoami_router.get("/whoami")
async def whoami(request: Request, subject: str = "") -> Response:
    """``{"principal", "canWrite", "mode"}``: whether to show write controls (for ``subject``, else the global
    settings). ``canWrite`` is false in a read-only mode, and, with authentication on, when the caller's
    credentials do not authenticate or do not grant ``Write`` (``access.py``). A hint for the pages only: the
    API itself decides every write."""
    service: Service = request.app.state.service
    subject = contexts.normalize(subject) if subject else ""
    mode = service.settings.effective_mode(subject or None)
    who = await identify(request)
    may_write = who is not None and who.may(WRITE, subject_resource(subject) if subject else CONFIG)
    body = {
        "principal": who.name if who else None,
        "canWrite": may_write and mode not in READ_ONLY_MODES,
        "mode": mode,
    }
    return Response(render.dumps(body), media_type="application/json", headers={"cache-control": "no-store"})
