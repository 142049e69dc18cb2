"""Server-side instructions per HTTP request, the registry against the bare ASGI app: what ``registry_bench.py``
compares by requests/s, counted by callgrind, which a loaded machine does not disturb.

Each server runs whole under valgrind (``--instr-atstart=no``): ``python -m registry serve`` on a SQLite log that
holds ``--schemas`` registered schemas, and ``bare_asgi.py`` serving the very bodies the registry answered. This
process is the client, outside valgrind: it sends every request of the workload once (the registry's read cache
fills), turns the server's instrumentation on, sends ``N`` requests on one keep-alive connection, turns it off;
then the same with ``k·N`` requests on a fresh server. The difference of the two counts divided by ``(k - 1)·N``
is one request's cost in the server: uvicorn, the HTTP parser, the event loop's wake-up and the app. The ratio
bare / registry is the throughput ratio a CPU-bound server would show.

    .venv/bin/python benchmarks/http_instructions.py [--schemas 200] [-n 300] [-k 3] [--json out.json]
        [--server-arg ARG ...] [--header "Name: value" ...] [--workload LABEL ...] [--keep DIR]

``--keep DIR`` keeps each counted run's callgrind file of the event loop's thread there (``<workload>-<server>-
<requests>.out``), for ``callgrind_annotate --inclusive=yes``: the difference of a workload's two files is what
its requests cost.

Needs ``valgrind`` (``make bench-instructions`` installs it). Startup under valgrind takes a minute or so.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from instructions import instrument
from own_registry import free_port, wait_http
from registry_bench import CT, register_many
from results_file import BenchRun, Case, Comparison, add_json_option

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: a workload: its label and, from the registered (subject, schema) pairs and ids, its requests
Request = tuple[str, str, bytes | None]  # method, path, body
WORKLOADS: dict[str, Callable[[list[tuple[str, str]], list[int]], list[Request]]] = {
    "GET /schemas/ids/{id}": lambda pairs, ids: [("GET", f"/schemas/ids/{i}", None) for i in ids],
    "GET /subjects/{s}/versions/latest": lambda pairs, ids: [
        ("GET", f"/subjects/{s}/versions/latest", None) for s in dict(pairs)
    ],
    "POST /subjects/{s} (lookup)": lambda pairs, ids: [
        ("POST", f"/subjects/{s}", json.dumps({"schema": text}).encode()) for s, text in pairs
    ],
}


def send_all(port: int, requests: list[Request], count: int, headers: dict[str, str]) -> dict[str, bytes]:
    """``count`` requests cycling over ``requests`` on one keep-alive connection; every answer must be a 200.
    Returns path -> body of the last answer to each path."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    bodies: dict[str, bytes] = {}
    try:
        for i in range(count):
            method, path, body = requests[i % len(requests)]
            connection.request(method, path, body=body, headers={**CT, **headers})
            answer = connection.getresponse()
            bodies[path] = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"{method} {path} answered {answer.status}: {bodies[path][:200]!r}")
    finally:
        connection.close()
    return bodies


