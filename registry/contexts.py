"""Contexts: Confluent's namespaces of subjects and schema ids, named in qualified subjects ``:.ctx:subject``.

Every context has its own subjects and its own id space (id 1 of ``.prod`` is not id 1 of ``.`` ). The default
context is ``.``; its subjects are written without a prefix (``:.:orders`` is ``orders``). A subject is kept
everywhere (state, ``_schemas`` records, answers) in its *normalized qualified* form: ``orders`` in the default
context, ``:.prod:orders`` in ``.prod``. A name that is only a context (``:.prod:``) stands for the context
itself (its config and mode). Tenants (Confluent Cloud) are not modelled: every context is in the
``default`` tenant.
"""

from __future__ import annotations

DEFAULT_CONTEXT = "."
DEFAULT_TENANT = "default"
#: the wildcard prefix of ``subjectPrefix``: any context
WILDCARD = ":*:"


def split(subject: str) -> tuple[str, str]:
    """``(context, name)`` of a subject as Confluent's ``QualifiedSubject`` reads it: ``:.ctx:name`` →
    ``(".ctx", "name")``, ``:.ctx`` (no closing colon) → ``(".ctx", "")``, anything else is in ``.``."""
    if subject.startswith(":."):
        end = subject.find(":", 2)
        if end < 0:
            return subject[1:], ""
        return subject[1:end], subject[end + 1 :]
    return DEFAULT_CONTEXT, subject


def qualify(context: str, name: str) -> str:
    """The normalized qualified subject: ``name`` in ``.``, else ``:<context>:name``."""
    return name if context == DEFAULT_CONTEXT else f":{context}:{name}"


def normalize(subject: str) -> str:
    """The one spelling of a subject (``:.:orders`` → ``orders``); anything not qualified is unchanged."""
    if subject.startswith(":."):
        return qualify(*split(subject))
    return subject


def context_of(subject: str) -> str:
    return split(subject)[0] if subject.startswith(":.") else DEFAULT_CONTEXT


def is_qualified(subject: str) -> bool:
    """Does the subject name a context other than the default one?"""
    return context_of(subject) != DEFAULT_CONTEXT


def delimited(context: str) -> str:
    """How messages name a context: ``.`` for the default one, else ``:.ctx:`` (Confluent's qualified context)."""
    return DEFAULT_CONTEXT if context == DEFAULT_CONTEXT else f":{context}:"


def parse_context(text: str) -> str:
    """A context given on its own (``DELETE /contexts/{ctx}``): ``.ctx``, ``:.ctx:``, ``ctx`` all name ``.ctx``;
    ``.`` and ``:.:`` the default context. A colon inside the name is a ValueError (Confluent's message)."""
    name = text[1:] if text.startswith(":") else text
    name = name[:-1] if name.endswith(":") else name
    if ":" in name:
        raise ValueError(f"Context name '{name}' cannot contain a colon")
    return name if name.startswith(".") else "." + name


def qualify_reference(parent: str, reference_subject: str) -> str:
    """A reference's subject as the referring subject's context sees it: an unqualified reference from a
    subject in ``.ctx`` names a subject of ``.ctx`` (Confluent's ``qualifySubjectWithParent``)."""
    if reference_subject.startswith(":."):
        return normalize(reference_subject)
    return qualify(context_of(parent), reference_subject)


def matches_prefix(subject: str, prefix: str) -> bool:
    """Confluent's ``subjectPrefix`` over normalized subjects: ``:*:rest`` is ``rest`` in any context; a
    qualified prefix (``:.ctx:``, ``:.ct``) is a prefix of qualified names; anything else (``""`` included) is a
    prefix of the default context's names only."""
    if prefix.startswith(WILDCARD):
        return split(subject)[1].startswith(prefix[len(WILDCARD) :])
    if prefix.startswith(":.:"):
        prefix = prefix[3:]
    elif prefix.startswith(":."):
        return subject.startswith(prefix)
    return not subject.startswith(":.") and subject.startswith(prefix)
