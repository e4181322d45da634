"""The generator's one exception type, and the source location it reports.

Every error the generator reports, for any layer, is a ``GenError`` whose text
reads ``FILE:LINE: SCHEMA: what is wrong`` (the schema part only when there is
one). A ``GenError`` can also carry several such errors at once, one per line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from codegen.limits import MAX_ERRORS, MAX_MESSAGE, clip


@dataclass(frozen=True)
class Location:
    """A position in an input file: the path as given, and a 1-based line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class GenError(Exception):
    """An error in the generator's input (or, rarely, in its own use).

    ``str(error)`` is the whole report; ``error.messages`` lists its lines, one
    error each, so that a caller can print every error of a run.
    """

    def __init__(
        self,
        message: str,
        messages: Optional[Tuple[str, ...]] = None,
        loc: Optional[Location] = None,
    ):
        super().__init__(message)
        self.messages: Tuple[str, ...] = messages if messages is not None else (message,)
        self.loc = loc  # where the (first) error is, when known

    @classmethod
    def at(cls, loc: Location, detail: str, schema: Optional[str] = None) -> "GenError":
        """``FILE:LINE: SCHEMA: detail``, or ``FILE:LINE: detail`` without a schema.

        A long schema is cut (``limits.MAX_QUOTE``): the line already locates it."""
        if schema is None:
            return cls(f"{loc}: {detail}", loc=loc)
        return cls(f"{loc}: {clip(schema)}: {detail}", loc=loc)

    @classmethod
    def combine(cls, errors: Iterable["GenError"]) -> "GenError":
        """One error holding every message of ``errors``, in order."""
        errors = list(errors)
        messages = tuple(m for e in errors for m in e.messages)
        return cls("\n".join(messages), messages, errors[0].loc if errors else None)


# Control characters (but tab): a message quoting input never moves the terminal's cursor.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\x1b``), so that printing it is safe."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def report_lines(messages: Sequence[str], limit: int = MAX_ERRORS) -> List[str]:
    """The lines to print for ``messages``: at most ``limit`` of them, each cut to
    ``limits.MAX_MESSAGE`` characters with control characters escaped, then
    ``... and N more errors`` for the rest."""
    lines = [printable(clip(m, MAX_MESSAGE)) for m in messages[:limit]]
    rest = len(messages) - limit
    if rest > 0:
        lines.append(f"... and {rest} more error{'s' if rest != 1 else ''}")
    return lines
