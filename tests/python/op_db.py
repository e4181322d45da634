"""Sample inputs for every operator of schemas/native_functions.yaml (PyTorch's OpInfo idea),
for the differential tests (test_op_db.py). A sample is drawn with Hypothesis and written in
library-neutral terms (NumPy arrays for tensors, ``Dtype("float32")`` for dtypes), then made
into dispatchkit and torch arguments of the same values and strides.

``OPS`` maps an operator overload ("add.Tensor") to a ``Spec``: how to draw its arguments, and
what to compare. In-place (``add_.Tensor``) and out= (``add.out``) overloads take the samples of
their functional overload; a sample both libraries refuse is a passing case (whether a call
raises must match)."""

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@dataclass(frozen=True)
class Dtype:
    name: str


@dataclass(frozen=True)
class Const:
    """An array argument that never requires grad (batch_norm's running statistics)."""
    value: np.ndarray


@dataclass(frozen=True)
class Spec:
    sample: Callable  # draw -> (args, kwargs)
    grad: bool = True               # compare float64 gradients
    values: bool = True             # compare values (False: shapes and dtypes only: random, empty)
    rtol: float = 1e-5
    atol: float = 1e-6
    functional: Optional[str] = None  # take the samples of this overload (in-place, out=)


FLOATS = ("float32", "float64")
NUMERIC = ("float32", "float64", "int64", "int32")


def array(draw, shape, dtype="float64", lo=-4.0, hi=4.0, noncontiguous=True):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        # Multiples of 1/8: exact in every float dtype, so both libraries start from the same values.
        elements = st.integers(int(np.ceil(lo * 8)), int(np.floor(hi * 8))).map(lambda i: i / 8)
    elif dt.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(int(lo), int(hi))
    arr = draw(hnp.arrays(dt, tuple(shape), elements=elements))
    if noncontiguous and arr.ndim >= 2 and draw(st.booleans()):
        arr = np.ascontiguousarray(arr.swapaxes(0, 1)).swapaxes(0, 1)
    return arr


def shape(draw, min_dims=0, max_dims=3, min_side=0, max_side=4):
    return draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side))


def dtype_of(draw, choices=FLOATS):
    return draw(st.sampled_from(choices))


# ---------------------------------------------------------------- families

def unary(lo=-4.0, hi=4.0, dtypes=FLOATS, **extra):
    def sample(draw):
        return (array(draw, shape(draw), dtype_of(draw, dtypes), lo, hi),), dict(extra)
    return sample


def binary(dtypes=NUMERIC, lo=-4.0, hi=4.0, kwargs=lambda draw: {}):
    def sample(draw):
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4))
        a = array(draw, shapes.input_shapes[0], dtype_of(draw, dtypes), lo, hi)
        b = array(draw, shapes.input_shapes[1], dtype_of(draw, dtypes), lo, hi)
        return (a, b), kwargs(draw)
    return sample


def tensor_scalar(dtypes=NUMERIC, scalar=st.one_of(st.integers(-3, 3), st.floats(-3, 3).map(lambda v: round(v, 2))),
                  lo=-4.0, hi=4.0, kwargs=lambda draw: {}):
    def sample(draw):
        return (array(draw, shape(draw), dtype_of(draw, dtypes), lo, hi), draw(scalar)), kwargs(draw)
    return sample


def alpha(draw):
    return {"alpha": draw(st.sampled_from([1, 2, 0.5]))} if draw(st.booleans()) else {}


def dim_of(draw, nd):
    return draw(st.integers(-nd, nd - 1)) if nd else 0


def reduction_dims(keepdim=True, extra=lambda draw: {}):
    def sample(draw):
        sh = shape(draw, min_dims=1, min_side=1)
        dims = draw(st.lists(st.integers(0, len(sh) - 1), min_size=1, max_size=len(sh), unique=True))
        args = (array(draw, sh, dtype_of(draw)), dims)
        if keepdim:
            args += (draw(st.booleans()),)
        return args, extra(draw)
    return sample


