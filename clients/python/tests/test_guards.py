"""The FastAPI dependency and the Starlette middleware: 200 allowed, 403 denied, 503 undecided."""
from __future__ import annotations

import httpx
import pytest
from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conftest import Verdict, admin, free_port, role_rule
from verdict_client import AsyncVerdictClient
from verdict_client.guards import VerdictMiddleware, verdict_dependency
from verdict_client.wire import CheckRequest

pytestmark = pytest.mark.anyio


def mapping(request: Request) -> CheckRequest:
    return {"principal": {"attributes": {"role": request.headers.get("x-role", "")}}, "resource": {"uri": f"report:{request.path_params.get('id', '')}"}, "action": "read"}


def fastapi_app(client: AsyncVerdictClient) -> FastAPI:
    app = FastAPI()

    @app.get("/reports/{id}", dependencies=[Depends(verdict_dependency(client, mapping, reason_header="x-why"))])
    async def report(id: str) -> dict[str, str]:
        return {"id": id}

    return app


def starlette_app(client: AsyncVerdictClient) -> Starlette:
    async def report(request: Request) -> JSONResponse:
        return JSONResponse({"id": request.path_params["id"]})

    def by_path(request: Request) -> CheckRequest:
        check = mapping(request)
        check["resource"] = {"uri": f"report:{request.url.path.rsplit('/', 1)[-1]}"}
        return check

    app = Starlette(routes=[Route("/reports/{id}", report)])
    app.add_middleware(VerdictMiddleware, client=client, mapping=by_path)
    return app


@pytest.mark.parametrize("make_app", [fastapi_app, starlette_app])
async def test_allowed_denied_and_undecided(verdict: Verdict, make_app: object) -> None:
    admin(verdict.url, "POST", "/admin/policies", {"name": "access", "rules": [role_rule("reader")]})
    async with AsyncVerdictClient(verdict.url) as client:
        async with httpx.AsyncClient(app=make_app(client), base_url="http://app") as app:  # type: ignore[operator]
            allowed = await app.get("/reports/7", headers={"x-role": "reader"})
            assert (allowed.status_code, allowed.json()) == (200, {"id": "7"})
            denied = await app.get("/reports/7", headers={"x-role": "guest"})
            assert (denied.status_code, denied.json()) == (403, {"detail": "Forbidden"})
    async with AsyncVerdictClient(f"http://127.0.0.1:{free_port()}", retries=0) as gone:
        async with httpx.AsyncClient(app=make_app(gone), base_url="http://app") as app:  # type: ignore[operator]
            undecided = await app.get("/reports/7", headers={"x-role": "reader"})
            assert undecided.status_code == 503
            assert undecided.json()["detail"].startswith("Authorization could not be decided")
