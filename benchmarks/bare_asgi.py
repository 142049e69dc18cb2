"""The limit of the server stack: an ASGI app that answers from a dict of pre-rendered bodies.

Run by registry_bench.py on the same uvicorn settings as the registry, so the ratio between the two is
what our routing and logic cost on top of the stack.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn

HEADERS = [(b"content-type", b"application/vnd.schemaregistry.v1+json")]


def make_app(bodies: dict[str, bytes]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":  # read the request body as the registry does
            more = True
            while more:
                msg = await receive()
                more = msg.get("more_body", False)
        body = bodies.get(scope["path"], b"{}")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--bodies", required=True, help="JSON file: path -> response body text")
    a = p.parse_args()
    with open(a.bodies) as f:
        bodies = {k: v.encode() for k, v in json.load(f).items()}
    uvicorn.run(
        make_app(bodies),
        host="127.0.0.1",
        port=a.port,
        access_log=False,
        log_level="warning",
        lifespan="off",
        timeout_keep_alive=30,
    )


if __name__ == "__main__":
    main()
