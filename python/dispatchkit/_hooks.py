"""What ``Tensor.register_hook`` returns: ``handle.remove()`` takes the hook off again."""


class RemovableHandle:
    def __init__(self, tensor, handle):
        self._tensor = tensor
        self._handle = handle

    def remove(self):
        if self._tensor is not None:
            self._tensor._remove_hook(self._handle)
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
