"""
A stand-in for the ``opentelemetry`` package (its ``trace`` and ``propagate`` modules, as much as the
client uses), because no OpenTelemetry package for Python can be installed on the machines these
tests run on. It keeps the spans it starts, so that a test can read their names, kinds, parents,
links, attributes and status; what it propagates is real W3C ``traceparent``.
"""
from __future__ import annotations

import contextvars
import secrets
from dataclasses import dataclass, field
from enum import Enum
from types import SimpleNamespace
from typing import Any


@dataclass(frozen=True)
class SpanContext:
    trace_id: str
    span_id: str

    @property
    def is_valid(self) -> bool:
        return self.trace_id != "0" * 32 and self.span_id != "0" * 16


INVALID = SpanContext("0" * 32, "0" * 16)


class SpanKind(Enum):
    INTERNAL = 0
    CLIENT = 3


class StatusCode(Enum):
    UNSET = 0
    ERROR = 2


@dataclass(frozen=True)
class Status:
    status_code: StatusCode
    description: str | None = None


@dataclass(frozen=True)
class Link:
    context: SpanContext
    attributes: dict[str, Any] | None = None


@dataclass
class Span:
    context: SpanContext
    name: str = ""
    kind: SpanKind = SpanKind.INTERNAL
    parent: SpanContext | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    status: Status | None = None
    ended: bool = False

    def get_span_context(self) -> SpanContext:
        return self.context

    def set_status(self, status: Status) -> None:
        self.status = status

    def end(self) -> None:
        self.ended = True


def NonRecordingSpan(context: SpanContext) -> Span:  # noqa: N802 - OpenTelemetry's name
    return Span(context)


_current: contextvars.ContextVar[Span] = contextvars.ContextVar("current_span", default=Span(INVALID))


def get_current_span() -> Span:
    return _current.get()


def set_span_in_context(span: Span, context: dict[str, Span] | None = None) -> dict[str, Span]:
    return {**(context or {}), "span": span}


def start_as_current(name: str) -> Span:
    """What ``tracer.start_as_current_span`` does for the app's own span (the test's callers)."""
    span = Span(SpanContext(secrets.token_hex(16), secrets.token_hex(8)), name)
    _current.set(span)
    return span


class Tracer:
    def __init__(self) -> None:
        self.started: list[Span] = []

    def start_span(self, name: str, context: dict[str, Span] | None = None, kind: SpanKind = SpanKind.INTERNAL, attributes: Any = None, links: Any = None) -> Span:
        parent = (context or {}).get("span", _current.get()).context
        trace_id = parent.trace_id if parent.is_valid else secrets.token_hex(16)
        span = Span(SpanContext(trace_id, secrets.token_hex(8)), name, kind, parent if parent.is_valid else None, dict(attributes or {}), list(links or []))
        self.started.append(span)
        return span


TRACER = Tracer()


def get_tracer(name: str) -> Tracer:
    return TRACER


def inject(carrier: dict[str, str], context: dict[str, Span] | None = None) -> None:
    span = (context or {}).get("span", _current.get())
    if span.context.is_valid:
        carrier["traceparent"] = f"00-{span.context.trace_id}-{span.context.span_id}-01"


opentelemetry = SimpleNamespace(
    trace=SimpleNamespace(
        SpanKind=SpanKind,
        StatusCode=StatusCode,
        Status=Status,
        Link=Link,
        NonRecordingSpan=NonRecordingSpan,
        get_current_span=get_current_span,
        get_tracer=get_tracer,
        set_span_in_context=set_span_in_context,
    ),
    propagate=SimpleNamespace(inject=inject),
)
