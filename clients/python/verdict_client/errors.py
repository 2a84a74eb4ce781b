"""Why a call to Verdict failed: one kind of error for each thing a caller does about it."""
from __future__ import annotations

from typing import Any


class VerdictError(Exception):
    """The server's answer (``status``, its ``detail``, the ``request_id`` it gave), or, where no
    answer came (``status`` None), what happened on the way (``__cause__``)."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.request_id = request_id

    @property
    def retryable(self) -> bool:
        """Whether the same request may be sent again: no answer came, or the server was unavailable for now."""
        return self.status is None or self.status == 503


class VerdictRequestError(VerdictError):
    """The request itself was refused (400, 404, 409, 413, 422): fix what ``detail`` says."""

    @property
    def issues(self) -> list[dict[str, Any]]:
        """A 422's problems, each located in the request (``loc``, ``msg``, ``type``)."""
        return list(self.detail) if isinstance(self.detail, list) else []


class VerdictCredentialError(VerdictError):
    """The principal's bearer token was not accepted (401 with a Bearer challenge)."""


class VerdictAdminKeyError(VerdictError):
    """The admin key was missing, wrong, or of a role that may not do this (401 or 403)."""


class VerdictUnavailableError(VerdictError):
    """The server could not be reached, or cannot serve for now (5xx): the call may succeed later."""


class VerdictTimeoutError(VerdictUnavailableError):
    """No answer came within the time the call was given."""


def answer_error(message: str, status: int, detail: Any, request_id: str | None, challenge: str) -> VerdictError:
    """The error of an answer that is not a 2xx, by what the caller can do about it."""
    if status == 401 and "invalid_token" in challenge:
        return VerdictCredentialError(message, status, detail, request_id)
    if status in (401, 403):
        return VerdictAdminKeyError(message, status, detail, request_id)
    if status >= 500:
        return VerdictUnavailableError(message, status, detail, request_id)
    return VerdictRequestError(message, status, detail, request_id)


def describe_detail(detail: Any) -> str:
    """The message of an answer's detail: the sentence, or the issues one per line."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(str(part) for part in issue.get('loc', []))}: {issue.get('msg', '')}" for issue in detail if isinstance(issue, dict))
    return repr(detail)
