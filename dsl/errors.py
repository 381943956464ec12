"""Source locations and the errors that point at a user's kernel source.

A ``SourceLoc`` is attached to every IR node by the frontend. Compile errors render
as ``file:line:col: error: message`` followed by the source line and a caret under
the column, the way Triton and C compilers do. Runtime errors raised while a kernel
executes (for example an out-of-bounds load) carry the location of the offending
operation too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in a kernel's source file; ``line`` is 1-based, ``col`` 0-based."""

    file: str
    line: int
    col: int
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        """The source line and a caret under the column."""
        if not self.source_line:
            return ""
        text = self.source_line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret_col = max(self.col - indent, 0)
        return f"    {stripped}\n    {' ' * caret_col}^"


UNKNOWN_LOC = SourceLoc("<unknown>", 0, 0)


class DSLError(Exception):
    """Base class of every error the DSL raises about a kernel."""


class DSLCompileError(DSLError):
    """A kernel could not be compiled: unsupported syntax, a type or shape error,
    an unknown name or a wrong argument count. The message names the source position
    and shows the line with a caret."""

    def __init__(self, message: str, loc: SourceLoc | None = None, kernel: str | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None or self.loc is UNKNOWN_LOC:
            where = f"in kernel {self.kernel!r}: " if self.kernel else ""
            return f"{where}error: {self.message}"
        head = f"{self.loc}: error: {self.message}"
        if self.kernel:
            head += f" (in kernel {self.kernel!r})"
        excerpt = self.loc.excerpt()
        return f"{head}\n{excerpt}" if excerpt else head


class DSLLaunchError(DSLCompileError, TypeError):
    """A launch's arguments do not fit the kernel (count, kind, dtype or a stored
    tensor that is a broadcast view). Raised before anything executes, so nothing is
    written; the location is the kernel's ``def`` line."""


class ArgumentOverflowError(DSLLaunchError, OverflowError):
    """An integer argument that no 64-bit scalar holds: a ``DSLLaunchError`` and, as
    Triton's launcher raises, an ``OverflowError``."""


class DSLRuntimeError(DSLError):
    """An error detected while a kernel runs, for example an out-of-bounds access.
    The launch is rolled back: no output of the launch keeps a written value."""


class OutOfBoundsError(DSLRuntimeError, IndexError):
    """A load or store touched an element outside its tensor view."""


class DeviceAssertionError(DSLRuntimeError, AssertionError):
    """A ``device_assert`` condition was false in some program and lane."""


class DataRaceError(DSLRuntimeError):
    """Two programs (or two lanes of one block) stored to one element without an
    atomic: the result would depend on the order they run in."""
