"""
The clients carry the caller's trace context: Verdict's span of each call, exported to an OTLP
receiver the test runs, is the child of the caller's span (``trace_headers``), or of the client's own
span linking every caller's (``opentelemetry``, played by a stand-in: see otel_stand_in).
"""
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

import httpx
import pytest

import otel_stand_in
from conftest import Verdict, free_port, start_verdict
from otel_stand_in import SpanKind, StatusCode, start_as_current
from verdict_client import AsyncVerdictClient, VerdictClient, VerdictUnavailableError
from verdict_client.tracing import CallTracing

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
# What the app's tracing would hold for the running call: its span's id.
current_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("current_span", default=None)


def trace_headers() -> dict[str, str]:
    """What opentelemetry.propagate.inject writes, for the span the test set."""
    span = current_span.get()
    return {} if span is None else {"traceparent": f"00-{TRACE_ID}-{span}-01"}


class Receiver:
    """An OTLP/HTTP (JSON) receiver: the spans Verdict exports, as (route, parent span id, span id)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str | None]] = []
        self.span_ids: dict[str, str | None] = {}
        received, parents = self.spans, self.span_ids

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body: Any = json.loads(self._body())
                for resource in body["resourceSpans"]:
                    for scope in resource["scopeSpans"]:
                        for span in scope["spans"]:
                            attributes = {attribute["key"]: next(iter(attribute["value"].values())) for attribute in span["attributes"]}
                            received.append((str(attributes.get("http.route")), span.get("parentSpanId")))
                            parents[span["spanId"]] = span.get("parentSpanId")
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


STAND_IN = otel_stand_in.opentelemetry
READ_DOCUMENT = "/documents/{id}"


def test_with_a_stand_in_for_opentelemetry_a_bulk_is_sent_under_a_client_span_linking_every_caller(traced: tuple[Verdict, Receiver]) -> None:
    server, receiver = traced
    otel_stand_in.TRACER.started.clear()
    callers: list[otel_stand_in.Span] = []

    async def run() -> None:
        async with AsyncVerdictClient(server.url, opentelemetry=STAND_IN) as client:

            async def caller(route: str | None) -> None:
                callers.append(start_as_current("the app's request"))
                await client.check(CHECK, route=route)

            await asyncio.gather(*(asyncio.create_task(caller(route)) for route in [READ_DOCUMENT, None, READ_DOCUMENT]))

    asyncio.run(run())
    [bulk] = otel_stand_in.TRACER.started
    assert (bulk.name, bulk.kind, bulk.parent, bulk.ended, bulk.status) == ("verdict check bulk", SpanKind.CLIENT, callers[0].context, True, None)
    assert bulk.attributes == {"verdict.checks": 3}
    assert [(link.context, link.attributes) for link in bulk.links] == [
        (callers[0].context, {"http.route": READ_DOCUMENT}),
        (callers[1].context, {}),
        (callers[2].context, {"http.route": READ_DOCUMENT}),
    ]
    # Verdict's span of the bulk is the client span's child: the client sent its traceparent.
    receiver.wait_for(1)
    assert [parent for (route, parent) in receiver.spans if route == "/check/bulk"] == [bulk.context.span_id]


def test_with_a_stand_in_for_opentelemetry_a_check_alone_is_its_own_span_named_by_its_route(traced: tuple[Verdict, Receiver]) -> None:
    server, receiver = traced
    otel_stand_in.TRACER.started.clear()

    async def run() -> otel_stand_in.Span:
        async with AsyncVerdictClient(server.url, opentelemetry=STAND_IN) as client:
            app_span = start_as_current("the app's request")
            await client.check(CHECK, route=READ_DOCUMENT)
            return app_span

    app_span = asyncio.run(run())
    [alone] = otel_stand_in.TRACER.started
    assert (alone.name, alone.parent, alone.attributes) == ("verdict check", app_span.context, {"verdict.checks": 1, "http.route": READ_DOCUMENT})
    assert [(link.context, link.attributes) for link in alone.links] == [(app_span.context, {"http.route": READ_DOCUMENT})]
    receiver.wait_for(1)
    assert [parent for (route, parent) in receiver.spans if route == "/check"] == [alone.context.span_id]


def test_with_a_stand_in_for_opentelemetry_a_failed_bulk_marks_its_span_and_a_call_outside_any_span_makes_none() -> None:
    otel_stand_in.TRACER.started.clear()

    async def run() -> list[BaseException | Any]:
        async with AsyncVerdictClient(f"http://127.0.0.1:{free_port()}", retries=0, opentelemetry=STAND_IN) as gone:
            outside = await asyncio.gather(gone.check(CHECK), return_exceptions=True)

            async def caller() -> None:
                start_as_current("the app's request")
                await gone.check(CHECK)

            return [*outside, *await asyncio.gather(caller(), caller(), return_exceptions=True)]

    outcomes = asyncio.run(run())
    assert [type(outcome) for outcome in outcomes] == [VerdictUnavailableError] * 3
    [bulk] = otel_stand_in.TRACER.started
    assert (bulk.name, bulk.ended, bulk.status and bulk.status.status_code) == ("verdict check bulk", True, StatusCode.ERROR)


def test_a_client_is_given_one_way_to_trace() -> None:
    with pytest.raises(ValueError, match="trace_headers or opentelemetry"):
        CallTracing(trace_headers, STAND_IN)


def test_with_a_stand_in_for_opentelemetry_a_fastapi_guard_names_the_route_it_guards(traced: tuple[Verdict, Receiver]) -> None:
    from fastapi import Depends, FastAPI
    from starlette.requests import Request

    from verdict_client.guards import verdict_dependency
    from verdict_client.wire import CheckRequest

    server, _ = traced
    otel_stand_in.TRACER.started.clear()

    def traced_mapping(request: Request) -> CheckRequest:
        start_as_current("the app's request")  # as the app's tracing middleware would have
        return {"principal": {"attributes": {"role": "reader"}}, "resource": {"uri": f"report:{request.path_params['id']}"}, "action": "read"}

    async def run() -> int:
        async with AsyncVerdictClient(server.url, opentelemetry=STAND_IN) as client:
            app = FastAPI()

            @app.get("/reports/{id}", dependencies=[Depends(verdict_dependency(client, traced_mapping))])
            async def report(id: str) -> dict[str, str]:
                return {"id": id}

            async with httpx.AsyncClient(app=app, base_url="http://app") as caller:
                return (await caller.get("/reports/7")).status_code

    assert asyncio.run(run()) == 403  # no policy: denied, and decided under the guard's span all the same
    [guarded] = otel_stand_in.TRACER.started
    assert (guarded.name, guarded.attributes) == ("verdict check", {"verdict.checks": 1, "http.route": "/reports/{id}"})
