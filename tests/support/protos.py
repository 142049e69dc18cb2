"""Compiling test ``.proto`` texts at test time with grpc_tools' protoc, two ways, both through the real protoc:

- ``compile_modules`` writes the files into a directory, runs ``--python_out`` and imports the generated
  ``_pb2`` modules (the way users get their message classes). Those land in protobuf's default descriptor
  pool, so every file name and package a test compiles this way must be unique to it.
- ``message_class`` compiles one file to a descriptor set and builds its message class in a private
  descriptor pool: schema versions that reuse one message name (evolution tests) cannot share the default
  pool, where a second definition of a full name is refused.

The texts themselves live beside their tests (``tests/registry/protos.py``, ``tests/serdes/protos.py``,
``tests/spark/protos.py``).
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


def _include_dir() -> str:
    """grpc_tools' bundled ``google/protobuf/*.proto``, so well-known imports resolve without copies."""
    return str(Path(protoc.__file__).parent / "_proto")


def _run_protoc(args: list[str]) -> None:
    rc = protoc.main(["protoc", f"-I{_include_dir()}", *args])
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc} for {args}")


def compile_modules(root: Path, files: dict[str, str]) -> dict[str, ModuleType]:
    """Write ``files`` (import path -> text) under ``root``, generate Python with protoc and import it.

    Returns import path (``"other.proto"``) -> generated module (``other_pb2``). Directories become packages
    (``sktest/shop/order.proto`` -> ``sktest.shop.order_pb2``). ``root`` is on ``sys.path`` only while
    importing: the generated modules import each other by their import paths.
    """
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for package in path.relative_to(root).parents[:-1]:
            (root / package / "__init__.py").touch()
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
