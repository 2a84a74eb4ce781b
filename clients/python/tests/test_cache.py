"""The exact cache: it serves what it holds only while the change feed says nothing changed it."""
from __future__ import annotations

import asyncio

import pytest

from conftest import Verdict, admin, role_rule
from verdict_client import AsyncVerdictClient
from verdict_client.wire import CheckRequest

pytestmark = pytest.mark.anyio


async def until(condition: object, what: str, seconds: float = 10) -> None:
    for _ in range(int(seconds / 0.02)):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"gave up waiting for {what}")


async def test_no_decision_survives_a_policy_or_entity_write_once_the_feed_delivered_it(verdict: Verdict) -> None:
    admin(verdict.url, "POST", "/admin/policies", {"name": "access", "rules": [role_rule("reader")]})
    admin(verdict.url, "POST", "/admin/fetchers/registry/entities", {"uri": "user:bo", "type": "principal", "attributes": {"role": "reader"}})
    check: CheckRequest = {"principal": {"uri": "user:bo"}, "resource": {"uri": "doc:1"}, "action": "read"}
    async with AsyncVerdictClient(verdict.url, cache=True) as client:
        assert (await client.check(check))["allowed"] is True
        await until(lambda: client.cache_serving, "the feed followed")
        assert (await client.check(check))["allowed"] is True
        assert (await client.check(check))["allowed"] is True, "from the cache"

        applied = client.changes_applied
        admin(verdict.url, "PUT", "/admin/fetchers/registry/entities/user%3Abo", {"uri": "user:bo", "type": "principal", "attributes": {"role": "guest"}})
        await until(lambda: client.changes_applied > applied, "the entity change delivered")
        assert (await client.check(check))["allowed"] is False, "another client's entity write reaches the cache"

        applied = client.changes_applied
        admin(verdict.url, "POST", "/admin/policies", {"name": "guests", "rules": [role_rule("guest")]})
        await until(lambda: client.changes_applied > applied, "the revision delivered")
        assert (await client.check(check))["allowed"] is True, "a policy write drops every decision"

        assert (await client.check(check))["allowed"] is True
        assert client.cached_decisions == 1
        applied = client.changes_applied
        admin(verdict.url, "PUT", "/admin/schemas", {"principal": {"attributes": {"type": "object"}}})
        await until(lambda: client.changes_applied > applied, "the schema revision delivered")
        assert client.cached_decisions == 0, "a schema write drops every decision too"

        await client.update_entity("user:bo", {"type": "principal", "attributes": {"role": "nobody"}})
        assert (await client.check(check))["allowed"] is False, "its own write: read at once, not from the cache"
