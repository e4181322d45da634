"""The generated operator bindings (Note [Python bindings]): overloads, keywords, defaults,
out=, varargs sizes, named-tuple returns, methods, and PyTorch's TypeErrors."""

import numpy as np
import pytest

import dispatchkit as dk
from dispatchkit import _C


def test_every_dk_operator_with_a_function_variant_is_bound():
    import re
    import pathlib
    yaml = pathlib.Path(__file__).resolve().parents[2] / "schemas" / "native_functions.yaml"
    names = set()
    for line in yaml.read_text().splitlines():
        m = re.match(r"- func: ([A-Za-z0-9_]+)(\.[A-Za-z0-9_]+)?\(", line)
        if m:
            names.add(m.group(1))
    missing = [n for n in sorted(names) if not (hasattr(_C, n) or hasattr(_C._nn, n) or hasattr(dk.Tensor, n))]
    assert not missing, missing


def test_overloads_by_argument_types():
    x = dk.tensor([1, 2, 3])
    assert dk.add(x, dk.tensor([1, 1, 1])).tolist() == [2, 3, 4]  # add.Tensor
    assert dk.add(x, 2).tolist() == [3, 4, 5]  # add.Scalar
    assert dk.add(x, 2.5).dtype is dk.float32  # a float scalar promotes an integer tensor
    assert dk.add(x, x, alpha=3).tolist() == [4, 8, 12]
    assert dk.add(input=x, other=x).tolist() == [2, 4, 6]


def test_methods_and_inplace_return_self():
    x = dk.tensor([1.0, 2.0])
    assert x.add(1).tolist() == [2, 3]
    y = x.mul_(2)
    assert y is x and x.tolist() == [2, 4]
    assert x.sum().item() == 6


def test_out_keyword_calls_the_out_overload():
    a = dk.tensor([1.0, 2.0])
    out = dk.empty(2)
    r = dk.add(a, a, out=out)
    assert r is out and out.tolist() == [2, 4]
    values, indices = dk.empty(2), dk.empty(2, dtype=dk.int64)
    res = dk.max(dk.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(values, indices))
    assert res.values is values and res.indices is indices and indices.tolist() == [1, 0]


def test_varargs_sizes_and_int_lists():
    assert dk.zeros(2, 3).shape == (2, 3)
    assert dk.zeros((2, 3)).shape == (2, 3)
    assert dk.zeros([4]).shape == (4,)
    x = dk.arange(0, 6)
    assert x.view(2, 3).shape == (2, 3) and x.view((3, 2)).shape == (3, 2)
    assert x.view(2, 3).permute(1, 0).shape == (3, 2)
    assert dk.sum(dk.ones(2, 3), 1).tolist() == [3, 3]  # int[1] given one int
    assert dk.sum(dk.ones(2, 3), dim=(0, 1)).item() == 6


def test_factory_keywords_and_requires_grad():
    x = dk.ones(2, dtype=dk.float64, requires_grad=True)
    assert x.dtype is dk.float64 and x.requires_grad and x.is_leaf
    assert dk.full((2,), 7).tolist() == [7, 7]
    assert dk.arange(0, 5, 2).tolist() == [0, 2, 4]


def test_named_tuple_returns():
    r = dk.max(dk.tensor([[1, 5], [7, 2]]), 1)
    assert type(r).__name__ == "max" and type(r).__module__ == "dispatchkit.return_types"
    values, indices = r
    assert values.tolist() == [5, 7] and r.indices.tolist() == [1, 0]


def test_type_errors_list_the_signatures():
    x = dk.tensor([1.0])
    with pytest.raises(TypeError) as e:
        dk.add(x, "a")
    assert str(e.value).startswith("add() received an invalid combination of arguments - got (Tensor, str), "
                                   "but expected one of:\n * (Tensor input, Tensor other, *, Number alpha, Tensor out)")
    with pytest.raises(TypeError, match=r"mm\(\) missing 1 required positional argument: \"mat2\""):
        dk.mm(x)
    with pytest.raises(TypeError, match=r"neg\(\) takes 1 positional argument but 2 were given"):
        dk.neg(x, x)
    with pytest.raises(TypeError, match=r"neg\(\) got an unexpected keyword argument 'foo'"):
        dk.neg(x, foo=1)
    with pytest.raises(TypeError, match=r"mm\(\): argument 'mat2' \(position 2\) must be Tensor, not int"):
        dk.mm(x, 1)


