"""Compile ``.proto`` text with the real protoc shipped in ``grpcio-tools``.

protoc runs in a child process (``python -m grpc_tools.protoc``): its diagnostics go to the C++ side's
stderr, which cannot be captured safely in-process while other threads log. Results are cached by a digest
of (main text, imported files), since compiling costs a process start, within a bound on their bytes. A
compile that takes longer than ``timeout`` seconds (:func:`configure`; the server passes its config's
``protoc_timeout``, by default ``limits.DEFAULT_PROTOC_TIMEOUT``) is killed and reported as a
:class:`ProtocError` naming the limit.

Everything protoc reads is written into directories only this process can use (``mkdtemp``: mode 0700,
a fresh name): the include directory of known files lives as long as the process and is removed at
exit, so no other local user can plant or read a ``.proto`` there.
"""

from __future__ import annotations

import atexit
import functools
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
from registry.limits import DEFAULT_PROTOC_TIMEOUT
from registry.schema_types import proto_printer

#: the name the main file is compiled under; chosen so it cannot collide with a user import path
MAIN_FILE = "__schemakit_main__.proto"
_timeout = DEFAULT_PROTOC_TIMEOUT  # seconds one protoc run may take before it is killed


def configure(*, timeout: float) -> None:
    """Set how long one protoc run may take (seconds, > 0) for this process."""
    global _timeout
    if not timeout > 0:
        raise ValueError(f"protoc timeout must be > 0 seconds, got {timeout!r}")
    _timeout = timeout


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
        try:
            # protoc echoes the schema's bytes in its messages (a string literal that is not UTF-8, such as an
            # escaped lone surrogate): they are kept as backslash escapes, never a decoding error
            proc = subprocess.run(
                args,
                capture_output=True,
                encoding="utf-8",
                errors="backslashreplace",
                timeout=_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:  # run() has killed protoc
            raise ProtocError(
                f"protoc did not finish compiling the schema within {_timeout:g}s (the compile time limit); "
                "simplify the schema or its imports"
            ) from e
        if proc.returncode != 0 or not out.exists():
            message = (proc.stderr or proc.stdout).strip().replace(str(src) + os.sep, "")
            raise ProtocError(message or f"protoc failed with exit code {proc.returncode}")
        return out.read_bytes()


def _confluent_protos() -> str | None:
    """A directory holding ``confluent/meta.proto`` and ``confluent/type/*.proto``, private to this process
    (``include_roots`` caches it) and removed when the process exits."""
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
    root = Path(tempfile.mkdtemp(prefix="schemakit-known-protos-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for module in modules:
        fd = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        _write(root, fd.name, proto_printer.print_file(fd))
    return str(root)


def _write(root: Path, name: str, text: str) -> None:
    path = (root / name).resolve()
    # an import path is relative and stays inside the temp dir; anything else is a bad reference name
    if Path(name).is_absolute() or root.resolve() not in path.parents:
        raise ProtocError(f"Invalid import path '{name}': must be a relative path like 'dir/file.proto'")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
