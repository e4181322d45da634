"""YAML loading that keeps line numbers, for error messages that point at the input.

``load_yaml(path)`` returns plain Python data in which every mapping is a
``LocatedDict`` (a ``dict`` that also knows the line it starts on and the line
of each of its keys) and every sequence a ``LocatedList`` (a ``list`` that knows
the line of each item). It is stricter than PyYAML's safe loader: mapping keys must
be strings and may not repeat. Every problem, YAML syntax errors included,
is raised as a ``GenError`` reading ``FILE:LINE: ...``.

Hostile input is refused before it costs much (``codegen.limits``): files larger than
``MAX_FILE_BYTES``, bytes that are not UTF-8, collections nested deeper than
``MAX_YAML_DEPTH``, top-level lists longer than ``MAX_ENTRIES``, and aliases that expand
to more than ``MAX_ALIAS_NODES`` nodes (or a document to more than ``MAX_DOCUMENT_NODES``:
"billion laughs", as values, as mapping keys or through nested ``<<`` merge keys). A first
pass over the parser's events measures depth and expansion without building anything.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

import yaml

from codegen.errors import GenError, Location
from codegen.limits import MAX_ALIAS_NODES, MAX_DOCUMENT_NODES, MAX_ENTRIES, MAX_FILE_BYTES, MAX_YAML_DEPTH, clip

# libyaml's parser when present (about ten times faster), the pure-Python one otherwise.
_SafeLoaderBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# What str.splitlines() (and so a reader of the generator's stderr) takes for a line break.
_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with its line breaks escaped (``\\n``), so that one error stays one line."""
    return _LINE_BREAKS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _line_count(text: str) -> int:
    """How many lines YAML sees in ``text``: line breaks plus one (the end of the input is on
    the line after a final line break, where an editor puts it)."""
    return len(re.findall("\r\n|[\r\n\x85\u2028\u2029]", text)) + 1


class LocatedDict(dict):
    """A mapping from a YAML file that remembers where it, and each of its keys, sit."""

    def __init__(self, loc: Location):
        super().__init__()
        self.loc = loc
        self.key_lines: Dict[str, int] = {}

    def key_loc(self, key: str) -> Location:
        """Where ``key`` is written; the mapping's own location for a missing key."""
        line = self.key_lines.get(key)
        return self.loc if line is None else Location(self.loc.file, line)


class LocatedList(list):
    """A sequence from a YAML file that remembers where it, and each of its items, sit."""

    def __init__(self, loc: Location):
        super().__init__()
        self.loc = loc
        self.item_lines: List[int] = []

    def item_loc(self, index: int) -> Location:
        return Location(self.loc.file, self.item_lines[index])


def yaml_type_name(value: Any) -> str:
    """How an error message names the YAML type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


class _LineKeepingLoader(_SafeLoaderBase):
    """SafeLoader whose mappings are LocatedDicts with string, unique keys."""

    path = "<yaml>"  # set per instance by load_yaml_text

    def construct_located_mapping(self, node):
        if not isinstance(node, yaml.MappingNode):
            raise GenError.at(Location(self.path, node.start_mark.line + 1), "expected a mapping")
        self.flatten_mapping(node)  # resolves '<<' merge keys, as the safe loader does
        result = LocatedDict(Location(self.path, node.start_mark.line + 1))
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            key_line = key_node.start_mark.line + 1
            key_loc = Location(self.path, key_line)
            if not isinstance(key, str):
                raise GenError.at(
                    key_loc, one_line(f"mapping keys must be strings, got {yaml_type_name(key)} {clip(repr(key))}")
                )
            if key in result:
                raise GenError.at(
                    key_loc,
                    one_line(f"duplicate key '{clip(key)}' (first given at line {result.key_lines[key]})"),
                )
            result[key] = self.construct_object(value_node, deep=True)
            result.key_lines[key] = key_line
        return result


    def construct_located_sequence(self, node):
        if not isinstance(node, yaml.SequenceNode):
            raise GenError.at(Location(self.path, node.start_mark.line + 1), "expected a list")
        result = LocatedList(Location(self.path, node.start_mark.line + 1))
        for item_node in node.value:
            result.append(self.construct_object(item_node, deep=True))
            result.item_lines.append(item_node.start_mark.line + 1)
        return result


_LineKeepingLoader.add_constructor(
    "tag:yaml.org,2002:map", _LineKeepingLoader.construct_located_mapping
)
_LineKeepingLoader.add_constructor(
    "tag:yaml.org,2002:seq", _LineKeepingLoader.construct_located_sequence
)


def read_text(path: str) -> str:
    """The UTF-8 text of the file at ``path``, at most ``MAX_FILE_BYTES`` long (raises GenError)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise GenError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise GenError.at(Location(path, 1), f"file is larger than the limit of {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise GenError.at(
            Location(path, line),
            f"not UTF-8: byte 0x{data[e.start]:02x} at column {column} (byte offset {e.start})",
        ) from None


