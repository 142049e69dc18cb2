"""Request bodies and answer shapes of the DEK registry (``/dek-registry/v1``), with the field names of
confluent-kafka's ``CreateKekRequest``, ``CreateDekRequest``, ``Kek`` and ``Dek``.

Types are checked strictly, as in ``models.py`` (a field of the wrong type is 422 with code 422); values of
the right type but not allowed (a bad name, a missing ``kmsKeyId``, an unknown algorithm) are Confluent's
42271, raised by ``registry.dek.service``. The answer models only document the API.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StrictBool, StrictStr

from registry.dek.records import ALGORITHMS
from registry.http.models import Int32, enum_of

Algorithm = Annotated[StrictStr, enum_of(list(ALGORITHMS))]
KmsProps = dict[str, StrictStr]


class CreateKekRequest(BaseModel):
    name: StrictStr | None = None
    kmsType: StrictStr | None = None
    kmsKeyId: StrictStr | None = None
    kmsProps: KmsProps | None = None
    doc: StrictStr | None = None
    shared: StrictBool = False
    deleted: StrictBool = False


class UpdateKekRequest(BaseModel):
    """Only the fields sent change; ``kmsType`` and ``kmsKeyId`` never do."""

    kmsProps: KmsProps | None = None
    doc: StrictStr | None = None
    shared: StrictBool | None = None


class CreateDekRequest(BaseModel):
    subject: StrictStr | None = None
    version: Int32 | None = None
    algorithm: Algorithm | None = None
    encryptedKeyMaterial: StrictStr | None = Field(
        default=None,
        description="The DEK wrapped by the KEK, base64; omitted under a shared KEK to let the registry generate it.",
    )
    deleted: StrictBool = False


class Kek(BaseModel):
    name: str
    kmsType: str
    kmsKeyId: str
    kmsProps: dict[str, str]
    doc: str | None = None
    shared: bool
    ts: int
    deleted: bool | None = None


class Dek(BaseModel):
    kekName: str
    subject: str
    version: int
    algorithm: Algorithm
    encryptedKeyMaterial: str
    keyMaterial: str | None = Field(default=None, description="The raw DEK, base64: only under a shared KEK.")
    ts: int
    deleted: bool | None = None
