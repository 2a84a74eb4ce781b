"""The blocking client, for code without an event loop: one request per check, ``check_many`` as one bulk."""
from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import httpx

from ._http import RETRY_BASE_SECONDS, TraceHeaders, headers_for, no_answer, read_answer, revision_of
from .errors import VerdictError
from .tracing import CallTracing, OpenTelemetry
from .wire import CheckRequest, Decision, Entity, EntityCreate, PlanRequest, PlanResponse


class VerdictClient:
    """
    A blocking client of one Verdict server. It neither batches nor caches (both need an event loop:
    see AsyncVerdictClient); it reads its own writes. Use it as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        url: str,
        *,
        admin_key: str | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        read_your_writes: bool = True,
        uds: str | None = None,
        trace_headers: TraceHeaders | None = None,
        opentelemetry: OpenTelemetry | None = None,
    ) -> None:
        transport = httpx.HTTPTransport(uds=uds) if uds is not None else None
        self._http = httpx.Client(base_url=url, timeout=timeout, transport=transport)
        self._admin_key = admin_key
        self._tracing = CallTracing(trace_headers, opentelemetry)
        self._timeout = timeout
        self._retries = retries
        self._read_your_writes = read_your_writes
        self._written_revision: int | None = None

    def __enter__(self) -> VerdictClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def check(self, check: CheckRequest, *, explain: bool = False) -> Decision:
        """The decision for one check: ``POST /check``."""
        body: Decision = self._send("POST", "/check?explain=true" if explain else "/check", check, retryable=True, admin=explain)
        return body

    def check_many(self, checks: list[CheckRequest]) -> list[Decision]:
        """The decisions for several checks, in order: one ``POST /check/bulk``."""
        body: list[Decision] = self._send("POST", "/check/bulk", checks, retryable=True)
        return body

    def plan(self, request: PlanRequest) -> PlanResponse:
        """What a principal may do with which resources: ``POST /plan``."""
        body: PlanResponse = self._send("POST", "/plan", request, retryable=True)
        return body

    def register_entity(self, entity: EntityCreate) -> Entity:
        """Registers an entity (admin key); never retried."""
        body: Entity = self._send("POST", "/admin/fetchers/registry/entities", entity, retryable=False, admin=True)
        return body

    def update_entity(self, uri: str, entity: dict[str, Any]) -> Entity:
        """Replaces a registered entity's attributes (admin key)."""
        body: Entity = self._send("PUT", f"/admin/fetchers/registry/entities/{quote(uri, safe='')}", {**entity, "uri": uri}, retryable=False, admin=True)
        return body

    def delete_entity(self, uri: str) -> None:
        """Deletes a registered entity (admin key)."""
        self._send("DELETE", f"/admin/fetchers/registry/entities/{quote(uri, safe='')}", None, retryable=False, admin=True)

    def _send(self, method: str, path: str, body: Any, *, retryable: bool, admin: bool = False) -> Any:
        min_revision = self._written_revision if self._read_your_writes and not admin else None
        headers = {**self._tracing.active_headers(), **headers_for(self._admin_key, admin, min_revision)}
        for attempt in range(self._retries + 1):
            try:
                try:
                    response = self._http.request(method, path, json=body, headers=headers)
                except httpx.HTTPError as error:
                    raise no_answer(method, path, error, self._timeout) from error
                answer = read_answer(method, path, response)
            except VerdictError as error:
                if not (retryable and error.retryable and attempt < self._retries):
                    raise
                time.sleep(RETRY_BASE_SECONDS * 2**attempt)
                continue
            revision = revision_of(response.headers)
            if admin and revision is not None and (self._written_revision is None or revision > self._written_revision):
                self._written_revision = revision
            return answer
        raise AssertionError("unreachable: the last attempt returns or raises")
