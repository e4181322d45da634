"""dispatchkit.Tensor from Python: construction, printing, properties, conversions, indexing."""

import numpy as np
import pytest

import dispatchkit as dk


def test_tensor_from_nested_lists_follows_torch_dtypes():
    assert dk.tensor([1, 2]).dtype is dk.int64
    assert dk.tensor([1.0, 2]).dtype is dk.float32
    assert dk.tensor([True, False]).dtype is dk.bool
    assert dk.tensor(3.5).dim() == 0
    assert dk.tensor([[1, 2], [3, 4]], dtype=dk.float64).dtype is dk.float64
    assert dk.tensor([]).shape == (0,)
    with pytest.raises(RuntimeError, match="ragged"):
        dk.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="could not infer dtype"):
        dk.tensor(["a"])


def test_repr_matches_pytorch_layout():
    assert repr(dk.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert repr(dk.tensor([0.1, 2.5], dtype=dk.float64)) == "tensor([0.1000, 2.5000], dtype=dispatchkit.float64)"
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(dk.float32) == "dispatchkit.float32"
    assert repr(dk.zeros(2, 3).shape) == "dispatchkit.Size([2, 3])"


def test_dtypes_are_singletons_with_torch_aliases():
    assert dk.float is dk.float32 and dk.double is dk.float64 and dk.long is dk.int64 and dk.half is dk.float16
    assert dk.ones(2, dtype=dk.int32).dtype is dk.int32
    assert dk.float32.is_floating_point and not dk.int64.is_floating_point


def test_properties_and_sizes():
    x = dk.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12
    assert x.is_contiguous() and not x.t().is_contiguous() if x.dim() == 2 else True
    assert x.device == dk.device("cpu") and str(x.device) == "cpu"
    assert x.element_size() == 4


def test_scalar_conversions():
    assert float(dk.tensor(2.5)) == 2.5
    assert int(dk.tensor(7)) == 7
    assert bool(dk.tensor([1]))
    assert dk.tensor(3).item() == 3 and isinstance(dk.tensor(3).item(), int)
    assert dk.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(dk.tensor([1, 2]))
    assert [1, 2, 3][dk.tensor(1)] == 2


def test_numpy_round_trip_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = dk.from_numpy(a)
    assert t.dtype is dk.float64 and t.shape == (2, 3)
    t[0, 1] = 100.0
    assert a[0, 1] == 100.0
    back = t.numpy()
    back[1, 2] = -1.0
    assert t[1, 2].item() == -1.0
    assert np.shares_memory(a, back)
    strided = dk.from_numpy(a[:, ::2])
    assert strided.stride() == (3, 2) and strided.tolist() == a[:, ::2].tolist()
    with pytest.raises(RuntimeError, match="requires grad"):
        dk.ones(2, requires_grad=True).numpy()


def test_numpy_array_outlives_its_python_name():
    t = dk.from_numpy(np.full((1000,), 3.0, dtype=np.float32))
    import gc
    gc.collect()
    assert t.sum().item() == 3000.0


def test_indexing_basic_and_advanced():
    x = dk.arange(0, 24).view(2, 3, 4)
    ref = np.arange(24).reshape(2, 3, 4)
    for index in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, slice(1, None), slice(None, None, 2)),
                  (slice(None), None, 1)]:
        assert x[index].tolist() == ref[index].tolist(), index
    assert x[dk.tensor([1, 0])].tolist() == ref[[1, 0]].tolist()
    assert x[0, dk.tensor([2, 0])].tolist() == ref[0, [2, 0]].tolist()
    assert x[[1, 0]].tolist() == ref[[1, 0]].tolist()
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]


def test_setitem_writes_through_views():
    x = dk.zeros(3, 4)
    x[1] = 5.0
    x[:, 0] = dk.tensor([1.0, 2.0, 3.0])
    x[dk.tensor([2]), 3] = 7.0
    assert x.tolist() == [[1, 0, 0, 0], [2, 5, 5, 5], [3, 0, 0, 7]]


def test_arithmetic_operators():
    a = dk.tensor([1.0, 2.0, 4.0])
    b = dk.tensor([2.0, 2.0, 2.0])
    assert (a + b).tolist() == [3, 4, 6] and (a + 1).tolist() == [2, 3, 5] and (1 + a).tolist() == [2, 3, 5]
    assert (a - b).tolist() == [-1, 0, 2] and (10 - a).tolist() == [9, 8, 6]
    assert (a * b).tolist() == [2, 4, 8] and (3 * a).tolist() == [3, 6, 12]
    assert (a / b).tolist() == [0.5, 1, 2] and (4 / a).tolist() == [4, 2, 1]
    assert (a ** 2).tolist() == [1, 4, 16] and (-a).tolist() == [-1, -2, -4]
    assert (a == b).tolist() == [False, True, False] and (a != b).tolist() == [True, False, True]
    assert (a < b).tolist() == [True, False, False] and (a >= 2).tolist() == [False, True, True]
    m = dk.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (m @ m).tolist() == [[7, 10], [15, 22]]
    c = a.clone()
    before = c
    c += 1
    assert c is before and c.tolist() == [2, 3, 5]


def test_to_and_conversions():
    x = dk.tensor([1.5, 2.5])
    assert x.to(dk.float64).dtype is dk.float64
    assert x.to("cpu") is x
    assert x.double().dtype is dk.float64 and x.long().tolist() == [1, 2]
    assert x.to(dk.float32) is x


def test_inplace_on_an_empty_tensor_with_zero_strides():
    # NumPy gives an empty (2, 0) array a zero stride; nothing is written, so nothing overlaps
    # (found by the differential tests: torch accepts it).
    x = dk.from_numpy(np.zeros((2, 0), dtype=np.float32))
    assert x.neg_().shape == (2, 0) and x.add_(1).shape == (2, 0)
