"""C++'s reserved words, and which names C++ can spell: the one copy the generator has.

A leaf module (it imports nothing of the generator), so the model can check names while
loading (``native_yaml``: kernel and class names; ``derivatives``: formula identifiers)
and ``api/`` can choose spellings (``api.dispatcher``: argument and struct names; ``api.cpp``:
function and method names) from the same set, without the model importing ``api/``.
"""

from __future__ import annotations

import re

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char
    char8_t char16_t char32_t class compl concept const consteval constexpr constinit
    const_cast continue co_await co_return co_yield decltype default delete do double
    dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires return short signed sizeof
    static static_assert static_cast struct switch template this thread_local throw true
    try typedef typeid typename union unsigned using virtual void volatile wchar_t while
    xor xor_eq""".split()
)

_QUALIFIED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")


def is_cpp_keyword(name: str) -> bool:
    return name in CPP_KEYWORDS


def is_cpp_name(text: str) -> bool:
    """``foo`` or ``ns::foo``: C++ identifiers (no keywords) joined by ``::``."""
    return _QUALIFIED_NAME.fullmatch(text) is not None and not any(
        part in CPP_KEYWORDS for part in text.split("::")
    )
