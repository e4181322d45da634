"""Python dispatch modes (Note [Python kernels and modes] in python/src/python_dispatch.cpp)."""

from dispatchkit import _C


class DispatchMode:
    """Intercepts every operator call on this thread while active, like PyTorch's
    ``TorchDispatchMode``. Subclass it and define ``__dk_dispatch__``; use an instance as a
    context manager. Modes nest with each other and with C++ modes; the mode is off the stack
    while its handler runs, so ``func(*args, **kwargs)`` inside reaches the next mode or the
    kernels::

        class Printer(dk.DispatchMode):
            def __dk_dispatch__(self, func, types, args=(), kwargs=None):
                print(func)
                return func(*args, **(kwargs or {}))
    """

    def __dk_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} does not define __dk_dispatch__")

    def __enter__(self):
        guards = self.__dict__.setdefault("_dk_mode_guards", [])
        guards.append(_C._DispatchModeGuard(self))
        return self

    def __exit__(self, *exc):
        self.__dict__["_dk_mode_guards"].pop().exit()
        return False
