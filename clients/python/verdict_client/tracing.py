"""
How the client's calls join the caller's trace: the active context carried as W3C ``traceparent``,
and, given the app's OpenTelemetry, checks batched into one bulk sent under a span of their own that
links every caller's. The client depends on no OpenTelemetry package: it uses the one the app gives it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence, TypeVar

from ._http import TraceHeaders

TRACER_NAME = "verdict-client"
T = TypeVar("T")


class _Span(Protocol):
    def get_span_context(self) -> Any: ...
    def set_status(self, status: Any) -> None: ...
    def end(self) -> None: ...


class _TraceApi(Protocol):
    """``opentelemetry.trace``, as much as the client uses."""

    SpanKind: Any
    StatusCode: Any

    def get_current_span(self) -> Any: ...
    def get_tracer(self, name: str) -> Any: ...
    def set_span_in_context(self, span: Any, context: Any = ...) -> Any: ...
    def NonRecordingSpan(self, context: Any) -> Any: ...  # noqa: N802 - OpenTelemetry's name
    def Link(self, context: Any, attributes: Any = ...) -> Any: ...  # noqa: N802
    def Status(self, status_code: Any, description: Any = ...) -> Any: ...  # noqa: N802


class _PropagateApi(Protocol):
    """``opentelemetry.propagate``, as much as the client uses."""

    def inject(self, carrier: Any, context: Any = ...) -> None: ...


class OpenTelemetry(Protocol):
    """
    The ``opentelemetry`` package your app traces with, its ``trace`` and ``propagate`` modules
    imported (``import opentelemetry.trace, opentelemetry.propagate``).
    """

    @property
    def trace(self) -> _TraceApi: ...

    @property
    def propagate(self) -> _PropagateApi: ...


@dataclass(frozen=True)
class Caller:
    """Who asked for a check: the span active then (a valid one, else None), and the app's route when given."""

    span: Any
    route: str | None


class CallTracing:
    """A client's tracing: ``trace_headers`` only propagates; ``opentelemetry`` also spans what it sends."""

    def __init__(self, trace_headers: TraceHeaders | None, opentelemetry: OpenTelemetry | None) -> None:
        if trace_headers is not None and opentelemetry is not None:
            raise ValueError("give trace_headers or opentelemetry, not both: with opentelemetry the client writes the headers itself")
        self._trace_headers = trace_headers
        self._otel = opentelemetry
        self._tracer: Any = opentelemetry.trace.get_tracer(TRACER_NAME) if opentelemetry is not None else None

    def caller(self, route: str | None) -> Caller:
        """Who asks for a check, now: the span active here (a bulk that sends it links it)."""
        if self._otel is None:
            return Caller(None, route)
        context = self._otel.trace.get_current_span().get_span_context()
        return Caller(context if context.is_valid else None, route)

    def active_headers(self) -> Mapping[str, str]:
        """The headers carrying the context active here, for a call sent in its caller's turn."""
        if self._trace_headers is not None:
            return self._trace_headers()
        carrier: dict[str, str] = {}
        if self._otel is not None:
            self._otel.propagate.inject(carrier)
        return carrier

    async def sent(self, callers: Sequence[Caller], send: Callable[[Mapping[str, str] | None], Awaitable[T]]) -> T:
        """
        ``send`` (given the trace headers to send, None for the active context's) under a CLIENT span: a
        child of the first caller's span, linking each caller's (with its route), marked failed when the
        call fails. One check alone is ``verdict check``; several, ``verdict check bulk``.
        """
        joined = [caller for caller in callers if caller.span is not None]
        otel = self._otel
        if otel is None or not joined:
            return await send(None)
        trace = otel.trace
        parent = trace.set_span_in_context(trace.NonRecordingSpan(joined[0].span))
        links = [trace.Link(caller.span, {} if caller.route is None else {"http.route": caller.route}) for caller in joined]
        attributes: dict[str, Any] = {"verdict.checks": len(callers)}
        if len(callers) == 1 and callers[0].route is not None:
            attributes["http.route"] = callers[0].route
        name = "verdict check" if len(callers) == 1 else "verdict check bulk"
        span: _Span = self._tracer.start_span(name, context=parent, kind=trace.SpanKind.CLIENT, attributes=attributes, links=links)
        headers: dict[str, str] = {}
        otel.propagate.inject(headers, context=trace.set_span_in_context(span, parent))
        try:
            return await send(headers)
        except BaseException as error:
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(error) or type(error).__name__))
            raise
        finally:
            span.end()
