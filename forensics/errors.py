"""The error hierarchy: every error the library raises on purpose derives from `ForensicsError`.

The CLI catches `ForensicsError`, prints `message` and `hint`, and exits 1. Anything
else escaping is our bug and exits 101 with a traceback.
"""

from __future__ import annotations


class ForensicsError(Exception):
    """A failure the user can act on: `message` says what failed, `hint` what to do next."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class NoInputError(ForensicsError):
    """Nothing could be ingested from the given paths."""


class ParseError(ForensicsError):
    """A structured input (events JSON, trace) could not be read at `path`:`lineno`."""

    def __init__(self, message: str, *, path: str, lineno: int | None = None, hint: str | None = None):
        where = f"{path}:{lineno}" if lineno else path
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = path
        self.lineno = lineno