def along_dim(extra_args=lambda draw, sh: (), kwargs=lambda draw: {}, min_side=1, dtypes=FLOATS):
    def sample(draw):
        sh = shape(draw, min_dims=1, min_side=min_side)
        d = dim_of(draw, len(sh))
        return (array(draw, sh, dtype_of(draw, dtypes)), d) + tuple(extra_args(draw, sh)), kwargs(draw)
    return sample


def one_tensor(extra=lambda draw, sh: ((), {}), min_dims=0, min_side=0, dtypes=FLOATS, lo=-4.0, hi=4.0):
    def sample(draw):
        sh = shape(draw, min_dims=min_dims, min_side=min_side)
        args, kwargs = extra(draw, sh)
        return (array(draw, sh, dtype_of(draw, dtypes), lo, hi),) + tuple(args), kwargs
    return sample


def matrices(*shapes_fn, dtypes=FLOATS, kwargs=lambda draw: {}):
    def sample(draw):
        n, m, k, b = (draw(st.integers(0, 4)) for _ in range(4))
        shapes = shapes_fn[0](n, m, k, b)
        dt = dtype_of(draw, dtypes)
        return tuple(array(draw, s, dt) for s in shapes), kwargs(draw)
    return sample


def factory(with_fill=False):
    def sample(draw):
        size = list(shape(draw, min_dims=0, max_dims=3))
        kwargs = {"dtype": Dtype(draw(st.sampled_from(["float32", "float64", "int64"])))} if draw(st.booleans()) else {}
        args = (size, draw(st.integers(-3, 3))) if with_fill else (size,)
        return args, kwargs
    return sample


def like():
    def sample(draw):
        kwargs = {"dtype": Dtype(draw(st.sampled_from(["float32", "float64", "int64"])))} if draw(st.booleans()) else {}
        return (array(draw, shape(draw), dtype_of(draw, NUMERIC)),), kwargs
    return sample


def permutation(draw, nd):
    return draw(st.permutations(list(range(nd))))


def views():
    out = {}

    def view_sample(draw):
        sh = shape(draw, min_dims=1)
        arr = np.ascontiguousarray(array(draw, sh, dtype_of(draw), noncontiguous=False))
        n = int(np.prod(sh))
        return (arr, draw(st.sampled_from([[n], [-1], [1, n], [n, 1] if n else [0, 5]]))), {}

    def transpose_sample(draw):
        sh = shape(draw, min_dims=1)
        return (array(draw, sh, dtype_of(draw)), dim_of(draw, len(sh)), dim_of(draw, len(sh))), {}

    def t_sample(draw):
        return (array(draw, shape(draw, min_dims=0, max_dims=2), dtype_of(draw)),), {}

    def permute_sample(draw):
        sh = shape(draw)
        return (array(draw, sh, dtype_of(draw)), permutation(draw, len(sh))), {}

    def unsqueeze_sample(draw):
        sh = shape(draw)
        return (array(draw, sh, dtype_of(draw)), draw(st.integers(-len(sh) - 1, len(sh)))), {}

    def squeeze_dim_sample(draw):
        sh = shape(draw, min_dims=1, min_side=0, max_side=2)
        return (array(draw, sh, dtype_of(draw)), dim_of(draw, len(sh))), {}

    def select_sample(draw):
        sh = shape(draw, min_dims=1, min_side=1)
        d = dim_of(draw, len(sh))
        return (array(draw, sh, dtype_of(draw)), d, draw(st.integers(-sh[d], sh[d] - 1))), {}

    def slice_sample(draw):
        sh = shape(draw, min_dims=1)
        d = dim_of(draw, len(sh))
        start = draw(st.one_of(st.none(), st.integers(-5, 5)))
        end = draw(st.one_of(st.none(), st.integers(-5, 5)))
        return (array(draw, sh, dtype_of(draw)), d, start, end, draw(st.integers(1, 3))), {}

    def split_sample(draw):
        sh = shape(draw, min_dims=1)
        return (array(draw, sh, dtype_of(draw)), draw(st.integers(1, 3)), dim_of(draw, len(sh))), {}

    def unbind_sample(draw):
        sh = shape(draw, min_dims=1)
        return (array(draw, sh, dtype_of(draw)), dim_of(draw, len(sh))), {}

    out["view"] = Spec(view_sample)
    out["reshape"] = Spec(lambda draw: ((array(draw, (2, 3), dtype_of(draw)), draw(st.sampled_from([[6], [3, 2], [-1, 2], [1, 6, 1]]))), {}))
    out["transpose.int"] = Spec(transpose_sample)
    out["t"] = Spec(t_sample)
    out["permute"] = Spec(permute_sample)
    out["contiguous"] = Spec(unary())
    out["unsqueeze"] = Spec(unsqueeze_sample)
    out["detach"] = Spec(unary(), grad=False)
    out["squeeze"] = Spec(one_tensor(min_side=0))
    out["squeeze.dim"] = Spec(squeeze_dim_sample)
    out["select.int"] = Spec(select_sample)
    out["slice.Tensor"] = Spec(slice_sample)
    out["flatten.using_ints"] = Spec(one_tensor(lambda draw, sh: ((0, -1) if not sh else (0, len(sh) - 1), {})))
    out["split.Tensor"] = Spec(split_sample)
    out["unbind.int"] = Spec(unbind_sample)
    out["expand"] = Spec(one_tensor(lambda draw, sh: ([[draw(st.integers(1, 2))] + [s if s != 1 else draw(st.integers(1, 3))
                                                                                  for s in sh]], {})))
    out["narrow"] = Spec(lambda draw: ((array(draw, (4, 3), dtype_of(draw)), draw(st.integers(0, 1)), draw(st.integers(0, 2)), 1), {}))
    out["chunk"] = Spec(split_sample)
    # The view copies: the same samples, a copy out.
    for view, copy in [("view", "view_copy"), ("transpose.int", "transpose_copy.int"), ("t", "t_copy"),
                       ("permute", "permute_copy"), ("unsqueeze", "unsqueeze_copy"), ("expand", "expand_copy"), ("detach", "detach_copy"),
                       ("squeeze", "squeeze_copy"), ("squeeze.dim", "squeeze_copy.dim"), ("select.int", "select_copy.int"),
                       ("slice.Tensor", "slice_copy.Tensor"), ("split.Tensor", "split_copy.Tensor"),
                       ("unbind.int", "unbind_copy.int")]:
        out[copy] = out[view]
    return out


