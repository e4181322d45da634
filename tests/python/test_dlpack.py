"""DLPack: tensors move to and from PyTorch and NumPy without copies."""

import numpy as np
import pytest

import dispatchkit as dk

torch = pytest.importorskip("torch")


def test_dlpack_device_and_capsule():
    x = dk.ones(2, 3)
    assert x.__dlpack_device__() == (1, 0)  # kDLCPU
    capsule = x.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    y = dk.from_dlpack(capsule)
    assert y.tolist() == x.tolist() and y.data_ptr() == x.data_ptr()
    with pytest.raises(ValueError, match="already consumed"):
        dk.from_dlpack(capsule)


def test_to_torch_shares_memory():
    x = dk.arange(0, 6).view(2, 3).t()  # a non-contiguous view
    t = torch.from_dlpack(x)
    assert t.tolist() == x.tolist() and t.stride() == x.stride() and t.dtype == torch.int64
    t[0, 0] = 100
    assert x[0, 0].item() == 100
    del x
    assert t.sum().item() == 115  # the capsule's owner keeps the memory alive


def test_from_torch_shares_memory():
    for dtype, dk_dtype in [(torch.float32, dk.float32), (torch.float64, dk.float64), (torch.int32, dk.int32),
                            (torch.float16, dk.float16), (torch.uint8, dk.uint8)]:
        t = torch.arange(6, dtype=dtype).reshape(2, 3)
        x = dk.from_dlpack(t)
        assert x.dtype is dk_dtype and x.shape == (2, 3) and x.tolist() == t.tolist()
        x[1, 1] = 42
        assert t[1, 1].item() == 42


def test_numpy_through_dlpack():
    a = np.arange(4.0)
    x = dk.from_dlpack(a)
    x[0] = -1.0
    assert a[0] == -1.0
    back = np.from_dlpack(x)
    assert np.shares_memory(a, back)


def test_from_dlpack_refuses_other_objects():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        dk.from_dlpack([1, 2])
