"""The errors `replay/` raises on purpose: each says what failed and what to do next.

`replay` stands alone (it imports nothing from `forensics`), so it has its own base class; the
CLI maps `ReplayError`, like `ForensicsError`, to exit code 1 with its hint. They are
`ValueError`s: a bad trace or policy name is a bad value handed to the library.
"""

from __future__ import annotations


class ReplayError(ValueError):
    """A failure the user can act on: `message` says what failed, `hint` what to do next."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class PolicyError(ReplayError):
    """A policy name or `package.module:Class` that names no eviction policy."""


class TraceFormatError(ReplayError):
    """A file that is not a request trace this package reads, at `path`:`lineno`."""

    def __init__(self, message: str, *, path: str, lineno: int | None = None, hint: str | None = None) -> None:
        where = f"{path}:{lineno}" if lineno else path
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = path
        self.lineno = lineno
