"""Guarding routes of a FastAPI or Starlette app: allowed goes on, denied is 403, a refused token 401, undecided 503; never an allow by accident."""
from __future__ import annotations

from typing import Any, Awaitable, Callable
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .client import AsyncVerdictClient
from .errors import VerdictCredentialError, VerdictError, describe_detail
from .wire import CheckRequest

Mapping = Callable[[Request], "CheckRequest | Awaitable[CheckRequest] | None"]


async def refusal_of(client: AsyncVerdictClient, mapping: Mapping, request: Request, reason_header: str | None = None) -> Response | None:
    """None lets ``request`` through; otherwise the answer that stops it. A mapping that returns None leaves the route unguarded."""
    try:
        check = mapping(request)
        if check is not None and not isinstance(check, dict):
            check = await check
        if check is None:
            return None
        decision = await client.check(check, route=_route_template(request))
    except VerdictCredentialError:
        return JSONResponse({"detail": "Unauthorized"}, status_code=401, headers={"www-authenticate": 'Bearer error="invalid_token"'})
    except VerdictError as error:
        return JSONResponse({"detail": f"Authorization could not be decided: {describe_detail(error.detail or str(error))}"}, status_code=503)
    if decision["allowed"]:
        return None
    headers = {} if reason_header is None else {reason_header: quote(decision["reason"], safe="")}
    return JSONResponse({"detail": "Forbidden"}, status_code=403, headers=headers)


def _route_template(request: Request) -> str | None:
    """The app's route that matched (``/documents/{id}``), known once routing ran (in a dependency, not in middleware)."""
    path = getattr(request.scope.get("route"), "path", None)
    return path if isinstance(path, str) else None


class VerdictMiddleware:
    """
    Starlette (and FastAPI) middleware: every HTTP request is decided by the check ``mapping`` makes
    of it (None: not guarded). ``reason_header`` sends a denial's reason, percent-encoded, in that header.
    """

    def __init__(self, app: ASGIApp, *, client: AsyncVerdictClient, mapping: Mapping, reason_header: str | None = None) -> None:
        self.app = app
        self.client = client
        self.mapping = mapping
        self.reason_header = reason_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await refusal_of(self.client, self.mapping, Request(scope, receive), self.reason_header)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def verdict_dependency(client: AsyncVerdictClient, mapping: Mapping, *, reason_header: str | None = None) -> Callable[[Request], Awaitable[None]]:
    """
    A FastAPI dependency guarding a route: ``@app.get("/documents/{id}", dependencies=[Depends(verdict_dependency(client, mapping))])``.
    A refusal is raised as an HTTPException with its status, detail and headers.
    """
    from fastapi import HTTPException

    async def guard(request: Request) -> None:
        refusal = await refusal_of(client, mapping, request, reason_header)
        if refusal is not None:
            detail: Any = __import__("json").loads(bytes(refusal.body))["detail"]
            raise HTTPException(status_code=refusal.status_code, detail=detail, headers={key: value for key, value in refusal.headers.items() if key in ("www-authenticate", reason_header)})

    return guard
