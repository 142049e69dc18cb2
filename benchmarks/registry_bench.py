"""Registry read throughput and latency, side by side with the bare server stack, plus memory at scale.

    .venv/bin/python benchmarks/registry_bench.py [--duration 10] [--rounds 3] [--connections 64] [--schemas 1000]
        [--server-arg ARG ...] [--header "Name: value" ...]

1. Starts the registry (SQLite log in a temp dir) and registers ``--schemas`` Avro schemas
   (100 subjects, each with several versions).
2. Starts ``bare_asgi.py`` on the same uvicorn settings, serving the very response bytes the registry gave.
3. A load generator in another process (``wrk``, one thread, ``--connections`` keep-alive connections) hits
   ``GET /schemas/ids/{id}``, ``POST /subjects/{s}`` (lookup) and ``GET /subjects/{s}/versions/latest``,
   cycling over all ids/subjects, on both servers in ``--rounds`` alternating rounds (the best round of each
   side counts); prints requests/s, p99 latency (of that round) and the ratio.
4. Registers ``--memory-schemas`` schemas on a fresh registry and reports its resident memory.

The same rows with authentication on: ``--server-arg`` passes options to ``schemakit serve`` (repeat it), and
``--header`` adds a request header to every request (registration, the wrk rows of both servers), e.g.
``--server-arg=--auth=basic --server-arg=--users-file=users.json --header "Authorization: Basic dTpw"``
(the user needs Write on the ``bench-`` subjects). The bare ASGI app ignores the header, so the ratio shows
what authenticating and authorizing every request costs.

``wrk`` comes from Debian (``apt-get install wrk``); ``make bench`` installs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import own_registry
from own_registry import free_port, wait_http
from results_file import BenchRun, Case, Comparison, add_json_option

HERE = Path(__file__).resolve().parent
CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def start_registry(data: Path, extra_args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """``own_registry.start_registry`` logging warnings only (unless ``--server-arg`` says otherwise)."""
    return own_registry.start_registry(data, ["--log-level", "WARNING", *extra_args])


def schema(i: int, version: int) -> str:
    fields = [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]
    fields += [{"name": f"f{v}", "type": ["null", "string"], "default": None} for v in range(version)]
    return json.dumps({"type": "record", "name": f"Rec{i}", "namespace": "bench", "fields": fields})


def register_many(url: str, count: int, subjects: int, label: str, headers: dict[str, str]) -> list[tuple[str, str]]:
    """Register ``count`` schemas over ``subjects`` subjects; returns (subject, schema) pairs."""
    out = []
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
        per_subject = max(1, count // subjects)
        for n in range(count):
            s_idx, v = divmod(n, per_subject)
            subject = f"bench-{s_idx}-value"
            text = schema(s_idx, v)
            r = c.post(f"/subjects/{subject}/versions", json={"schema": text}, headers=CT)
            r.raise_for_status()
            out.append((subject, text))
            if (n + 1) % 1000 == 0:
                print(
                    f"  {label}: registered {n + 1}/{count} ({(n + 1) / (time.monotonic() - started):.0f}/s)",
                    flush=True,
                )
    return out


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def lua_script(path: Path, requests: list[tuple[str, str | None]], headers: dict[str, str]) -> None:
    """A wrk script cycling through (path, body) requests, each with ``headers``."""
    lines = ["local reqs = {}"]
    for i, (p, body) in enumerate(requests, start=1):
        if body is None:
            lua_headers = ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())
            lines.append(f'reqs[{i}] = wrk.format("GET", {json.dumps(p)}, {{{lua_headers}}})')
        else:
            with_ct = {**headers, "Content-Type": "application/vnd.schemaregistry.v1+json"}
            lua_headers = ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in with_ct.items())
            lines.append(f'reqs[{i}] = wrk.format("POST", {json.dumps(p)}, {{{lua_headers}}}, {json.dumps(body)})')
    lines += ["local n = 0", "request = function()", "  n = n + 1", "  return reqs[(n % #reqs) + 1]", "end"]
    path.write_text("\n".join(lines) + "\n")


def run_wrk(url: str, script: Path, duration: int, connections: int) -> tuple[float, float]:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)] if m else float("nan")
    if "Non-2xx" in out:
        raise SystemExit(f"non-2xx answers during the run:\n{out}")
    return rps, p99


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per row and server, alternating; best kept")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--schemas", type=int, default=1000)
    ap.add_argument("--memory-schemas", type=int, default=10_000)
    ap.add_argument("--server-arg", action="append", default=[], help="an option for `schemakit serve` (repeat)")
    ap.add_argument("--header", action="append", default=[], help='"Name: value" sent with every request (repeat)')
    add_json_option(ap)
    args = ap.parse_args()
    headers = dict(h.split(":", 1) for h in args.header)
    headers = {k.strip(): v.strip() for k, v in headers.items()}
    run = BenchRun(__file__, {**vars(args), "header": sorted(headers)})  # header names only: values hold secrets
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install wrk (make bench does it)")

    tmp = Path(tempfile.mkdtemp(prefix="registry-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        reg, reg_url = start_registry(tmp / "data", args.server_arg)
        procs.append(reg)
        print(f"registering {args.schemas} schemas ...", flush=True)
        pairs = register_many(reg_url, args.schemas, 100, "bench", headers)
        subjects = sorted({s for s, _ in pairs})
        latest_text = {s: t for s, t in pairs}  # last registered per subject = latest version
        with httpx.Client(base_url=reg_url, headers=headers) as c:
            max_id = c.get("/schemas/ids/1", params={"fetchMaxId": "true"}).json()["maxId"]
            by_id = [f"/schemas/ids/{i}" for i in range(1, max_id + 1)]
            latest = [f"/subjects/{s}/versions/latest" for s in subjects]
            lookup = [(f"/subjects/{s}", json.dumps({"schema": latest_text[s]})) for s in subjects]
            bodies = {p: c.get(p).text for p in by_id + latest}
            for p, b in lookup:
                r = c.post(p, content=b, headers=CT)
                r.raise_for_status()
                bodies[p] = r.text
        bodies_file = tmp / "bodies.json"
        bodies_file.write_text(json.dumps(bodies))
        bare_port = free_port()
        bare = subprocess.Popen(
            [sys.executable, str(HERE / "bare_asgi.py"), "--port", str(bare_port), "--bodies", str(bodies_file)]
        )
        procs.append(bare)
        bare_url = f"http://127.0.0.1:{bare_port}"
        wait_http(bare_url + "/", bare)

        workloads = {
            "GET /schemas/ids/{id}": [(p, None) for p in by_id],
            "POST /subjects/{s} (lookup)": lookup,
            "GET /subjects/{s}/versions/latest": [(p, None) for p in latest],
        }
        rows = []
        for name, reqs in workloads.items():
            script = tmp / "load.lua"
            lua_script(script, reqs, headers)  # type: ignore[arg-type]
            # Rounds alternate between the two servers and each side keeps its best round, so a burst of load
            # from elsewhere on a shared machine hurts neither side more than the other.
            ours, limit = (0.0, 0.0), (0.0, 0.0)
            for _ in range(args.rounds):
                ours = max(ours, run_wrk(reg_url, script, args.duration, args.connections))
                limit = max(limit, run_wrk(bare_url, script, args.duration, args.connections))
            rows.append((name, ours, limit))
            print(
                f"{name}: schemakit {ours[0]:.0f} req/s p99 {ours[1]:.1f} ms; bare ASGI {limit[0]:.0f} req/s "
                f"p99 {limit[1]:.1f} ms; ratio {ours[0] / limit[0]:.2f}",
                flush=True,
            )
        reg_rss = rss_kib(reg.pid)

        for p in procs:
            p.terminate()
            p.wait(10)
        procs.clear()
        print(f"memory: registering {args.memory_schemas} schemas on a fresh registry ...", flush=True)
        mem, mem_url = start_registry(tmp / "data-mem", args.server_arg)
        procs.append(mem)
        base_rss = rss_kib(mem.pid)
        register_many(mem_url, args.memory_schemas, 1000, "memory", headers)
        with httpx.Client(base_url=mem_url, headers=headers) as c:  # touch every id so pre-rendered bodies exist
            for i in range(1, args.memory_schemas + 1):
                c.get(f"/schemas/ids/{i}")
        big_rss = rss_kib(mem.pid)

        print()
        if args.server_arg or headers:
            print(f"server options {args.server_arg}, request headers {sorted(headers)}")
        print(
            f"| workload ({args.connections} connections, best of {args.rounds} x {args.duration} s, wrk 1 thread) "
            "| schemakit req/s | p99 ms | bare ASGI req/s | p99 ms | ratio |"
        )
        print("|---|---|---|---|---|---|")
        for name, ours, limit in rows:
            print(
                f"| {name} | {ours[0]:.0f} | {ours[1]:.1f} | {limit[0]:.0f} | {limit[1]:.1f} | "
                f"{ours[0] / limit[0]:.2f} |"
            )
        print(f"| RSS with {args.schemas} schemas | {reg_rss / 1024:.0f} MiB | | | | |")
        print(
            f"| RSS empty / with {args.memory_schemas} schemas | {base_rss / 1024:.0f} MiB / "
            f"{big_rss / 1024:.0f} MiB | | | | |"
        )
        cases = [Case(name, o[0], b[0], {"ours p99 ms": o[1], "peer p99 ms": b[1]}) for name, o, b in rows]
        run.write(
            args.json,
            [Comparison("cached reads", "requests/s", "schemakit", "bare ASGI app, same bytes", cases)],
            {
                f"RSS MiB with {args.schemas} schemas": reg_rss / 1024,
                "RSS MiB empty": base_rss / 1024,
                f"RSS MiB with {args.memory_schemas} schemas": big_rss / 1024,
            },
        )
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        if os.environ.get("BENCH_KEEP"):
            print(tmp)


if __name__ == "__main__":
    main()
