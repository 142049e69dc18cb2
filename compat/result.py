"""What a compatibility check returns: typed incompatibilities with a path into the schema."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """One reason why a reader schema cannot read data written with a writer schema.

    ``kind`` is Confluent's name for the change (Avro: ``READER_FIELD_MISSING_DEFAULT_VALUE``,
    ``TYPE_MISMATCH``, ``NAME_MISMATCH``, ``FIXED_SIZE_MISMATCH``, ``MISSING_ENUM_SYMBOLS``,
    ``MISSING_UNION_BRANCH``; JSON Schema / Protobuf: the diff type names), ``path`` a JSON-pointer-like
    location in the reader schema (``/fields/2/type``), ``message`` a sentence for people.
    """

    kind: str
    path: str
    message: str
    additional_info: str = ""
    #: the message when the reader is the *old* schema (FORWARD direction), where Confluent swaps the
    #: words "new" and "old" in the description; empty: the message does not depend on the direction
    forward_message: str = ""
    #: whose entry format :meth:`confluent_text` follows: Avro's ``Difference`` (the default), or the JSON
    #: Schema / Protobuf diffs' ``Difference.toString`` (which differ from Avro's and from each other)
    style: Literal["avro", "json", "protobuf"] = "avro"

    def for_forward(self) -> Incompatibility:
        """This incompatibility as found with the old schema reading data written with the new one."""
        if not self.forward_message:
            return self
        return replace(self, message=self.forward_message, forward_message="")

    def confluent_text(self) -> str:
        """The entry as Confluent prints it inside a 409 message or a verbose compatibility answer."""
        if self.style == "json":  # sic: Confluent closes the description with a single quote
            return f'{{errorType:"{self.kind}", description:"{self.message}\'}}'
        if self.style == "protobuf":
            return f'{{errorType:"{self.kind}", description:"{self.message}"}}'
        return f"{{errorType:'{self.kind}', description:'{self.message}', additionalInfo:'{self.additional_info}'}}"
