"""The asyncio client: checks issued in one turn of the event loop go as one bulk; decisions cached exactly; reads of its own writes."""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping
from urllib.parse import quote

import httpx

from ._http import RETRY_BASE_SECONDS, TraceHeaders, headers_for, no_answer, read_answer, revision_of
from .cache import ChangeFollower, DecisionCache
from .errors import VerdictError, VerdictRequestError, VerdictTimeoutError, VerdictUnavailableError
from .tracing import Caller, CallTracing, OpenTelemetry
from .wire import CheckRequest, Decision, Entity, EntityCreate, PlanRequest, PlanResponse

SERVER_BULK_LIMIT = 1000


@dataclass
class _Pending:
    check: CheckRequest
    min_revision: int | None
    future: asyncio.Future[tuple[Decision, int | None]]
    caller: Caller


class AsyncVerdictClient:
    """
    A client of one Verdict server for asyncio apps (FastAPI, Starlette). ``url`` is its origin
    (``http://127.0.0.1:8421``); ``uds`` a Unix socket to reach it through instead. Use it as an async
    context manager, or call ``aclose()``.
    """

    def __init__(
        self,
        url: str,
        *,
        admin_key: str | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        batching: bool = True,
        max_batch: int = SERVER_BULK_LIMIT,
        cache: bool | int = False,
        read_your_writes: bool = True,
        uds: str | None = None,
        on_background_error: Callable[[Exception], None] = lambda error: None,
        trace_headers: TraceHeaders | None = None,
        opentelemetry: OpenTelemetry | None = None,
    ) -> None:
        transport = httpx.AsyncHTTPTransport(uds=uds) if uds is not None else None
        self._http = httpx.AsyncClient(base_url=url, timeout=timeout, transport=transport)
        self._admin_key = admin_key
        self._tracing = CallTracing(trace_headers, opentelemetry)
        self._timeout = timeout
        self._retries = retries
        self._batching = batching
        self._max_batch = max_batch
        self._read_your_writes = read_your_writes
        self._queue: list[_Pending] = []
        self._flush_scheduled = False
        self._written_revision: int | None = None
        self._cache = DecisionCache(10_000 if cache is True else int(cache)) if cache else None
        self._follower = (
            ChangeFollower(self._http, headers_for(admin_key, True, None), self._cache, on_background_error) if self._cache is not None else None
        )

    async def __aenter__(self) -> AsyncVerdictClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._follower is not None:
            await self._follower.close()
        await self._http.aclose()

    @property
    def cache_serving(self) -> bool:
        """Whether the cache may serve now: it follows the change feed, at a revision no older than this client's last write."""
        follower = self._follower
        if follower is None or not follower.keeps(follower.revision):
            return False
        return self._written_revision is None or (follower.revision is not None and follower.revision >= self._written_revision)

    @property
    def changes_applied(self) -> int:
        """The change feed's lines applied to the cache so far (0 without a cache)."""
        return 0 if self._follower is None else self._follower.changes_applied

    @property
    def cached_decisions(self) -> int:
        """How many decisions the cache holds now."""
        return 0 if self._cache is None else len(self._cache)

    async def check(self, check: CheckRequest, *, explain: bool = False, timeout: float | None = None, route: str | None = None) -> Decision:
        """
        The decision for one check: from the cache when it holds it, else batched with the checks issued
        beside it. ``route``, the app's route that asks, is named on the client's span (with ``opentelemetry``).
        """
        work = self._check(check, explain, route)
        return await (work if timeout is None else _within(work, timeout, "check"))

    async def check_many(self, checks: list[CheckRequest], *, explain: bool = False) -> list[Decision]:
        """The decisions for several checks, in order."""
        return list(await asyncio.gather(*(self._check(check, explain, None) for check in checks)))

    async def plan(self, request: PlanRequest) -> PlanResponse:
        """What a principal may do with which resources: ``POST /plan``."""
        body, _ = await self._send("POST", "/plan", request, retryable=True)
        return body  # type: ignore[no-any-return]

    async def register_entity(self, entity: EntityCreate) -> Entity:
        """Registers an entity (admin key). Not retried: a second registration of the same uri would be refused."""
        registered: Entity = await self._write("POST", "/admin/fetchers/registry/entities", entity)
        self._drop({registered["uri"]})
        return registered

    async def update_entity(self, uri: str, entity: dict[str, Any]) -> Entity:
        """Replaces a registered entity's attributes (admin key)."""
        updated: Entity = await self._write("PUT", f"/admin/fetchers/registry/entities/{_escaped(uri)}", {**entity, "uri": uri})
        self._drop({uri})
        return updated

    async def delete_entity(self, uri: str) -> None:
        """Deletes a registered entity (admin key)."""
        await self._write("DELETE", f"/admin/fetchers/registry/entities/{_escaped(uri)}", None)
        self._drop({uri})

    async def _check(self, check: CheckRequest, explain: bool, route: str | None) -> Decision:
        cacheable = not explain and self._cache is not None and not _names_token(check)
        key = json.dumps(check, sort_keys=True) if cacheable else ""
        if cacheable:
            assert self._follower is not None and self._cache is not None
            self._follower.start()
            if self.cache_serving and (cached := self._cache.get(key)) is not None:
                return cached
        epoch = self._cache.epoch if self._cache is not None else 0
        decision, revision = await self._decide(check, explain, self._tracing.caller(route))
        if cacheable and self._follower is not None and self._cache is not None and self._follower.keeps(revision):
            self._cache.put(key, decision, _uris_of(check), epoch)
        return decision

    async def _decide(self, check: CheckRequest, explain: bool, caller: Caller) -> tuple[Decision, int | None]:
        min_revision = self._written_revision if self._read_your_writes else None
        if not self._batching or explain:
            return await self._alone(check, explain, min_revision, caller)
        future: asyncio.Future[tuple[Decision, int | None]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(check, min_revision, future, caller))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._queue = self._queue, []
        for start in range(0, len(pending), self._max_batch):
            asyncio.get_running_loop().create_task(self._send_batch(pending[start : start + self._max_batch]))

    async def _send_batch(self, batch: list[_Pending]) -> None:
        if len(batch) == 1:
            return await self._settle_alone(batch[0])
        revisions = [pending.min_revision for pending in batch if pending.min_revision is not None]
        try:
            # A check that cannot be decided as asked refuses the bulk, naming it, so that its caller is answered as /check answers it.
            answers, headers = await self._tracing.sent(
                [pending.caller for pending in batch],
                lambda trace: self._send("POST", "/check/bulk?conflicts=refuse", [pending.check for pending in batch], retryable=True, min_revision=max(revisions, default=None), trace=trace),
            )
        except VerdictError as error:
            return await self._recover(batch, error)
        except Exception as error:  # noqa: BLE001 - every caller is answered, whatever went wrong
            for pending in batch:
                _fail(pending, error)
            return
        if not isinstance(answers, list) or len(answers) != len(batch):
            wrong = VerdictUnavailableError(f"POST /check/bulk: {len(batch)} checks, but {len(answers) if isinstance(answers, list) else 'no list of'} answers")
            for pending in batch:
                _fail(pending, wrong)
            return
        revision = revision_of(headers)
        for pending, answer in zip(batch, answers):
            if not pending.future.done():
                pending.future.set_result((answer, revision))

    async def _recover(self, batch: list[_Pending], error: VerdictError) -> None:
        """A bulk refused whole: fail the items a 422 names and send the rest again, halve it on 413, or send each alone after another 4xx."""
        if error.status is None or error.status >= 500:
            for pending in batch:
                _fail(pending, error)
            return
        refused = _issues_by_item(error.detail) if error.status == 422 else None
        if refused is not None:
            rest = []
            for index, pending in enumerate(batch):
                issues = refused.get(index)
                if issues is None:
                    rest.append(pending)
                else:
                    _fail(pending, _as_alone(issues, error.request_id))
            if rest:
                await self._send_batch(rest)
            return
        if error.status == 413:
            half = (len(batch) + 1) // 2
            await asyncio.gather(self._send_batch(batch[:half]), self._send_batch(batch[half:]))
            return
        await asyncio.gather(*(self._settle_alone(pending) for pending in batch))

    async def _settle_alone(self, pending: _Pending) -> None:
        try:
            result = await self._alone(pending.check, False, pending.min_revision, pending.caller)
        except Exception as error:  # noqa: BLE001 - the caller is given whatever went wrong
            _fail(pending, error)
            return
        if not pending.future.done():
            pending.future.set_result(result)

    async def _alone(self, check: CheckRequest, explain: bool, min_revision: int | None, caller: Caller) -> tuple[Decision, int | None]:
        path = "/check?explain=true" if explain else "/check"
        body, headers = await self._tracing.sent([caller], lambda trace: self._send("POST", path, check, retryable=True, admin=explain, min_revision=min_revision, trace=trace))
        return body, revision_of(headers)

    async def _write(self, method: str, path: str, body: Any) -> Any:
        answer, headers = await self._send(method, path, body, retryable=False, admin=True)
        revision = revision_of(headers)
        if revision is not None and (self._written_revision is None or revision > self._written_revision):
            self._written_revision = revision
        return answer

    async def _send(
        self, method: str, path: str, body: Any, *, retryable: bool, admin: bool = False, min_revision: int | None = None, trace: Mapping[str, str] | None = None
    ) -> tuple[Any, httpx.Headers]:
        # The active context is read here, in the caller's (a bulk's is its first caller's: the flush was scheduled from it).
        headers = {**(self._tracing.active_headers() if trace is None else trace), **headers_for(self._admin_key, admin, min_revision)}
        for attempt in range(self._retries + 1):
            try:
                try:
                    response = await self._request(method, path, body, headers)
                except httpx.HTTPError as error:
                    raise no_answer(method, path, error, self._timeout) from error
                return read_answer(method, path, response), response.headers
            except VerdictError as error:
                if not (retryable and error.retryable and attempt < self._retries):
                    raise
                await asyncio.sleep(RETRY_BASE_SECONDS * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _request(self, method: str, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
        # In a task of its own, so that a caller's cancellation (a timeout of the app's) returns at once even
        # where the transport is slow to unwind or swallows it, as anyio 3 can mid-request.
        request = asyncio.ensure_future(self._http.request(method, path, json=body, headers=headers))
        try:
            return await asyncio.shield(request)
        except asyncio.CancelledError:
            request.cancel()
            request.add_done_callback(_retrieve_outcome)
            raise

    def _drop(self, uris: set[str]) -> None:
        if self._cache is not None:
            self._cache.drop_uris(uris)


async def _within(work: Awaitable[Decision], timeout: float, what: str) -> Decision:
    """``work``, or a VerdictTimeoutError after ``timeout`` seconds: a batched check goes on in its bulk for the other callers."""
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(work)), timeout)
    except asyncio.TimeoutError:
        raise VerdictTimeoutError(f"{what}: no answer within {timeout:g} s") from None


