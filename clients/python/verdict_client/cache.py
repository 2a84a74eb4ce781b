"""An exact decision cache, and what keeps it exact: the server's decision change feed."""
from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any, Callable

import httpx

from .errors import VerdictUnavailableError, answer_error
from .wire import HEARTBEAT_MILLIS, ChangeLine, Decision

SILENCE_SECONDS = 3 * HEARTBEAT_MILLIS / 1000
RECONNECT_SECONDS = (0.1, 5.0)


class DecisionCache:
    """Decisions by their check (its JSON), each with the entity uris it read; least recently used go first past ``max_entries``."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[Decision, frozenset[str]]] = OrderedDict()
        # Raised by every drop: a decision asked for before a drop is not kept after it.
        self.epoch = 0

    def get(self, key: str) -> Decision | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, decision: Decision, uris: frozenset[str], epoch: int) -> None:
        if epoch != self.epoch or self.max_entries == 0:
            return
        self._entries[key] = (decision, uris)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
        self.epoch += 1

    def drop_uris(self, uris: set[str]) -> None:
        for key in [key for key, (_, read) in self._entries.items() if read & uris]:
            del self._entries[key]
        self.epoch += 1

    def __len__(self) -> int:
        return len(self._entries)


class ChangeFollower:
    """
    Follows ``GET /admin/changes`` for a DecisionCache: a new revision drops every decision, changed
    entities drop those that read them. While the feed is not followed (not yet, lost, silent for
    three heartbeats) the cache is empty and serves nothing; it reconnects by itself.
    """

    def __init__(self, http: httpx.AsyncClient, headers: dict[str, str], cache: DecisionCache, on_error: Callable[[Exception], None]) -> None:
        self._http = http
        self._headers = headers
        self._cache = cache
        self._on_error = on_error
        self.revision: int | None = None
        self.time_dependent = False
        self.changes_applied = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._follow())

    def keeps(self, revision: int | None) -> bool:
        """Whether a decision made at ``revision`` may be kept: the feed is followed at that revision, whose decisions do not read the time."""
        return revision is not None and revision == self.revision and not self.time_dependent

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._lost()

    def _lost(self) -> None:
        self.revision = None
        self._cache.clear()

    async def _follow(self) -> None:
        pause = RECONNECT_SECONDS[0]
        while True:
            try:
                await self._read_feed()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - any failure of the feed is reported and followed by a reconnection
                self._on_error(error)
            self._lost()
            await asyncio.sleep(pause)
            pause = min(pause * 2, RECONNECT_SECONDS[1])

    async def _read_feed(self) -> None:
        async with self._http.stream("GET", "/admin/changes", headers=self._headers, timeout=httpx.Timeout(5.0, read=SILENCE_SECONDS)) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode("utf-8", "replace")[:200]
                raise answer_error(f"GET /admin/changes answered {response.status_code}: {text}", response.status_code, text, None, "")
            async for line in response.aiter_lines():
                if line:
                    self._apply(json.loads(line))
        raise VerdictUnavailableError("GET /admin/changes: the change feed ended")

    def _apply(self, line: ChangeLine) -> None:
        if "revision" in line:
            self.revision = line["revision"]
            self.time_dependent = bool(line.get("time_dependent", False))
            self._cache.clear()
            self.changes_applied += 1
        entities: Any = line.get("entities")
        if entities == "all":
            self._cache.clear()
            self.changes_applied += 1
        elif isinstance(entities, list):
            self._cache.drop_uris(set(entities))
            self.changes_applied += 1
