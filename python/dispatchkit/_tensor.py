"""The parts of dispatchkit.Tensor written in Python: arithmetic operators, indexing,
conversions and ``to``. Each calls the generated operators of ``dispatchkit._C``, so modes,
autograd and the profiler see the operators themselves."""

import builtins
import numbers

from dispatchkit import _C

Tensor = _C.Tensor


def _wrap_number(value, like):
    """A Python number as a 0-dim tensor on ``like``'s device (for operators that take no Scalar)."""
    return _C.tensor(value, device=like.device)


# ---------------------------------------------------------------- arithmetic

def _rsub(self, other):
    return _C.add(_C.neg(self), other)


def _rtruediv(self, other):
    return _C.div(_wrap_number(other, self), self)


def _tensor_or_number(other):
    return isinstance(other, (Tensor, numbers.Number))


def _compare(op, swap=False):
    def method(self, other):
        if not _tensor_or_number(other):
            return NotImplemented
        if not isinstance(other, Tensor):
            other = _wrap_number(other, self)
        return op(other, self) if swap else op(self, other)
    return method


def _negated(op):
    def method(self, other):
        if not _tensor_or_number(other):
            return NotImplemented
        return _C.eq(op(self, other), False)
    return method


def _binary(fn):
    def method(self, other):
        if not _tensor_or_number(other):
            return NotImplemented
        return fn(self, other)
    return method


Tensor.__add__ = _binary(_C.add)
Tensor.__radd__ = _binary(_C.add)
Tensor.__iadd__ = _binary(Tensor.add_)
Tensor.__sub__ = _binary(_C.sub)
Tensor.__rsub__ = _binary(_rsub)
Tensor.__isub__ = _binary(Tensor.sub_)
Tensor.__mul__ = _binary(_C.mul)
Tensor.__rmul__ = _binary(_C.mul)
Tensor.__imul__ = _binary(Tensor.mul_)
Tensor.__truediv__ = _binary(_C.div)
Tensor.__rtruediv__ = _binary(_rtruediv)
Tensor.__itruediv__ = _binary(Tensor.div_)
Tensor.__matmul__ = _binary(_C.matmul)
Tensor.__pow__ = _binary(Tensor.pow)
Tensor.__ipow__ = _binary(Tensor.pow_)
Tensor.__neg__ = lambda self: _C.neg(self)
Tensor.__abs__ = lambda self: _C.abs(self)
Tensor.__eq__ = _binary(_C.eq)
Tensor.__ne__ = _negated(_C.eq)
Tensor.__lt__ = _compare(_C.lt)
Tensor.__gt__ = _compare(_C.gt)
Tensor.__le__ = _negated(_compare(_C.gt))
Tensor.__ge__ = _negated(_compare(_C.lt))
Tensor.__hash__ = object.__hash__


# ---------------------------------------------------------------- conversions

def _one_value(self, what):
    if self.numel() != 1:
        raise RuntimeError(f"{what} of Tensor with more than one value is ambiguous" if what == "Boolean value"
                           else f"only one element tensors can be converted to Python scalars")
    return self.item()


Tensor.__bool__ = lambda self: builtins.bool(_one_value(self, "Boolean value"))
Tensor.__float__ = lambda self: builtins.float(_one_value(self, "float"))
Tensor.__int__ = lambda self: builtins.int(_one_value(self, "int"))


def _index(self):
    if self.dtype.is_floating_point or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return builtins.int(self.item())


Tensor.__index__ = _index