def test_operator_errors_arrive_as_runtime_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        dk.mm(dk.ones(2, 3), dk.ones(2, 3))


def test_nn_functional():
    x = dk.tensor([-1.0, 0.5])
    assert dk.nn.functional.relu(x).tolist() == [0, 0.5]
    assert dk.nn.functional.gelu(x).shape == (2,)


def test_nn_functional_takes_torch_nn_functional_signatures():
    torch = pytest.importorskip("torch")
    F = dk.nn.functional
    TF = torch.nn.functional
    x = np.linspace(-2, 2, 24).reshape(2, 3, 4)
    d, t = dk.from_numpy(x.copy()), torch.from_numpy(x.copy())

    def same(a, b):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-6, atol=1e-9)

    target = np.array([[0, 2, 1, 1], [2, 0, 0, 1]])
    dt, tt = dk.from_numpy(target.copy()), torch.from_numpy(target.copy())
    for reduction in ("none", "mean", "sum"):
        same(F.mse_loss(d, d * 0.5, reduction=reduction), TF.mse_loss(t, t * 0.5, reduction=reduction))
        same(F.nll_loss(d, dt, reduction=reduction), TF.nll_loss(t, tt, reduction=reduction))
        same(F.cross_entropy(d, dt, reduction=reduction, label_smoothing=0.25),
             TF.cross_entropy(t, tt, reduction=reduction, label_smoothing=0.25))
    same(F.nll_loss(d, dt, ignore_index=1), TF.nll_loss(t, tt, ignore_index=1))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.mse_loss(d, d, reduction="bogus")
    with pytest.warns(UserWarning, match="size_average and reduce"):
        same(F.mse_loss(d, d * 0.5, size_average=False), TF.mse_loss(t, t * 0.5, reduction="sum"))
    same(F.softmax(d, dim=1), TF.softmax(t, dim=1))
    same(F.log_softmax(d, -1), TF.log_softmax(t, -1))
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        same(F.softmax(d), TF.softmax(t, dim=0))
    same(F.dropout(d, training=False), TF.dropout(t, training=False))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(d, 1.5)
    same(F.layer_norm(d, [4]), TF.layer_norm(t, [4]))

    running = [np.zeros(3), np.ones(3)]
    d_stats = [dk.from_numpy(r.copy()) for r in running]
    t_stats = [torch.from_numpy(r.copy()) for r in running]
    same(F.batch_norm(d, *d_stats, training=True, momentum=0.5), TF.batch_norm(t, *t_stats, training=True, momentum=0.5))
    for ds, ts in zip(d_stats, t_stats):
        same(ds, ts)
    same(F.batch_norm(d, *d_stats), TF.batch_norm(t, *t_stats))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"dispatchkit.Size\(\[1, 3\]\)"):
        F.batch_norm(dk.ones(1, 3), None, None, training=True)

    weight = np.linspace(0, 1, 15).reshape(5, 3)
    dw, tw = dk.from_numpy(weight.copy()), torch.from_numpy(weight.copy())
    same(F.embedding(dt, dw), TF.embedding(tt, tw))
    dw.requires_grad_(True)
    tw.requires_grad_(True)
    F.embedding(dt, dw, padding_idx=-4).sum().backward()
    TF.embedding(tt, tw, padding_idx=-4).sum().backward()
    same(dw.grad, tw.grad)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(dt, dw, padding_idx=5)

    image = dk.from_numpy(np.arange(32.0).reshape(1, 2, 4, 4))
    timage = torch.arange(32.0, dtype=torch.float64).reshape(1, 2, 4, 4)
    values, indices = F.max_pool2d(image, 2, return_indices=True)
    t_values, t_indices = TF.max_pool2d(timage, 2, return_indices=True)
    same(values, t_values)
    same(indices, t_indices)
    same(F.max_pool2d(image, 3, stride=1, padding=1), TF.max_pool2d(timage, 3, stride=1, padding=1))
    same(F.avg_pool2d(image, 2), TF.avg_pool2d(timage, 2))
    y = dk.from_numpy(x.copy())
    assert F.relu(y, inplace=True) is y
    same(y, TF.relu(t))