def scatter_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    d = dim_of(draw, len(sh))
    index_shape = list(sh)
    index_shape[d] = draw(st.integers(0, 3))
    index = draw(hnp.arrays(np.int64, tuple(index_shape), elements=st.integers(0, sh[d] - 1)))
    src = array(draw, index_shape, "float64")
    return (array(draw, sh, "float64"), d, index, src), {}


def gather_sample(draw):
    args, _ = scatter_sample(draw)
    return args[:3], {}


def index_select_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    d = dim_of(draw, len(sh))
    index = draw(hnp.arrays(np.int64, (draw(st.integers(0, 4)),), elements=st.integers(0, sh[d] - 1)))
    return (array(draw, sh, dtype_of(draw)), d, index), {}


def masked_fill_sample(value_tensor):
    def sample(draw):
        sh = shape(draw)
        mask = draw(hnp.arrays(np.bool_, sh))
        value = np.array(draw(st.floats(-2, 2)).__round__(2)) if value_tensor else draw(st.integers(-3, 3))
        return (array(draw, sh, dtype_of(draw)), mask, value), {}
    return sample


def where_sample(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    cond = draw(hnp.arrays(np.bool_, shapes.input_shapes[0]))
    dt = dtype_of(draw)
    return (cond, array(draw, shapes.input_shapes[1], dt), array(draw, shapes.input_shapes[2], dt)), {}


def cat_sample(stack):
    def sample(draw):
        sh = list(shape(draw, min_dims=1, min_side=1))
        d = dim_of(draw, len(sh) + (1 if stack else 0))
        n = draw(st.integers(1, 3))
        dt = dtype_of(draw)
        tensors = []
        for _ in range(n):
            s = list(sh)
            if not stack:
                s[d] = draw(st.integers(0, 3))
            tensors.append(array(draw, s, dt))
        return (tensors, d), {}
    return sample


def loss_sample(kind):
    def sample(draw):
        n, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        reduction = draw(st.sampled_from([0, 1, 2]))
        if kind == "mse":
            sh = shape(draw, min_dims=1, min_side=1)
            return (array(draw, sh, "float64"), array(draw, sh, "float64"), reduction), {}
        logits = array(draw, (n, c), "float64")
        target = draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, c - 1)))
        if kind == "nll":
            return (logits, target, None, reduction), {}
        return (logits, target, None, reduction), {}
    return sample