def _iter(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(_C.unbind(self, 0))


Tensor.__iter__ = _iter


def _numpy(self):
    """The same memory as a NumPy array (no copy), through the buffer protocol."""
    import numpy
    return numpy.asarray(memoryview(self))


def _array(self, dtype=None):
    array = _numpy(self)
    return array if dtype is None else array.astype(dtype, copy=False)


Tensor.numpy = _numpy
Tensor.__array__ = _array
Tensor.__array_priority__ = 1000  # numpy.ndarray + Tensor gives our __radd__


def _to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``, with keywords
    ``dtype``, ``device``, ``copy``, ``non_blocking``: self when nothing changes (unless copy)."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, (str, _C.device, builtins.int)) and not isinstance(a, builtins.bool):
            device = _C.device(a) if isinstance(a, str) else a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, builtins.bool):
            non_blocking = a
        else:
            raise TypeError(f"to() received an invalid argument of type {type(a).__name__}")
    if isinstance(device, builtins.int):
        device = _C.device("cuda", device)
    if isinstance(device, str):
        device = _C.device(device)
    same_device = device is None or device == self.device or (
        device.type == self.device.type and device.index is None)
    if same_device:
        if dtype is None or dtype is self.dtype:
            return _C._to_copy(self) if copy else self
        return self._to_dtype(dtype, non_blocking, copy)
    return _C._to_copy(self, dtype=dtype, device=device, non_blocking=non_blocking)


Tensor._to_dtype = Tensor.to
Tensor.to = _to
Tensor.cpu = lambda self: _to(self, "cpu")
Tensor.cuda = lambda self, device=None: _to(self, "cuda" if device is None else _C.device("cuda", device))
Tensor.double = lambda self: _to(self, _C.float64)
Tensor.float = lambda self: _to(self, _C.float32)
Tensor.half = lambda self: _to(self, _C.float16)
Tensor.long = lambda self: _to(self, _C.int64)
Tensor.int = lambda self: _to(self, _C.int32)
Tensor.bool = lambda self: _to(self, _C.bool)
Tensor.type_as = lambda self, other: _to(self, other.dtype)
Tensor.T = property(lambda self: _C.permute(self, list(reversed(range(self.dim())))))
Tensor.data = property(lambda self: _C.detach(self))


# ---------------------------------------------------------------- indexing

def _normalize_index(index):
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(_C.tensor(i) if isinstance(i, list) else i for i in index)
    return index


def _consumed_dims(i):
    if i is None or i is Ellipsis:
        return 0
    if isinstance(i, Tensor) and i.dtype is _C.bool:
        return i.dim()
    return 1


def _apply_basic_index(self, index):
    """Ints, slices, None and Ellipsis as views (select, slice, unsqueeze); tensor indices are
    returned by the dim they apply to, for index / index_put_."""
    n_ellipsis = sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    specified = sum(_consumed_dims(i) for i in index)
    if specified > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    result = self
    dim = 0
    tensors = {}
    for i in index:
        if i is Ellipsis:
            dim += self.dim() - specified
        elif i is None:
            result = _C.unsqueeze(result, dim)
            dim += 1
        elif isinstance(i, builtins.bool):
            result = _C.unsqueeze(result, dim)
            if not i:
                result = _C.slice(result, dim, 0, 0)
            dim += 1
        elif isinstance(i, Tensor):
            tensors[dim] = i
            dim += _consumed_dims(i)
        elif isinstance(i, builtins.slice):
            step = 1 if i.step is None else i.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            result = _C.slice(result, dim, i.start, i.stop, step)
            dim += 1
        elif isinstance(i, numbers.Integral):
            result = _C.select(result, dim, builtins.int(i))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got " + type(i).__name__ + ")")
    return result, tensors


def _tensor_indices(result, tensors):
    indices = [None] * result.dim()
    for dim, t in tensors.items():
        if t.dtype is _C.bool and t.dim() > 1:
            raise IndexError("indexing with a multi-dimensional bool tensor is not supported yet")
        indices[dim] = t
    while indices and indices[-1] is None:
        indices.pop()
    return indices


def _getitem(self, index):
    result, tensors = _apply_basic_index(self, _normalize_index(index))
    if tensors:
        return _C.index(result, _tensor_indices(result, tensors))
    if result is self:  # x[...] or x[()]: a view of the whole tensor, as in PyTorch
        result = _C.view(self, list(self.shape))
    return result


def _setitem(self, index, value):
    result, tensors = _apply_basic_index(self, _normalize_index(index))
    if not isinstance(value, Tensor):
        value = _C.tensor(value, dtype=self.dtype, device=self.device)
    if tensors:
        result.index_put_(_tensor_indices(result, tensors), value)
    else:
        result.copy_(value)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
