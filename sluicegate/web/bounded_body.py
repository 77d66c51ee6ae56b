"""Read an HTTP request body up to a limit, streaming: an oversize body is refused before it is held.

A declared ``Content-Length`` over the limit is refused without reading anything; a body that
grows past the limit while streaming (chunked, or a lying header) is refused as soon as it does.
A read may also have a deadline for the whole body (``timeout``): a sender trickling bytes
(slow-loris) cannot hold a connection and its buffer for longer. A client that goes away before
its body is whole is :class:`ClientGone`, for the caller to count like any refusal: left to the
server, Starlette's ``ClientDisconnect`` was logged as a traceback of some 65 lines a request, past
the refusal log's rate limit, for any anonymous sender. Shared by the webhook API, the console and
the codec server.
"""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from sluicegate.errors import SluicegateError


class BodyNotReceived(SluicegateError):
    """The body did not arrive whole; ``status`` is the HTTP answer (if anyone still reads it)."""

    status = 400


class BodyTooSlow(BodyNotReceived):
    """The body did not arrive whole within the read deadline."""

    status = 408


class ClientGone(BodyNotReceived):
    """The client disconnected before its body was whole: nobody reads the answer."""


def declared_too_large(request: Request, limit: int) -> bool:
    """The request says up front (``Content-Length``) that its body is over ``limit``."""
    declared = request.headers.get("content-length")
    return declared is not None and declared.isdigit() and int(declared) > limit


async def read_limited(request: Request, limit: int, timeout: float | None = None) -> bytes | None:
    """The body, or None when it is over ``limit`` bytes; :class:`BodyTooSlow` when it has not
    arrived whole within ``timeout`` seconds (``None``: no deadline), :class:`ClientGone` when the
    client disconnected first."""
    if declared_too_large(request, limit):
        return None
    try:
        if timeout is None:
            return await _read(request, limit)
        try:
            async with asyncio.timeout(timeout):
                return await _read(request, limit)
        except TimeoutError:
            raise BodyTooSlow(f"body not received within {timeout:g}s") from None
    except ClientDisconnect:
        raise ClientGone("the client disconnected before its body was whole") from None


async def _read(request: Request, limit: int) -> bytes | None:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
