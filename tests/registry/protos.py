"""Test .proto files for the end-to-end Protobuf tests, compiled at test time with grpc_tools' protoc.

Two ways in, both through the real protoc:
- :func:`compile_modules` writes the files into a tmp dir, runs ``--python_out`` and imports the generated
  ``_pb2`` modules (the way users get their message classes). Those land in protobuf's default descriptor
  pool, so every file name and package here is unique to these tests.
- :func:`message_class` compiles one file to a descriptor set and builds its message class in a private
  descriptor pool: schema versions that reuse one message name (evolution tests) cannot share the default
  pool, where a second definition of a full name is refused.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from grpc_tools import protoc

#: import path -> .proto text. ``other.proto`` is imported by ``skt_e2e_invoice.proto``; confluent-kafka's
#: serializer registers it under the subject ``other.proto`` (its reference subject name strategy).
PROTOS: dict[str, str] = {
    # Order is message [0]; its third nested message Line is [0, 2]; Customer is [1].
    "skt_e2e_shop.proto": """
syntax = "proto3";
package skt.e2e.shop;

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Note { string text = 1; }
  message Discount { int32 percent = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  repeated Line lines = 2;
  Status status = 3;
  map<string, string> tags = 4;
  oneof payment { string card = 5; int64 voucher = 6; }
  Discount discount = 7;
}

message Customer { string name = 1; int64 id = 2; }
""",
    "skt_e2e_event.proto": """
syntax = "proto3";
package skt.e2e.event;

import "google/protobuf/timestamp.proto";

message Event {
  string name = 1;
  google.protobuf.Timestamp at = 2;
}
""",
    "other.proto": """
syntax = "proto3";
package skt.e2e.other;

message Money {
  string currency = 1;
  int64 units = 2;
}
""",
    "skt_e2e_invoice.proto": """
syntax = "proto3";
package skt.e2e.invoice;

import "other.proto";

message Invoice {
  string id = 1;
  skt.e2e.other.Money total = 2;
  repeated skt.e2e.other.Money items = 3;
}
""",
}


def _include_dir() -> str:
    """grpc_tools' bundled ``google/protobuf/*.proto``, so well-known imports resolve without copies."""
    return str(Path(protoc.__file__).parent / "_proto")


def _run_protoc(args: list[str]) -> None:
    rc = protoc.main(["protoc", f"-I{_include_dir()}", *args])
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc} for {args}")


def compile_modules(root: Path, files: dict[str, str] | None = None) -> dict[str, ModuleType]:
    """Write ``files`` (default :data:`PROTOS`) under ``root``, generate Python with protoc and import it.

    Returns import path (``"other.proto"``) -> generated module (``other_pb2``). ``root`` is on
    ``sys.path`` only while importing: the generated modules import each other by top-level name.
    """
    files = PROTOS if files is None else files
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _run_protoc([f"-I{root}", f"--python_out={root}", *(str(root / name) for name in files)])
    sys.path.insert(0, str(root))
    try:
        return {name: importlib.import_module(name[: -len(".proto")].replace("/", ".") + "_pb2") for name in files}
    finally:
        sys.path.remove(str(root))


def message_class(text: str, full_name: str, file_name: str = "skt_e2e_versioned.proto") -> type[Message]:
    """Compile one ``.proto`` text and return the class of message ``full_name`` from a private pool."""
    with tempfile.TemporaryDirectory(prefix="skt-e2e-proto-") as tmp:
        src = Path(tmp)
        (src / file_name).write_text(text)
        out = src / "set.pb"
        _run_protoc([f"-I{src}", "--include_imports", f"--descriptor_set_out={out}", str(src / file_name)])
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:  # --include_imports lists dependencies first
        pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
