"""The two transports that run the registry API's I/O-free calls (``serdes.registry_api``): one over
``httpx.Client`` and ``time.sleep``, one over ``httpx.AsyncClient`` and ``asyncio.sleep``.

These drivers are all the registry clients and the OAuth token fetcher do differently in sync and async code;
everything they drive is shared.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

import httpx

from serdes.registry_api import Call, HttpRequest

T = TypeVar("T")


def run_sync(http: httpx.Client, call: Call[T]) -> T:
    """Run ``call`` to its result, performing its effects with ``http``."""
    reply: Any = None
    try:
        while True:
            effect = call.send(reply)
            if isinstance(effect, HttpRequest):
                try:
                    resp = http.request(
                        effect.method, effect.url, content=effect.content, headers=effect.headers, params=effect.params
                    )
                    reply = (resp.status_code, resp.content)
                except httpx.TransportError as e:
                    reply = e
            else:
                time.sleep(effect.seconds)
                reply = None
    except StopIteration as done:
        return done.value


async def run_async(http: httpx.AsyncClient, call: Call[T]) -> T:
    """Run ``call`` to its result, performing its effects with ``http`` on the running event loop."""
    reply: Any = None
    try:
        while True:
            effect = call.send(reply)
            if isinstance(effect, HttpRequest):
                try:
                    resp = await http.request(
                        effect.method, effect.url, content=effect.content, headers=effect.headers, params=effect.params
                    )
                    reply = (resp.status_code, resp.content)
                except httpx.TransportError as e:
                    reply = e
            else:
                await asyncio.sleep(effect.seconds)
                reply = None
    except StopIteration as done:
        return done.value
