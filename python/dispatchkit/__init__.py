"""dispatchkit for Python: the operators of schemas/native_functions.yaml as ``dispatchkit.<name>``
and ``Tensor`` methods, tensors, autograd and grad modes, on the same dispatcher as the C++ API.

    import dispatchkit as dk
    x = dk.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    (x * x).sum().backward()
    x.grad      # tensor([[2., 4.], [6., 8.]])

From a build directory: ``PYTHONPATH=build/release/python python3`` or ``meson devenv -C build/release``.
"""

import functools as _functools

from dispatchkit import _C
from dispatchkit._size import Size  # noqa: F401

# The extension's names: types, dtypes, tensor factories and every generated operator.
for _name in dir(_C):
    if not _name.startswith("__") and _name not in ("_nn", "modes", "_testing"):
        globals()[_name] = getattr(_C, _name)
del _name

from dispatchkit import _tensor  # noqa: E402,F401  (Tensor's Python methods)
from dispatchkit import autograd, library, nn, return_types  # noqa: E402,F401
from dispatchkit._modes import DispatchMode  # noqa: E402,F401
from dispatchkit._ops import ops  # noqa: E402,F401
from dispatchkit._C import modes  # noqa: E402,F401  (the C++ modes: dk.modes.OpCounter)

Tensor = _C.Tensor


class _DecoratorContextManager:
    """A context manager that is also a decorator (``@dk.no_grad()``)."""

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args = ()


class no_grad(_DecoratorContextManager):
    """Operators inside record no autograd history (``torch.no_grad``)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class enable_grad(_DecoratorContextManager):
    """Turns recording back on inside a ``no_grad`` block (``torch.enable_grad``)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off, now (as a function) or for a block (``torch.set_grad_enabled``)."""

    def __init__(self, mode):
        self._args = (mode,)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)


class inference_mode(_DecoratorContextManager):
    """Tensors made inside are inference tensors and no autograd keys are dispatched
    (``torch.inference_mode``)."""

    def __init__(self, mode=True):
        self._args = (mode,)
        self._mode = mode
        self._guard = None

    def __enter__(self):
        self._guard = _C._InferenceModeGuard(self._mode)

    def __exit__(self, *exc):
        del self._guard
        self._guard = None