def conv2d_sample(draw):
    n, cin, cout, h, w, k = (draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2)),
                             draw(st.integers(3, 5)), draw(st.integers(3, 5)), draw(st.integers(1, 3)))
    x = array(draw, (n, cin, h, w), "float64")
    weight = array(draw, (cout, cin, k, k), "float64")
    bias = array(draw, (cout,), "float64") if draw(st.booleans()) else None
    return (x, weight, bias, [draw(st.integers(1, 2))] * 2, [draw(st.integers(0, 1))] * 2), {}


def conv1d_sample(draw):
    n, cin, cout, length, k = (draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2)),
                               draw(st.integers(3, 6)), draw(st.integers(1, 3)))
    x = array(draw, (n, cin, length), "float64")
    weight = array(draw, (cout, cin, k), "float64")
    return (x, weight, None, [draw(st.integers(1, 2))], [draw(st.integers(0, 1))]), {}


def pool_sample(with_indices=False):
    def sample(draw):
        x = array(draw, (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(2, 5)), draw(st.integers(2, 5))),
                  "float64")
        k = draw(st.integers(1, 2))
        return (x, [k, k], [draw(st.integers(1, 2))] * 2), {}
    return sample


def layer_norm_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    normalized = list(sh[-1:])
    weight = array(draw, normalized, "float64") if draw(st.booleans()) else None
    bias = array(draw, normalized, "float64") if draw(st.booleans()) else None
    return (array(draw, sh, "float64"), normalized, weight, bias), {}


def batch_norm_sample(draw):
    # [N, C, ...]: one value per channel in training raises in both libraries.
    sh = (draw(st.integers(1, 3)), draw(st.integers(1, 3))) + shape(draw, max_dims=2, min_side=1, max_side=3)
    channels = [sh[1]]
    weight = array(draw, channels, "float64") if draw(st.booleans()) else None
    bias = array(draw, channels, "float64") if draw(st.booleans()) else None
    training = draw(st.booleans())
    running = draw(st.booleans())
    mean = Const(array(draw, channels, "float64")) if running else None
    var = Const(array(draw, channels, "float64", lo=0.5, hi=4.0)) if running else None
    momentum = draw(st.sampled_from([0.1, 0.5, 1.0]))
    return (array(draw, sh, "float64"), weight, bias, mean, var, training, momentum, 1e-5, False), {}


def attention_sample(draw):
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    length, source, embed, value_embed = (draw(st.integers(1, 4)) for _ in range(4))
    dt = dtype_of(draw)
    query = array(draw, batch + (length, embed), dt, lo=-2.0, hi=2.0)
    key = array(draw, batch + (source, embed), dt, lo=-2.0, hi=2.0)
    value = array(draw, batch + (source, value_embed), dt)
    kind = draw(st.sampled_from(["none", "bool", "float"]))
    if kind == "bool":
        # Every row keeps its first key, so no row is all -inf (nan in both, but not comparable).
        mask = array(draw, (length, source), "bool")
        mask[:, 0] = True
    elif kind == "float":
        mask = array(draw, (length, source), dt, lo=-1.0, hi=1.0)
    else:
        mask = None
    return (query, key, value, mask, 0.0, draw(st.booleans()), draw(st.booleans())), {}


def softmax_sample(half_to_float):
    def sample(draw):
        sh = shape(draw, min_dims=1, min_side=1)
        args = (array(draw, sh, dtype_of(draw)), dim_of(draw, len(sh)))
        return (args + (False,) if half_to_float else args), {}
    return sample


def topk_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    d = dim_of(draw, len(sh))
    # Distinct values: ties may be ordered differently by the two libraries.
    arr = np.array(draw(st.permutations(list(range(int(np.prod(sh)))))), dtype=np.float64).reshape(sh)
    return (arr, draw(st.integers(0, sh[d])), d, draw(st.booleans())), {}