def _retrieve_outcome(abandoned: asyncio.Future[Any]) -> None:
    """Marks an abandoned request's outcome as read: nobody waits for it any more."""
    if not abandoned.cancelled():
        abandoned.exception()


def _fail(pending: _Pending, error: BaseException) -> None:
    if not pending.future.done():
        pending.future.set_exception(error)


def _escaped(uri: str) -> str:
    return quote(uri, safe="")


def _names_token(check: CheckRequest) -> bool:
    """A check naming a bearer token is never cached: the token expires with no change on the feed."""
    principal = check.get("principal")
    return isinstance(principal, dict) and bool(principal.get("token"))


def _uris_of(check: CheckRequest) -> frozenset[str]:
    """The registered entities a check reads: those it names by uri, in either form."""
    principal, resource = check.get("principal") or {}, check.get("resource") or {}
    uris = [principal.get("uri"), resource.get("uri"), check.get("principal_uri"), check.get("resource_uri")]
    return frozenset(uri for uri in uris if isinstance(uri, str))


def _as_alone(issues: list[dict[str, Any]], request_id: str | None) -> VerdictRequestError:
    """The error /check gives a check the bulk refused: 400 with the message for a conflict, else 422 with its issues."""
    conflict = next((issue for issue in issues if issue.get("type") == "attribute_conflict"), None)
    if conflict is not None:
        return VerdictRequestError(f"POST /check: 400 {conflict['msg']}", 400, conflict["msg"], request_id)
    described = "; ".join(f"{'.'.join(str(part) for part in issue['loc'])}: {issue['msg']}" for issue in issues)
    return VerdictRequestError(f"POST /check: 422 {described}", 422, issues, request_id)


def _issues_by_item(detail: Any) -> dict[int, list[dict[str, Any]]] | None:
    """A bulk's 422 issues by the item they are about (``loc`` ``body.<index>...``), each located as a single check's would be."""
    if not isinstance(detail, list) or not detail:
        return None
    by_item: dict[int, list[dict[str, Any]]] = {}
    for issue in detail:
        if isinstance(issue, dict) and issue.get("type") == "too_many_errors":
            continue  # the items past the listed ones are sent again, and named by the next answer
        loc = issue.get("loc") if isinstance(issue, dict) else None
        if not isinstance(loc, list) or len(loc) < 2 or loc[0] != "body" or not isinstance(loc[1], int):
            return None
        by_item.setdefault(loc[1], []).append({**issue, "loc": ["body", *loc[2:]]})
    return by_item or None
