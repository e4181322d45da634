"""dispatchkit.Size: a tensor's shape, a tuple that prints as ``dispatchkit.Size([2, 3])``."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"dispatchkit.Size({list(self)!r})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n