def sort_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    arr = np.array(draw(st.permutations(list(range(int(np.prod(sh)))))), dtype=np.float64).reshape(sh)
    return (arr, dim_of(draw, len(sh)), draw(st.booleans())), {}


def index_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    index = draw(hnp.arrays(np.int64, (draw(st.integers(0, 4)),), elements=st.integers(-sh[0], sh[0] - 1)))
    return (array(draw, sh, "float64"), [index]), {}


def index_put_sample(draw):
    sh = shape(draw, min_dims=1, min_side=1)
    # Distinct indices: with repeats, which write wins is unspecified without accumulate.
    index = np.array(draw(st.lists(st.integers(0, sh[0] - 1), unique=True, max_size=sh[0])), dtype=np.int64)
    values = array(draw, (len(index),) + tuple(sh[1:]), "float64")
    return (array(draw, sh, "float64"), [index], values, draw(st.booleans())), {}


def embedding_sample(draw):
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    idx = draw(hnp.arrays(np.int64, shape(draw, max_dims=2), elements=st.integers(0, n - 1)))
    return (array(draw, (n, d), "float64"), idx), {}


OPS: Dict[str, Spec] = {
    "add.Tensor": Spec(binary(kwargs=alpha)),
    "add.Scalar": Spec(tensor_scalar(kwargs=alpha)),
    "sub.Tensor": Spec(binary(kwargs=alpha)),
    "sub.Scalar": Spec(tensor_scalar(kwargs=alpha)),
    "mul.Tensor": Spec(binary()),
    "mul.Scalar": Spec(tensor_scalar()),
    "div.Tensor": Spec(binary(dtypes=FLOATS, lo=0.5, hi=4.0)),
    "div.Scalar": Spec(tensor_scalar(dtypes=FLOATS, scalar=st.sampled_from([2, 0.5, -4.0]))),
    "pow.Tensor_Scalar": Spec(tensor_scalar(dtypes=FLOATS, scalar=st.sampled_from([2, 3, 0.5, -1.0]), lo=0.5)),
    "maximum": Spec(binary()),
    "minimum": Spec(binary()),
    "eq.Tensor": Spec(binary(), grad=False),
    "eq.Scalar": Spec(tensor_scalar(), grad=False),
    "gt.Tensor": Spec(binary(), grad=False),
    "lt.Tensor": Spec(binary(), grad=False),
    "where.self": Spec(where_sample),
    "neg": Spec(unary(dtypes=NUMERIC)),
    "abs": Spec(unary(dtypes=NUMERIC)),
    "exp": Spec(unary()),
    "log": Spec(unary(lo=0.25)),
    "sqrt": Spec(unary(lo=0.25)),
    "rsqrt": Spec(unary(lo=0.25)),
    "sin": Spec(unary()),
    "cos": Spec(unary()),
    "tanh": Spec(unary()),
    "sigmoid": Spec(unary()),
    "relu": Spec(unary(dtypes=NUMERIC)),
    "gelu": Spec(one_tensor(lambda draw, sh: ((), {"approximate": draw(st.sampled_from(["none", "tanh"]))}))),
    "gelu_backward": Spec(lambda draw: (lambda sh: ((array(draw, sh, "float64"), array(draw, sh, "float64")), {}))(shape(draw)),
                          grad=False),
    "clamp": Spec(one_tensor(lambda draw, sh: ((draw(st.sampled_from([None, -1, -0.5])), draw(st.sampled_from([None, 1, 2.5]))), {}))),
    "sum": Spec(unary(dtypes=NUMERIC)),
    "sum.dim_IntList": Spec(reduction_dims()),
    "mean": Spec(unary()),
    "mean.dim": Spec(reduction_dims()),
    "max.dim": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))), dtype=np.float64).reshape(sh),
                                               dim_of(draw, len(sh)), draw(st.booleans())), {}))(shape(draw, min_dims=1, min_side=1))),
    "min.dim": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))), dtype=np.float64).reshape(sh),
                                               dim_of(draw, len(sh)), draw(st.booleans())), {}))(shape(draw, min_dims=1, min_side=1))),
    "argmax": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))),
                                                       dtype=np.float64).reshape(sh),), {}))(shape(draw, min_side=1)), grad=False),
    "argmin": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))),
                                                       dtype=np.float64).reshape(sh),), {}))(shape(draw, min_side=1)), grad=False),
    "max": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))),
                                                    dtype=np.float64).reshape(sh),), {}))(shape(draw, min_side=1))),
    "min": Spec(lambda draw: (lambda sh: ((np.array(draw(st.permutations(list(range(int(np.prod(sh)))))),
                                                    dtype=np.float64).reshape(sh),), {}))(shape(draw, min_side=1))),
    # Two elements at least: for one element and unbiased, torch 1.13.1's var_backward returns
    # grad * inf without self's shape (-inf for a 0-dim tensor, an error for shape [1]), where
    # dispatchkit gives nan (0 * inf); var.dim's size-1 dims still compare the nan forward value.
    "var": Spec(one_tensor(lambda draw, sh: ((draw(st.booleans()),), {}), min_dims=1, min_side=2)),
    "var.dim": Spec(reduction_dims(keepdim=False, extra=lambda draw: {"unbiased": draw(st.booleans()),
                                                                      "keepdim": draw(st.booleans())})),
    "std": Spec(one_tensor(lambda draw, sh: ((draw(st.booleans()),), {}), min_dims=1, min_side=2)),
    "std.dim": Spec(reduction_dims(keepdim=False, extra=lambda draw: {"unbiased": False})),
    "mm": Spec(matrices(lambda n, m, k, b: ((n, k), (k, m)))),
    "bmm": Spec(matrices(lambda n, m, k, b: ((b, n, k), (b, k, m)))),
    "baddbmm": Spec(matrices(lambda n, m, k, b: ((b, n, m), (b, n, k), (b, k, m)),
                             kwargs=lambda draw: {"beta": draw(st.sampled_from([1, 0.5])), "alpha": draw(st.sampled_from([1, 2]))})),
    "addmm": Spec(matrices(lambda n, m, k, b: ((n, m), (n, k), (k, m)))),
    "matmul": Spec(matrices(lambda n, m, k, b: ((b, n, k), (k, m)))),
    "linear": Spec(matrices(lambda n, m, k, b: ((n, k), (m, k), (m,)))),
    **views(),
    "cat": Spec(cat_sample(stack=False)),
    "stack": Spec(cat_sample(stack=True)),
    "repeat": Spec(one_tensor(lambda draw, sh: ([[draw(st.integers(0, 2)) for _ in range(len(sh) + draw(st.integers(0, 1)))]], {}))),
    "tril": Spec(one_tensor(lambda draw, sh: ((draw(st.integers(-2, 2)),), {}), min_dims=2)),
    "triu": Spec(one_tensor(lambda draw, sh: ((draw(st.integers(-2, 2)),), {}), min_dims=2)),
    "layer_norm": Spec(layer_norm_sample, rtol=1e-4, atol=1e-5),
    "batch_norm": Spec(batch_norm_sample, rtol=1e-4, atol=1e-5),
    "_scaled_dot_product_attention": Spec(attention_sample, rtol=1e-4, atol=1e-5),
    "masked_fill.Scalar": Spec(masked_fill_sample(False)),
    "masked_fill.Tensor": Spec(masked_fill_sample(True), grad=False),
    "empty.memory_format": Spec(factory(), values=False),
    "empty_strided": Spec(lambda draw: (([2, 3], [3, 1]), {}), values=False),
    "zeros": Spec(factory()),
    "ones": Spec(factory()),
    "full": Spec(factory(with_fill=True)),
    "arange.start_step": Spec(lambda draw: ((draw(st.integers(-3, 3)), draw(st.integers(-3, 8)), draw(st.sampled_from([1, 2, 3]))), {})),
    "rand": Spec(factory(), values=False),
    "randn": Spec(factory(), values=False),
    "zeros_like": Spec(like()),
    "ones_like": Spec(like()),
    "empty_like": Spec(like(), values=False),
    "select_scatter": Spec(lambda draw: ((array(draw, (3, 4), "float64"), array(draw, (4,), "float64"), 0, draw(st.integers(-3, 2))), {})),
    "slice_scatter": Spec(lambda draw: ((array(draw, (4, 3), "float64"), array(draw, (2, 3), "float64"), 0, 1, 3), {})),
    "_to_copy": Spec(like()),
    "to.dtype": Spec(lambda draw: ((array(draw, shape(draw), "float64"), Dtype(draw(st.sampled_from(["float32", "int64", "float64"])))), {})),
    "clone": Spec(unary()),
    "copy": Spec(binary(dtypes=FLOATS)),
    "fill.Scalar": Spec(tensor_scalar(dtypes=FLOATS), grad=False),
    "zero": Spec(unary(), grad=False),
    "item": Spec(lambda draw: ((array(draw, (), dtype_of(draw, NUMERIC)),), {}), grad=False),
    "index_select": Spec(index_select_sample),
    "gather": Spec(gather_sample),
    "scatter_add": Spec(scatter_sample),
    "cumsum": Spec(along_dim(dtypes=FLOATS)),
    "sort": Spec(sort_sample),
    "topk": Spec(topk_sample),
    "nonzero": Spec(unary(dtypes=("float64", "int64")), grad=False),
    "index.Tensor": Spec(index_sample),
    "index_put": Spec(index_put_sample),
    "_softmax": Spec(softmax_sample(True)),
    "softmax.int": Spec(softmax_sample(False)),
    "log_softmax.int": Spec(softmax_sample(False)),
    "_log_softmax": Spec(softmax_sample(True)),
    "mse_loss": Spec(loss_sample("mse")),
    "nll_loss": Spec(loss_sample("nll")),
    "cross_entropy_loss": Spec(loss_sample("ce"), rtol=1e-4, atol=1e-6),
    "dropout": Spec(lambda draw: ((array(draw, shape(draw), "float64"), 0.0, draw(st.booleans())), {})),
    "embedding": Spec(embedding_sample),
    "conv1d": Spec(conv1d_sample, rtol=1e-4, atol=1e-5),
    "conv2d": Spec(conv2d_sample, rtol=1e-4, atol=1e-5),
    "max_pool2d": Spec(pool_sample()),
    "max_pool2d_with_indices": Spec(pool_sample()),
    "avg_pool2d": Spec(pool_sample()),
}

