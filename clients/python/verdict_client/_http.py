"""What the sync and async clients share: the headers they send, and their answers read as JSON or as typed errors."""
from __future__ import annotations

import json
from typing import Any, Callable, Mapping

import httpx

from .errors import VerdictError, VerdictTimeoutError, VerdictUnavailableError, answer_error, describe_detail
from .wire import API_KEY_HEADER, MIN_REVISION_HEADER, REQUEST_ID_HEADER, REVISION_HEADER

RETRY_BASE_SECONDS = 0.025


TraceHeaders = Callable[[], Mapping[str, str]]
"""
Gives the headers that carry the active trace context (W3C ``traceparent``, ``tracestate``), called
in the context of the call it is for: with OpenTelemetry, ``opentelemetry.propagate.inject`` into a dict.
"""


def headers_for(admin_key: str | None, admin: bool, min_revision: int | None) -> dict[str, str]:
    """The headers of a call: the admin key on admin calls (and explained checks), the revision to be decided at."""
    headers: dict[str, str] = {}
    if admin and admin_key is not None:
        headers[API_KEY_HEADER] = admin_key
    if min_revision is not None:
        headers[MIN_REVISION_HEADER] = str(min_revision)
    return headers


def read_answer(method: str, path: str, response: httpx.Response) -> Any:
    """The body of a 2xx answer; a typed VerdictError for anything else."""
    request_id = response.headers.get(REQUEST_ID_HEADER)
    try:
        body = None if response.content == b"" else response.json()
    except json.JSONDecodeError:
        raise answer_error(f"{method} {path}: answered {response.status_code} with a body that is not JSON", response.status_code, response.text[:200], request_id, "") from None
    if 200 <= response.status_code < 300:
        return body
    detail = body.get("detail", body) if isinstance(body, dict) else body
    challenge = response.headers.get("www-authenticate", "")
    raise answer_error(f"{method} {path}: {response.status_code} {describe_detail(detail)}", response.status_code, detail, request_id, challenge)


def no_answer(method: str, path: str, error: Exception, timeout: float) -> VerdictError:
    """The error of a call that got no answer: a timeout, a refused connection, a closed client."""
    if isinstance(error, httpx.TimeoutException):
        failure: VerdictError = VerdictTimeoutError(f"{method} {path}: no answer within {timeout:g} s")
    else:
        failure = VerdictUnavailableError(f"{method} {path}: {error}")
    failure.__cause__ = error
    return failure


def revision_of(headers: httpx.Headers) -> int | None:
    """The policy revision an answer was decided at (``verdict-revision``)."""
    text = headers.get(REVISION_HEADER)
    return None if text is None else int(text)
