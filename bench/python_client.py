"""
The Python client against one httpx request per check (npm run bench:python): 64 asyncio callers, each
checking in a loop for SECONDS, through AsyncVerdictClient (batched into bulks) and through one
``POST /check`` each on an httpx.AsyncClient of 64 connections, against one Verdict started from this
checkout's build, alternating which goes first, ROUNDS rounds; then the cache's gain when 80% of the
checks repeat. Printed: checks per second of each, and the medians of the paired ratios.
"""
from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(CHECKOUT / "clients" / "python"), str(CHECKOUT / "clients" / "python" / "tests")]

from conftest import admin, role_rule, start_verdict  # noqa: E402
from verdict_client import AsyncVerdictClient  # noqa: E402

ROUNDS = int(os.environ.get("PYTHON_BENCH_ROUNDS", 5))
SECONDS = float(os.environ.get("PYTHON_BENCH_SECONDS", 3))
CALLERS = 64


def check(index: int) -> dict[str, object]:
    return {"principal": {"attributes": {"role": "reader"}}, "resource": {"uri": f"doc:{index}"}, "action": "read"}


async def rate(decide: object) -> float:
    """Checks per second that CALLERS callers get answered by ``decide`` in SECONDS."""
    done = 0
    until = time.monotonic() + SECONDS

    async def caller(seed: int) -> None:
        nonlocal done
        chance = random.Random(seed)
        while time.monotonic() < until:
            await decide(chance)  # type: ignore[operator]
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(caller(seed) for seed in range(CALLERS)))
    return done / (time.monotonic() - started)


async def main() -> None:
    data_dir = tempfile.mkdtemp(prefix="verdict-bench-")
    server = start_verdict(data_dir)
    try:
        admin(server.url, "POST", "/admin/policies", {"name": "access", "rules": [role_rule("reader")]})
        ratios, batched_rates, plain_rates = [], [], []
        async with AsyncVerdictClient(server.url) as client, httpx.AsyncClient(base_url=server.url, limits=httpx.Limits(max_connections=CALLERS)) as plain:

            async def through_client(chance: random.Random) -> None:
                await client.check(check(chance.randrange(1_000_000)))

            async def one_request_each(chance: random.Random) -> None:
                (await plain.post("/check", json=check(chance.randrange(1_000_000)))).raise_for_status()

            for round_index in range(ROUNDS):
                order = [through_client, one_request_each] if round_index % 2 == 0 else [one_request_each, through_client]
                rates = {way.__name__: await rate(way) for way in order}
                batched_rates.append(rates["through_client"])
                plain_rates.append(rates["one_request_each"])
                ratios.append(rates["through_client"] / rates["one_request_each"])
                print(f"# round {round_index + 1}: client {rates['through_client']:.0f}/s, one request each {rates['one_request_each']:.0f}/s")
        print(f"batched through the client: {statistics.median(batched_rates):.0f} checks/s; one httpx request per check: {statistics.median(plain_rates):.0f}/s; median ratio {statistics.median(ratios):.2f} x")

        gains = []
        for _ in range(ROUNDS):
            rates = {}
            for cache in (False, True):
                async with AsyncVerdictClient(server.url, cache=cache) as client:

                    async def repeating(chance: random.Random) -> None:
                        # 80% of the checks are one of 100 seen before; 20% are new.
                        await client.check(check(chance.randrange(100) if chance.random() < 0.8 else chance.randrange(100, 1_000_000)))

                    await client.check(check(0))
                    for _ in range(500):
                        if client.cache_serving or not cache:
                            break
                        await asyncio.sleep(0.01)
                    rates[cache] = await rate(repeating)
            gains.append(rates[True] / rates[False])
        print(f"the cache at 80% repeats: median {statistics.median(gains):.2f} x the checks/s without it")
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


asyncio.run(main())
