"""Differential tests against PyTorch 1.13.1 (Debian's python3-torch, the oracle): Hypothesis
draws shapes (zero-size and broadcast included), dtypes, strides (non-contiguous views) and
values; forward values, result dtypes and shapes, float64 gradients, and whether a call
raises must match torch.

Hypothesis' example database is two folders: tests/python/hypothesis-corpus, the regression
corpus kept in the repository (read only here: its examples are replayed first on every run),
and $DK_HYPOTHESIS_DB (default: hypothesis-db in the working directory, the build folder under
meson test), where a run saves what failed. Copy a failure's folder into the corpus once fixed.
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.database import (  # noqa: E402
    DirectoryBasedExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)
from hypothesis.extra import numpy as hnp  # noqa: E402

import dispatchkit as dk  # noqa: E402

CORPUS = MultiplexedDatabase(
    ReadOnlyDatabase(DirectoryBasedExampleDatabase(os.path.join(os.path.dirname(__file__), "hypothesis-corpus"))),
    DirectoryBasedExampleDatabase(os.environ.get("DK_HYPOTHESIS_DB", "hypothesis-db")))
EXAMPLES = int(os.environ.get("DK_DIFFERENTIAL_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=CORPUS, derandomize=False)

DTYPES = {"float32": (dk.float32, torch.float32), "float64": (dk.float64, torch.float64),
          "int64": (dk.int64, torch.int64), "int32": (dk.int32, torch.int32), "bool": (dk.bool, torch.bool)}


def _array(draw, shape, dtype, positive=False):
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        lo = 0.125 if positive else -10.0
        elements = st.floats(lo, 10.0, allow_nan=False, width=32)
    elif np_dtype.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(1 if positive else -10, 10)
    arr = draw(hnp.arrays(np_dtype, shape, elements=elements))
    # A non-contiguous view half the time: the same values, transposed storage.
    if arr.ndim >= 2 and draw(st.booleans()):
        arr = np.ascontiguousarray(arr.swapaxes(0, 1)).swapaxes(0, 1)
    return arr


def _pair(arr):
    """The same values as a dispatchkit tensor and a torch tensor, with the same strides."""
    return dk.from_numpy(arr.copy() if arr.flags.c_contiguous else arr), torch.from_numpy(arr.copy() if arr.flags.c_contiguous else arr)


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001: whether it raises is what is compared
        return None, e


def _check_same(dk_out, torch_out, rtol=1e-5, atol=1e-6):
    assert dk_out.shape == tuple(torch_out.shape), (dk_out.shape, torch_out.shape)
    assert str(dk_out.dtype).split(".")[-1] == str(torch_out.dtype).split(".")[-1], (dk_out.dtype, torch_out.dtype)
    np.testing.assert_allclose(np.asarray(dk_out.detach() if dk_out.requires_grad else dk_out, dtype=np.float64),
                               torch_out.detach().numpy().astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def _compare(dk_fn, torch_fn, dk_args, torch_args, grad_inputs=()):
    d, d_err = _outcome(lambda: dk_fn(*dk_args))
    t, t_err = _outcome(lambda: torch_fn(*torch_args))
    assert (d_err is None) == (t_err is None), f"dispatchkit: {d_err!r}; torch: {t_err!r}"
    if d_err is not None:
        return
    _check_same(d, t)
    if grad_inputs and t.requires_grad and t.dtype == torch.float64:
        weights = np.linspace(-1.0, 1.0, num=max(1, t.numel())).reshape(tuple(t.shape)) if t.numel() else \
            np.zeros(tuple(t.shape))
        (d * dk.from_numpy(weights.copy())).sum().backward()
        (t * torch.from_numpy(weights.copy())).sum().backward()
        for di, ti in grad_inputs:
            if ti.grad is None:
                assert di.grad is None
            else:
                _check_same(di.grad, ti.grad)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "eq", "gt", "lt"]
UNARY = {"neg": False, "abs": False, "exp": False, "log": True, "sqrt": True, "rsqrt": True, "sin": False,
         "cos": False, "tanh": False, "sigmoid": False, "relu": False}
DIFFERENTIABLE = {"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                  "relu", "abs", "maximum", "minimum"}


@pytest.mark.parametrize("op", BINARY)
@SETTINGS
@given(data=st.data())
def test_binary_broadcasting(op, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4))
    dtypes = data.draw(st.tuples(st.sampled_from(["float32", "float64", "int64"]),
                                 st.sampled_from(["float32", "float64", "int64"])))
    a = _array(data.draw, shapes.input_shapes[0], dtypes[0], positive=op == "div")
    b = _array(data.draw, shapes.input_shapes[1], dtypes[1], positive=op == "div")
    (da, ta), (db, tb) = _pair(a), _pair(b)
    grads = ()
    if op in DIFFERENTIABLE and dtypes == ("float64", "float64"):
        for t in (da, db, ta, tb):
            t.requires_grad_(True)
        grads = ((da, ta), (db, tb))
    _compare(getattr(dk, op), getattr(torch, op), (da, db), (ta, tb), grads)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@SETTINGS
@given(data=st.data())
def test_binary_with_python_scalars(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64", "int32"]))
    scalar = data.draw(st.one_of(st.integers(1, 5), st.floats(0.5, 5.0)))
    a = _array(data.draw, shape, dtype)
    da, ta = _pair(a)
    _compare(getattr(dk, op), getattr(torch, op), (da, scalar), (ta, scalar))
    _compare(lambda x, s: getattr(x, op)(s), lambda x, s: getattr(x, op)(s), (da, scalar), (ta, scalar))


@pytest.mark.parametrize("op", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    a = _array(data.draw, shape, dtype, positive=UNARY[op])
    da, ta = _pair(a)
    grads = ()
    if dtype == "float64":
        da.requires_grad_(True)
        ta.requires_grad_(True)
        grads = ((da, ta),)
    _compare(getattr(dk, op), getattr(torch, op), (da,), (ta,), grads)


@pytest.mark.parametrize("op", ["sum", "mean"])
@SETTINGS
@given(data=st.data())
def test_reductions_over_dims(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    a = _array(data.draw, shape, "float64")
    da, ta = _pair(a)
    da.requires_grad_(True)
    ta.requires_grad_(True)
    _compare(lambda x: getattr(dk, op)(x, dim, keepdim), lambda x: getattr(torch, op)(x, dim, keepdim), (da,), (ta,),
             ((da, ta),))
    _compare(getattr(dk, op), getattr(torch, op), (da.detach(),), (ta.detach(),))
