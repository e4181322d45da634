"""dispatchkit.nn: the operators of ``python_module: nn`` live in ``dispatchkit.nn.functional``."""

from dispatchkit.nn import functional  # noqa: F401