# The regression corpus in readable form: inputs on which dispatchkit once differed from torch
# (found by the tests above), replayed on every run by test_op_db.py. Add a failure's inputs
# here (its "Falsifying example" draws, as values) when fixing it.
REGRESSIONS = [
    # std's gradient where every element equals the mean: 0 in torch (not 0 * inf = nan).
    ("std.dim", ((np.array([[1.5, 1.5], [0.25, -1.0]]), [1]), {"unbiased": False})),
    ("std", ((np.array([2.0, 2.0, 2.0]), True), {})),
    # index_put with no positions still gives `values` an (empty) gradient.
    ("index_put", ((np.zeros((3, 2)), [np.zeros((0,), dtype=np.int64)], np.zeros((0, 2)), False), {})),
    # aten::batch_norm accepts one value per channel in training (the running variance becomes nan);
    # only nn.functional.batch_norm rejects it.
    ("batch_norm", ((np.array([[0.5, 1.0]]), None, None, Const(np.zeros(2)), Const(np.ones(2)), True, 0.1, 1e-5,
                     False), {})),
    # An empty batch leaves the running statistics alone.
    ("batch_norm", ((np.zeros((0, 2)), None, None, Const(np.zeros(2)), Const(np.ones(2)), True, 0.1, 1e-5, False),
                    {})),
    # A mask together with is_causal is an error.
    ("_scaled_dot_product_attention", ((np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), np.array([[False]]), 0.0,
                                        False, True), {})),
    # In-place on an empty tensor with a zero stride (NumPy's layout of an empty array) is no overlap.
    ("neg_", ((np.zeros((2, 0)),), {})),
    ("add_.Tensor", ((np.zeros((2, 0)), np.zeros((2, 0))), {})),
]