def counted(
    command: list[str],
    ready: str,
    port: int,
    requests: list[Request],
    count: int,
    headers: dict,
    keep: Path | None = None,
) -> int:
    """Instructions of the event loop's thread of ``command`` (a server on ``port``, run under callgrind) for
    ``count`` requests, after one warm-up pass over ``requests`` with instrumentation off. ``keep``: where to
    copy that thread's callgrind file."""
    with tempfile.TemporaryDirectory() as d:
        # per thread: only the event loop's thread serves requests; what other threads (the log's tailer) do
        # meanwhile depends on how long the requests take, so it would make the count depend on the machine's load
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--separate-threads=yes",
            f"--callgrind-out-file={d}/out",
        ]
        proc = subprocess.Popen(
            [*valgrind, *command],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        try:
            wait_http(f"http://127.0.0.1:{port}{ready}", proc, timeout=600)
            send_all(port, requests, len(requests), headers)
            instrument(proc.pid, True)
            send_all(port, requests, count, headers)
            instrument(proc.pid, False)
            proc.terminate()
            _, stderr = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        main_thread = Path(d) / "out-01"  # the event loop runs on the main thread, callgrind's thread 1
        text = main_thread.read_text() if main_thread.exists() else ""
        if keep is not None and text:
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(main_thread, keep)
        found = re.search(r"^totals: (\d+)", text, re.M)
        if found is None:
            files = sorted(p.name for p in Path(d).iterdir())
            problem = f"no count in {files} (exit {proc.returncode})"
            raise RuntimeError(f"{command[:3]} under callgrind: {problem}: {stderr[-800:]}")
        return int(found.group(1))


def per_request(
    make: Callable[[int], list[str]],
    ready: str,
    requests: list[Request],
    n: int,
    k: int,
    headers: dict,
    keep: Path | None = None,
) -> float:
    """One request's instructions: the difference of the counts of ``k·N`` and ``N`` requests. ``keep``: a
    file name prefix for the two callgrind files (``-<requests>.out`` is added)."""

    def kept(count: int) -> Path | None:
        return None if keep is None else keep.with_name(f"{keep.name}-{count}.out")

    small = counted(make(port := free_port()), ready, port, requests, n, headers, kept(n))
    large = counted(make(port := free_port()), ready, port, requests, k * n, headers, kept(k * n))
    return (large - small) / ((k - 1) * n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=200)
    parser.add_argument("-n", type=int, default=300, help="requests in the small run")
    parser.add_argument("-k", type=int, default=3, help="the large run sends k·N requests")
    parser.add_argument("--server-arg", action="append", default=[], help="an option for `schemakit serve` (repeat)")
    parser.add_argument("--header", action="append", default=[], help='"Name: value" sent with every request')
    parser.add_argument("--workload", action="append", choices=list(WORKLOADS), help="default: all")
    parser.add_argument("--keep", type=Path, help="keep the callgrind files of the event loop's thread here")
    add_json_option(parser)
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind not found: make bench-instructions installs it (apt-get install valgrind)", file=sys.stderr)
        return 2
    headers = dict(h.split(": ", 1) for h in args.header)
    run = BenchRun(__file__, {"schemas": args.schemas, "n": args.n, "k": args.k, "server_args": args.server_arg})
    started = time.perf_counter()
    cases = []
    with tempfile.TemporaryDirectory() as d:
        data = Path(d) / "data"
        server_args = ["--log-level", "WARNING", *args.server_arg]
        labels = args.workload or list(WORKLOADS)
        port = free_port()
        log = ["--log", f"sqlite:///{data}", "--host", "127.0.0.1", "--port", str(port)]
        command = [sys.executable, "-m", "registry", "serve", *log, *server_args]
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{url}/health/ready", proc, timeout=600)  # a loaded machine takes more than a minute
            pairs = register_many(url, args.schemas, max(1, args.schemas // 10), "http-instructions", headers)
            max_id = httpx.get(f"{url}/schemas/ids/1", params={"fetchMaxId": "true"}, headers=headers).json()["maxId"]
            ids = list(range(1, max_id + 1))
            workloads = {label: WORKLOADS[label](pairs, ids) for label in labels}
            # the bare app serves the bytes the registry answers, each workload's from a file of its own
            bodies_files = {}
            for n, (label, requests) in enumerate(workloads.items()):
                bodies = send_all(int(url.rsplit(":", 1)[1]), requests, len(requests), headers)
                bodies_files[label] = Path(d) / f"bodies-{n}.json"
                bodies_files[label].write_text(json.dumps({path: body.decode() for path, body in bodies.items()}))
        finally:
            proc.terminate()
            proc.wait(30)

        def registry(port: int) -> list[str]:
            log = ["--log", f"sqlite:///{data}", "--host", "127.0.0.1", "--port", str(port)]
            return [sys.executable, "-m", "registry", "serve", *log, *server_args]

        print(f"server instructions per HTTP request, callgrind, N = {args.n}, k = {args.k}")
        print("| workload | schemakit | bare ASGI | ratio bare / schemakit |\n|---|---:|---:|---:|")
        for label, requests in workloads.items():

            def bare(port: int, bodies_file: Path = bodies_files[label]) -> list[str]:
                return [sys.executable, str(HERE / "bare_asgi.py"), "--port", str(port), "--bodies", str(bodies_file)]

            slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
            keep = None if args.keep is None else args.keep / slug

            def kept(server: str, prefix: Path | None = keep) -> Path | None:
                return None if prefix is None else prefix.with_name(f"{prefix.name}-{server}")

            ours = per_request(registry, "/health/ready", requests, args.n, args.k, headers, kept("schemakit"))
            theirs = per_request(bare, "/", requests, args.n, args.k, headers, kept("bare"))
            print(f"| {label} | {ours:,.0f} | {theirs:,.0f} | {theirs / ours:.2f} |", flush=True)
            cases.append(Case(label, ours, theirs, {"n": args.n, "k": args.k}))
    print(f"({time.perf_counter() - started:.0f} s)")
    comparison = Comparison(
        "server instructions per HTTP request", "instructions", "schemakit", "bare ASGI", cases, higher_is_better=False
    )
    run.write(args.json, [comparison])
    return 0


if __name__ == "__main__":
    sys.exit(main())
