"""Errors the user sees.

Every exception here is *displayed to the user*: its message is one line that says what went wrong
and, where there is one, the command that fixes it. The CLI prints ``edgemem: <message>`` to stderr and
exits with ``exit_code``; the daemon replies ``{"error": {"code": code, "message": message}}`` and
keeps serving. Anything else that escapes is a bug.
"""

from __future__ import annotations


class EdgememError(Exception):
    """Base class: a failure explained to the user in one line."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))  # always one line

    @property
    def message(self) -> str:
        return str(self)


class ConfigError(EdgememError):
    """A setting or config file that cannot be used."""

    code = "config"
    exit_code = 2


class BadInput(EdgememError):
    """Text, a file or a request parameter that edgemem refuses (empty, binary, oversized...)."""

    code = "bad_input"
    exit_code = 2


class StoreError(EdgememError):
    """The database file is missing, foreign, corrupt, locked or from an incompatible embedder."""

    code = "store"
    exit_code = 3


class ModelError(EdgememError):
    """A model file is missing, fails its hash, or cannot be loaded."""

    code = "model"
    exit_code = 4


class ContextTooLong(EdgememError):
    """A prompt does not fit the model's context window; raised before calling the model."""

    code = "context_too_long"
    exit_code = 4

    def __init__(self, tokens: int, limit: int) -> None:
        self.tokens = tokens
        self.limit = limit
        super().__init__(f"prompt needs {tokens} tokens but the model's context holds {limit}")


class SchemaError(EdgememError):
    """A structured model reply did not validate against its schema (callers take the fallback)."""

    code = "schema"
    exit_code = 4


class NotFound(EdgememError):
    """A note, source, trace or model that does not exist."""

    code = "not_found"
    exit_code = 5


class DaemonUnavailable(EdgememError):
    """No daemon answers on the socket."""

    code = "no_daemon"
    exit_code = 6


class ProtocolError(EdgememError):
    """A malformed frame, unknown method or bad parameters on the socket."""

    code = "protocol"
    exit_code = 7
