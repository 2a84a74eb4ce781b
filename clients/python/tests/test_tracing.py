"""The clients carry the caller's trace context (``trace_headers``): Verdict's span of each call, exported to an OTLP receiver the test runs, is the child of the caller's span; a bulk of batched checks, of its first caller's."""
from __future__ import annotations

import asyncio
import contextvars
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from conftest import Verdict, start_verdict
from verdict_client import AsyncVerdictClient, VerdictClient

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
# What the app's tracing would hold for the running call: its span's id.
current_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("current_span", default=None)


def trace_headers() -> dict[str, str]:
    """What opentelemetry.propagate.inject writes, for the span the test set."""
    span = current_span.get()
    return {} if span is None else {"traceparent": f"00-{TRACE_ID}-{span}-01"}


class Receiver:
    """An OTLP/HTTP (JSON) receiver: the spans Verdict exports, as (route, parent span id)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str | None]] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body: Any = json.loads(self._body())
                for resource in body["resourceSpans"]:
                    for scope in resource["scopeSpans"]:
                        for span in scope["spans"]:
                            attributes = {attribute["key"]: next(iter(attribute["value"].values())) for attribute in span["attributes"]}
                            received.append((str(attributes.get("http.route")), span.get("parentSpanId")))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def _body(self) -> bytes:
                length = self.headers["content-length"]
                if length is not None:
                    return self.rfile.read(int(length))
                # Chunked, as Node's exporter sends it.
                body = b""
                while (size := int(self.rfile.readline().strip(), 16)) > 0:
                    body += self.rfile.read(size)
                    self.rfile.readline()
                self.rfile.readline()
                return body

            def log_message(self, *_: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int) -> list[tuple[str, str | None]]:
        deadline = time.monotonic() + 10
        while len(self.spans) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.spans)


@pytest.fixture()
def traced() -> Iterator[tuple[Verdict, Receiver]]:
    receiver = Receiver()
    data_dir = tempfile.mkdtemp(prefix="verdict-python-")
    server = start_verdict(data_dir, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_TRACES_SAMPLER_ARG": "1"})
    yield server, receiver
    server.stop()
    receiver.server.shutdown()
    shutil.rmtree(data_dir, ignore_errors=True)


CHECK: Any = {"principal": {"attributes": {"role": "reader"}}, "resource": {"attributes": {"kind": "doc"}}, "action": "read"}


def test_a_bulk_of_batched_checks_joins_its_first_callers_trace(traced: tuple[Verdict, Receiver]) -> None:
    server, receiver = traced

    async def run() -> None:
        async with AsyncVerdictClient(server.url, trace_headers=trace_headers) as client:

            async def caller(span: str) -> None:
                current_span.set(span)
                await client.check(CHECK)

            await asyncio.gather(*(asyncio.create_task(caller(span)) for span in ["1" * 16, "2" * 16, "3" * 16]))

    asyncio.run(run())
    spans = receiver.wait_for(1)
    assert [span for span in spans if span[0] == "/check/bulk"] == [("/check/bulk", "1" * 16)]


def test_a_call_alone_joins_its_callers_trace_and_a_client_without_the_hook_joins_none(traced: tuple[Verdict, Receiver]) -> None:
    server, receiver = traced
    current_span.set("4" * 16)
    with VerdictClient(server.url, trace_headers=trace_headers) as client:
        client.check(CHECK)
    with VerdictClient(server.url) as untraced:
        untraced.check(CHECK)
    spans = receiver.wait_for(2)
    assert sorted(spans, key=lambda span: span[1] or "") == [("/check", None), ("/check", "4" * 16)]
