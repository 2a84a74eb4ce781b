"""The async and sync clients against a real Verdict: batched answers equal /check's, typed errors, failing closed."""
from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
import pytest

from conftest import ADMIN_KEY, Verdict, admin, free_port, role_rule
from verdict_client import (
    AsyncVerdictClient,
    VerdictAdminKeyError,
    VerdictClient,
    VerdictRequestError,
    VerdictTimeoutError,
    VerdictUnavailableError,
)
from verdict_client.wire import CheckRequest

pytestmark = pytest.mark.anyio


def random_check(chance: random.Random) -> CheckRequest:
    """A check of a random role on a random document; one in six malformed, so that the server refuses it."""
    if chance.random() < 1 / 6:
        malformed: Any = {"principal": {"uri": chance.choice([5, True, ["x"]])}, "resource": {"uri": "doc:1"}, "action": "read"}
        return malformed  # type: ignore[no-any-return]
    role = chance.choice(["reader", "writer", "guest", "nobody"])
    return {"principal": {"attributes": {"role": role}}, "resource": {"uri": f"doc:{chance.randrange(5)}"}, "action": chance.choice(["read", "write"])}


async def test_batched_answers_equal_check_alone_refusals_included(verdict: Verdict) -> None:
    writers: dict[str, object] = {**role_rule("writer"), "actions": ["read", "write"]}
    admin(verdict.url, "POST", "/admin/policies", {"name": "access", "rules": [role_rule("reader"), writers]})
    chance = random.Random(7)
    checks = [random_check(chance) for _ in range(300)]
    sent: list[int] = []

    async def count_bulks(request: httpx.Request) -> None:
        sent.append(len(request.content))

    async with AsyncVerdictClient(verdict.url) as client:
        client._http.event_hooks["request"].append(count_bulks)
        outcomes = await asyncio.gather(*(client.check(check) for check in checks), return_exceptions=True)
    assert len(sent) < 20, f"{len(sent)} requests for {len(checks)} checks: they go as bulks"
    refused = 0
    for check, outcome in zip(checks, outcomes):
        alone = httpx.post(f"{verdict.url}/check", json=check)
        if alone.status_code == 200:
            assert outcome == alone.json(), check
        else:
            refused += 1
            assert isinstance(outcome, VerdictRequestError), (check, outcome)
            assert outcome.status == alone.status_code
            assert outcome.detail == alone.json()["detail"]
    assert refused > 20


def test_the_sync_client_decides_as_check_does_and_reads_its_own_writes(verdict: Verdict) -> None:
    admin(verdict.url, "POST", "/admin/policies", {"name": "access", "rules": [role_rule("reader")]})
    with VerdictClient(verdict.url) as client:
        client.register_entity({"uri": "user:ann", "type": "principal", "attributes": {"role": "reader"}})
        check: CheckRequest = {"principal": {"uri": "user:ann"}, "resource": {"uri": "doc:1"}, "action": "read"}
        assert client.check(check)["allowed"] is True
        client.update_entity("user:ann", {"type": "principal", "attributes": {"role": "guest"}})
        assert client.check(check)["allowed"] is False, "decided at the revision of its own write"
        reader: CheckRequest = {"principal": {"attributes": {"role": "reader"}}, "resource": {"uri": "doc:1"}, "action": "read"}
        assert [answer["allowed"] for answer in client.check_many([check, reader])] == [False, True]
        with pytest.raises(VerdictRequestError) as refused:
            client.check({"principal": {"uri": 5}, "resource": {"uri": "doc:1"}, "action": "read"})  # type: ignore[typeddict-item]
        assert refused.value.status == 422 and refused.value.issues[0]["loc"] == ["body", "principal", "uri"]
        assert refused.value.request_id


async def test_a_missing_or_wrong_admin_key_is_its_own_error(guarded_verdict: Verdict) -> None:
    for key in (None, "not-the-key-but-long-enough-0123456789"):
        async with AsyncVerdictClient(guarded_verdict.url, admin_key=key) as client:
            with pytest.raises(VerdictAdminKeyError) as refused:
                await client.register_entity({"uri": "user:a", "type": "principal", "attributes": {"role": "x"}})
            assert refused.value.status == 401
    async with AsyncVerdictClient(guarded_verdict.url, admin_key=ADMIN_KEY) as client:
        assert (await client.register_entity({"uri": "user:a", "type": "principal", "attributes": {"role": "x"}}))["uri"] == "user:a"


async def test_a_server_down_fails_every_caller_closed() -> None:
    async with AsyncVerdictClient(f"http://127.0.0.1:{free_port()}", retries=1) as client:
        outcomes = await asyncio.gather(*(client.check({"principal": {"attributes": {}}, "action": "read"}) for _ in range(20)), return_exceptions=True)
    assert all(isinstance(outcome, VerdictUnavailableError) and outcome.status is None for outcome in outcomes), outcomes
    with VerdictClient(f"http://127.0.0.1:{free_port()}", retries=0) as sync_client:
        with pytest.raises(VerdictUnavailableError):
            sync_client.check({"action": "read"})


async def test_a_call_given_its_own_timeout_stops_waiting() -> None:
    silent = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    async with AsyncVerdictClient(f"http://127.0.0.1:{port}", timeout=60, retries=0) as client:
        with pytest.raises(VerdictTimeoutError):
            await client.check({"action": "read"}, timeout=0.05)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.plan({"action": "read"}), 0.05)
    silent.close()


class _SwallowsCancellation(httpx.AsyncBaseTransport):
    """A stand-in (no real transport does this on demand) for anyio 3's, which can swallow a cancellation delivered mid-request."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.swallowed = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        while True:
            try:
                await self.release.wait()
                return httpx.Response(200, json={"allowed": True, "reason": "released"})
            except asyncio.CancelledError:
                self.swallowed += 1


async def test_a_callers_cancellation_returns_at_once_even_when_the_transport_swallows_it() -> None:
    transport = _SwallowsCancellation()
    async with AsyncVerdictClient("http://verdict.invalid", retries=0, batching=False) as client:
        client._http = httpx.AsyncClient(base_url="http://verdict.invalid", transport=transport)
        # Without the client's own guard the wait below would last until this release, then answer instead of timing out.
        asyncio.get_running_loop().call_later(10, transport.release.set)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.plan({"action": "read"}), 0.05)
        with pytest.raises(VerdictTimeoutError):
            await client.check({"action": "read"}, timeout=0.05)
        transport.release.set()
    assert transport.swallowed >= 1, "the stand-in was cancelled, as the caller's timeout asks"
