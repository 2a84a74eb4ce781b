"""The Python client of the Verdict authorization server."""
from .client import AsyncVerdictClient
from .errors import (
    VerdictAdminKeyError,
    VerdictCredentialError,
    VerdictError,
    VerdictRequestError,
    VerdictTimeoutError,
    VerdictUnavailableError,
)
from .sync import VerdictClient

__all__ = [
    "AsyncVerdictClient",
    "VerdictClient",
    "VerdictError",
    "VerdictRequestError",
    "VerdictCredentialError",
    "VerdictAdminKeyError",
    "VerdictUnavailableError",
    "VerdictTimeoutError",
]
