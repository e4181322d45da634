"""The generator's bounds on work and output, in one place.

Hostile or broken input must not make the generator hang, exhaust memory or print without
end: every input is read within these limits, and an input beyond one is refused with a
located ``GenError`` that names the limit.
"""

# The largest input file read, in bytes (PyTorch's own native_functions.yaml is about 0.5 MB).
MAX_FILE_BYTES = 16 * 1024 * 1024

# How deep YAML collections may nest (the operator files need 3 levels).
MAX_YAML_DEPTH = 32

# The nodes one YAML alias may expand to, and the nodes a whole document may expand to with
# every alias expanded ("billion laughs"): aliases are for sharing small pieces. PyTorch's
# operator file has about 24,000 nodes.
MAX_ALIAS_NODES = 10_000
MAX_DOCUMENT_NODES = 250_000

# The most entries (items of the top-level list) a file may have: PyTorch's operator file
# has 2,493.
MAX_ENTRIES = 20_000

# The most overloads one operator name may have (PyTorch's most are 10): the public API's
# overload resolution compares every pair.
MAX_OVERLOADS = 64

# The longest schema string (PyTorch's longest is under 500 characters).
MAX_SCHEMA_LENGTH = 10_000

# How many ``?`` and ``[]`` wrappers a schema type may have (PyTorch's deepest is Tensor?[]).
MAX_TYPE_DEPTH = 4

# The largest N of a sized list type ``int[N]`` (its scalar default expands to N items).
MAX_LIST_SIZE = 64

# The longest piece of input quoted in an error message (longer ones are cut with "..."),
# and the longest error line printed.
MAX_QUOTE = 500
MAX_MESSAGE = 2000

# How many errors one entry reports; the rest are counted in one more error.
MAX_ENTRY_ERRORS = 20

# How many errors are printed before "... and N more errors".
MAX_ERRORS = 20


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """``text``, or its first ``limit`` characters followed by ``...`` when it is longer."""
    return text if len(text) <= limit else text[:limit] + "..."
