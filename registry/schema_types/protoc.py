"""Compile ``.proto`` text with the real protoc shipped in ``grpcio-tools``.

protoc runs in a child process (``python -m grpc_tools.protoc``): its diagnostics go to the C++ side's
stderr, which cannot be captured safely in-process while other threads log. Results are cached by a digest
of (main text, imported files), since compiling costs a process start, within a bound on their bytes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from hashlib import sha256
from pathlib import Path

from google.protobuf import descriptor_pb2

from registry.byte_lru import ByteLru
from registry.schema_types import proto_printer

#: the name the main file is compiled under; chosen so it cannot collide with a user import path
MAIN_FILE = "__schemakit_main__.proto"


class ProtocError(Exception):
    """protoc rejected the input; ``str()`` is protoc's own message (temp paths stripped)."""


@functools.cache
def include_roots() -> tuple[str, ...]:
    """Directories that resolve well-known imports without references: ``google/protobuf/*``
    (bundled with grpcio-tools), ``google/type/*`` (googleapis-common-protos) and ``confluent/*``
    (printed from confluent-kafka's modules): the files confluent-kafka's serializer never registers
    (``skip.known.types``)."""
    roots: list[str] = []
    confluent_root = _confluent_protos()
    if confluent_root is not None:
        roots.append(confluent_root)
    spec = importlib.util.find_spec("grpc_tools")
    if spec is not None and spec.submodule_search_locations:
        roots.append(str(Path(next(iter(spec.submodule_search_locations))) / "_proto"))
    try:
        type_spec = importlib.util.find_spec("google.type")
    except ModuleNotFoundError:
        type_spec = None
    if type_spec is not None and type_spec.submodule_search_locations:
        roots.append(str(Path(next(iter(type_spec.submodule_search_locations))).parent.parent))
    return tuple(roots)


def compile_files(main_text: str, imports: tuple[tuple[str, str], ...]) -> descriptor_pb2.FileDescriptorSet:
    """Compile ``main_text`` with ``imports`` ((import path, .proto text) pairs) available to it.

    Returns the descriptor set with every file (``--include_imports``), dependencies first, the main
    file last under the name :data:`MAIN_FILE`. Raises :class:`ProtocError`.
    """
    h = sha256(main_text.encode("utf-8", "surrogatepass"))
    for name, text in imports:
        h.update(b"\0%d\0%s\0%d\0" % (len(name), name.encode("utf-8", "surrogatepass"), len(text)))
        h.update(text.encode("utf-8", "surrogatepass"))
    key = h.digest()
    data = _compiled.get(key)
    if data is None:
        data = _compile(main_text, imports)
        _compiled.put(key, data, len(data))
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(data)
    return fds


#: compiled descriptor sets by the digest of their input (``compile_files``), bounded by their bytes
_compiled: ByteLru[bytes, bytes] = ByteLru(64 * 2**20)


def _compile(main_text: str, imports: tuple[tuple[str, str], ...]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="schemakit-protoc-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name, text in imports:
            _write(src, name, text)
        _write(src, MAIN_FILE, main_text)
        out = Path(tmp) / "out.pb"
        args = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={src}",
            *(f"--proto_path={root}" for root in include_roots()),
            f"--descriptor_set_out={out}",
            "--include_imports",
            MAIN_FILE,
        ]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        if proc.returncode != 0 or not out.exists():
            message = (proc.stderr or proc.stdout).strip().replace(str(src) + os.sep, "")
            raise ProtocError(message or f"protoc failed with exit code {proc.returncode}")
        return out.read_bytes()


def _confluent_protos() -> str | None:
    """A directory holding ``confluent/meta.proto`` and ``confluent/type/*.proto``, written once per
    content (the path carries a hash of it, so processes share it and nothing piles up)."""
    try:
        from confluent_kafka.schema_registry.confluent import meta_pb2
        from confluent_kafka.schema_registry.confluent.type import decimal_pb2
    except ImportError:
        return None
    modules = [meta_pb2, decimal_pb2]
    try:
        from confluent_kafka.schema_registry.confluent.type import variant_pb2

        modules.append(variant_pb2)
    except ImportError:
        pass
    files = {}
    for module in modules:
        fd = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        files[fd.name] = proto_printer.print_file(fd)
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    root = Path(tempfile.gettempdir()) / f"schemakit-known-protos-{digest}"
    if not root.exists():
        staging = Path(tempfile.mkdtemp(prefix="schemakit-known-protos-"))
        for name, text in files.items():
            _write(staging, name, text)
        try:
            staging.rename(root)  # atomic: concurrent processes never see a half-written directory
        except OSError:  # another process won the race; its copy has the same content
            shutil.rmtree(staging, ignore_errors=True)
    return str(root)


def _write(root: Path, name: str, text: str) -> None:
    path = (root / name).resolve()
    # an import path is relative and stays inside the temp dir; anything else is a bad reference name
    if Path(name).is_absolute() or root.resolve() not in path.parents:
        raise ProtocError(f"Invalid import path '{name}': must be a relative path like 'dir/file.proto'")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
