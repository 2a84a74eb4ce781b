"""A real Verdict for the tests: the checkout's built server (``npm run build`` first), started on a free port."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

CHECKOUT = Path(__file__).resolve().parents[3]
CLI = CHECKOUT / "dist" / "src" / "cli.js"
ADMIN_KEY = "a-python-client-test-key-long-enough-0123456789"


@dataclass
class Verdict:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_verdict(data_dir: str, env: dict[str, str] | None = None) -> Verdict:
    if not CLI.exists():
        raise RuntimeError(f"{CLI} is missing: run npm run build in {CHECKOUT}")
    port = free_port()
    process = subprocess.Popen(
        ["node", str(CLI), "start", "--port", str(port), "--data-dir", data_dir, "--log-level", "warn"],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Verdict exited with {process.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/ready").status_code == 200:
                return Verdict(url, process)
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("Verdict was not ready within 30 s")


@pytest.fixture()
def verdict() -> Iterator[Verdict]:
    """A fresh server, its admin routes open (on loopback), for each test."""
    data_dir = tempfile.mkdtemp(prefix="verdict-python-")
    server = start_verdict(data_dir)
    yield server
    server.stop()
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture()
def guarded_verdict() -> Iterator[Verdict]:
    """A server whose admin routes need ADMIN_KEY."""
    data_dir = tempfile.mkdtemp(prefix="verdict-python-")
    server = start_verdict(data_dir, {"ADMIN_API_KEY": ADMIN_KEY})
    yield server
    server.stop()
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


def admin(url: str, method: str, path: str, body: object = None, key: str | None = None) -> httpx.Response:
    """An admin call made by hand, beside the client under test."""
    headers = {"way-api-key": key} if key else {}
    response = httpx.request(method, f"{url}{path}", json=body, headers=headers)
    assert response.status_code in (200, 201), f"{method} {path}: {response.status_code} {response.text}"
    return response


def role_rule(role: str) -> dict[str, object]:
    return {"name": f"{role}s", "effect": "allow", "principal_conditions": [{"path": "attributes.role", "operator": "==", "value": role}], "actions": ["read"]}