def load_yaml(path: str) -> Any:
    """Parse the YAML file at ``path``; errors name ``path`` exactly as given."""
    return load_yaml_text(read_text(path), path)


def _check_events(text: str, path: str) -> None:
    """Refuse nesting deeper than MAX_YAML_DEPTH and alias expansion beyond the limits.

    One pass over the parser's events (no nodes built): ``sizes`` holds how many nodes each
    anchor stands for once every alias inside it is expanded; an alias counts as that many.
    """
    sizes: Dict[str, int] = {}
    stack: List[list] = []  # per open collection: [its nodes so far, its anchor, is a list]
    total = 0  # nodes of the whole document, aliases expanded
    entries = 0  # items of a top-level list
    for event in yaml.parse(text, Loader=_SafeLoaderBase):
        loc = Location(path, event.start_mark.line + 1)
        if len(stack) == 1 and stack[0][2] and not isinstance(event, yaml.SequenceEndEvent):
            entries += 1
            if entries > MAX_ENTRIES:
                raise GenError.at(loc, f"more than the limit of {MAX_ENTRIES} entries in one file")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(stack) >= MAX_YAML_DEPTH:
                raise GenError.at(loc, f"YAML nested deeper than the limit of {MAX_YAML_DEPTH} levels")
            stack.append([1, event.anchor, isinstance(event, yaml.SequenceStartEvent)])
            total += 1
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            size, anchor, _ = stack.pop()
            if anchor is not None:
                sizes[anchor] = size
            if stack:
                stack[-1][0] += size
            continue
        if isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)
            if size > MAX_ALIAS_NODES:
                raise GenError.at(loc, one_line(
                    f"alias '*{clip(event.anchor, 80)}' expands to {size} nodes, more than the limit "
                    f"of {MAX_ALIAS_NODES}"))
        else:
            continue
        total += size
        if total > MAX_DOCUMENT_NODES:
            raise GenError.at(loc, f"the document expands to more than the limit of {MAX_DOCUMENT_NODES} "
                                   "nodes (counting every alias expanded)")
        if stack:
            stack[-1][0] += size


def _is_unclosed_quote(e: "yaml.MarkedYAMLError") -> bool:
    """A quoted scalar that runs to the end of the input."""
    return (e.context_mark is not None and "quoted scalar" in (e.context or "")
            and "end of stream" in (e.problem or ""))


def _yaml_error_line(e: "yaml.MarkedYAMLError", text: str) -> int:
    """The line to report a YAML syntax error at (an unclosed quote: where it opened)."""
    mark = e.context_mark if _is_unclosed_quote(e) else (e.problem_mark or e.context_mark)
    # libyaml puts errors at the end of the input one line past a last line without a
    # line break: report the input's last line instead.
    return min(mark.line + 1, _line_count(text)) if mark is not None else 1


def _yaml_error_text(e: "yaml.MarkedYAMLError") -> str:
    if _is_unclosed_quote(e):
        return "quoted string opened on this line is never closed"
    return e.problem or e.context or "malformed YAML"


def load_yaml_text(text: str, path: str) -> Any:
    """Parse ``text`` as if read from ``path`` (which only labels errors)."""
    loader = None
    try:
        _check_events(text, path)
        loader = _LineKeepingLoader(text)
        loader.path = path
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        line = _yaml_error_line(e, text)
        raise GenError.at(Location(path, line), one_line(f"invalid YAML: {_yaml_error_text(e)}")) from None
    except yaml.reader.ReaderError as e:
        # A character YAML does not allow: its str() spans several lines; keep the reason and
        # report the line the character is on.
        line = min(_line_count(text[: e.position] + "x"), _line_count(text))
        char = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "\0")
        raise GenError.at(
            Location(path, line), one_line(f"invalid YAML: unacceptable character #x{char:04x}: {e.reason}")
        ) from None
    except yaml.YAMLError as e:
        raise GenError.at(Location(path, 1), one_line(clip(f"invalid YAML: {e}"))) from None
    finally:
        if loader is not None:
            loader.dispose()
