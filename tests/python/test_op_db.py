"""Every operator of schemas/native_functions.yaml against PyTorch 1.13.1 (the oracle), through
both libraries' operator objects (dispatchkit.ops.dk.<op>.<overload> and
torch.ops.aten.<op>.<overload>, which take the same schema): forward values, result dtypes and
shapes, float64 gradients, and whether a call raises. Samples come from op_db.py; in-place and
out= overloads use their functional overload's samples. Failing examples are saved as in
test_differential.py."""

import os
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import dispatchkit as dk  # noqa: E402
from op_db import OPS, REGRESSIONS, Const, Dtype  # noqa: E402
from test_differential import CORPUS  # noqa: E402

EXAMPLES = int(os.environ.get("DK_DIFFERENTIAL_EXAMPLES", "25"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=CORPUS,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])

# Operators not compared with torch, and why.
EXCLUDED = {
    # c10d:: collectives run on process groups (tests/distributed); dk::item is compared below.
    "native_layer_norm": "compared through layer_norm (its composite) and its gradient",
    "native_layer_norm_backward": "compared through layer_norm's gradient",
    "gelu_backward": None,
    "avg_pool2d_backward": "compared through avg_pool2d's gradient",
    "convolution": "compared through conv1d and conv2d, which call it",
    "im2col": "compared through conv2d (its CPU path)",
    "col2im": "compared through conv2d's gradient",
    "rand.generator": "random values; compared by rand",
    "randn.generator": "random values; compared by randn",
}
EXCLUDED = {k: v for k, v in EXCLUDED.items() if v}


def _schema_args(schema):
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")]
    return inner


def _split(name):
    base, _, overload = name.partition(".")
    return base, overload or "default"


def _dk_op(name):
    base, overload = _split(name)
    return getattr(getattr(dk.ops.dk, base), overload)


def _torch_op(name):
    base, overload = _split(name)
    return getattr(getattr(torch.ops.aten, base), overload)


def _all_dk_ops():
    return sorted(n[len("dk::"):] for n in dk._C._op_names() if n.startswith("dk::"))


def _plain(args_text):
    """An argument list without alias annotations and out arguments: what in-place, out= and
    functional overloads share."""
    text = re.sub(r"\([a-z]!?(?: -> \*)?\)", "", args_text)
    parts = [p.strip() for p in text.split(",")]
    return [p for p in parts if p and not re.match(r"Tensor (out|values|indices|max|min|max_values|min_indices)$", p)
            and p != "*"]


def _functional_of(name, schemas):
    """The functional overload whose samples an in-place or out= overload takes."""
    base, overload = _split(name)
    args = _plain(_schema_args(schemas[name]))
    plain_base = base[:-1] if base.endswith("_") else base
    for other, schema in schemas.items():
        obase, _ = _split(other)
        if obase == plain_base and other != name and other in OPS and _plain(_schema_args(schema)) == args:
            return other
    return None


def _plan():
    schemas = {n: _dk_op(n)._schema for n in _all_dk_ops()}
    plan, missing = {}, []
    for name in sorted(schemas):
        if name in OPS:
            plan[name] = (name, "functional")
        elif name in EXCLUDED:
            continue
        else:
            functional = _functional_of(name, schemas)
            if functional is None:
                missing.append(name)
            else:
                kind = "out" if "(a!) out" in schemas[name] or re.search(r"\*.*Tensor\([a-z]!\)", schemas[name]) and \
                    not _split(name)[0].endswith("_") else "inplace"
                plan[name] = (functional, kind)
    return plan, missing


PLAN, MISSING = _plan()


def test_every_operator_is_compared_or_excluded_with_a_reason():
    assert not MISSING, f"operators with no sample in op_db.py and no reason in EXCLUDED: {MISSING}"


# ---------------------------------------------------------------- making and comparing

def _make(value, lib, requires_grad=False):
    if isinstance(value, Const):
        return _make(value.value, lib)
    if isinstance(value, np.ndarray):
        arr = np.array(value, copy=True, order="K")
        t = dk.from_numpy(arr) if lib == "dk" else torch.from_numpy(arr)
        if requires_grad and arr.dtype == np.float64:
            t.requires_grad_(True)
        return t
    if isinstance(value, Dtype):
        return getattr(dk if lib == "dk" else torch, value.name)
    if isinstance(value, list):
        return [_make(v, lib, requires_grad) for v in value]
    if isinstance(value, tuple):
        return tuple(_make(v, lib, requires_grad) for v in value)
    if isinstance(value, dict):
        return {k: _make(v, lib, requires_grad) for k, v in value.items()}
    return value


def _leaves(made):
    if isinstance(made, (list, tuple)):
        return [leaf for v in made for leaf in _leaves(v)]
    return [made] if hasattr(made, "requires_grad") and made.requires_grad else []


def _dtype_name(dtype):
    return str(dtype).split(".")[-1]


def _same(d, t, spec, where="result"):
    if isinstance(t, torch.Tensor):
        assert isinstance(d, dk.Tensor), f"{where}: torch gives a tensor, dispatchkit {type(d).__name__}"
        assert tuple(d.shape) == tuple(t.shape), f"{where}: shape {tuple(d.shape)} != torch's {tuple(t.shape)}"
        assert _dtype_name(d.dtype) == _dtype_name(t.dtype), f"{where}: dtype {d.dtype} != torch's {t.dtype}"
        if spec.values:
            dv = np.asarray(d.detach(), dtype=np.float64) if d.dtype is not dk.bfloat16 else None
            tv = t.detach().numpy().astype(np.float64)
            np.testing.assert_allclose(dv, tv, rtol=spec.rtol, atol=spec.atol, equal_nan=True, err_msg=where)
    elif isinstance(t, (tuple, list)):
        assert isinstance(d, (tuple, list)) and len(d) == len(t), f"{where}: {len(t)} results in torch, got {d!r}"
        for i, (di, ti) in enumerate(zip(d, t)):
            _same(di, ti, spec, f"{where}[{i}]")
    elif isinstance(t, (bool, int, float)):
        assert d == pytest.approx(t, rel=spec.rtol, abs=spec.atol), f"{where}: {d} != torch's {t}"
    else:
        assert d == t or (d is None and t is None), f"{where}: {d!r} != torch's {t!r}"


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001: whether it raises is what is compared
        return None, e


def _float_outputs(out):
    if isinstance(out, (tuple, list)):
        return [o for v in out for o in _float_outputs(v)]
    return [out] if hasattr(out, "dtype") and _dtype_name(out.dtype) in ("float32", "float64") and out.requires_grad \
        else []


def _run(name, functional, kind, sample):
    spec = OPS[functional]
    args, kwargs = sample
    grad = spec.grad and kind == "functional"
    d_args, d_kwargs = _make(args, "dk", grad), _make(kwargs, "dk")
    t_args, t_kwargs = _make(args, "torch", grad), _make(kwargs, "torch")
    if kind == "out":
        t_ref, t_err = _outcome(lambda: _torch_op(functional)(*_make(args, "torch"), **_make(kwargs, "torch")))
        if t_err is not None:
            return
        refs = t_ref if isinstance(t_ref, tuple) else (t_ref,)
        d_outs = tuple(dk.empty(0, dtype=getattr(dk, _dtype_name(r.dtype))) for r in refs)
        t_outs = tuple(torch.empty(0, dtype=r.dtype) for r in refs)
        names = [a.split()[-1] for a in _plain_outs(_dk_op(name)._schema)]
        for n, do, to in zip(names, d_outs, t_outs):
            d_kwargs[n], t_kwargs[n] = do, to
    d, d_err = _outcome(lambda: _dk_op(name)(*d_args, **d_kwargs))
    t, t_err = _outcome(lambda: _torch_op(name)(*t_args, **t_kwargs))
    assert (d_err is None) == (t_err is None), f"{name}: dispatchkit raised {d_err!r}; torch raised {t_err!r}"
    if t_err is not None:
        return
    _same(d, t, spec)
    # Every tensor argument after the call: in-place results, batch_norm's running statistics,
    # and no write to an argument the schema calls read-only.
    for i, (da, ta) in enumerate(zip(d_args, t_args)):
        if isinstance(ta, torch.Tensor):
            _same(da, ta, spec, f"argument {i} after the call")
    if kind == "out":
        _same(tuple(d_kwargs[n] for n in names), tuple(t_kwargs[n] for n in names), spec, "out")
    if grad:
        d_outs, t_outs = _float_outputs(d), _float_outputs(t)
        if not t_outs or not all(_dtype_name(o.dtype) == "float64" for o in t_outs):
            return
        d_loss = sum((o * dk.from_numpy(np.linspace(-1, 1, max(o.numel(), 1))[:o.numel()].reshape(tuple(o.shape)).copy())).sum()
                     for o in d_outs)
        t_loss = sum((o * torch.from_numpy(np.linspace(-1, 1, max(o.numel(), 1))[:o.numel()].reshape(tuple(o.shape)).copy())).sum()
                     for o in t_outs)
        _, t_err = _outcome(lambda: t_loss.backward())
        _, d_err = _outcome(lambda: d_loss.backward())
        assert (d_err is None) == (t_err is None), f"{name} backward: dispatchkit raised {d_err!r}; torch raised {t_err!r}"
        for i, (dl, tl) in enumerate(zip(_leaves(d_args), _leaves(t_args))):
            if tl.grad is None:
                assert dl.grad is None or not np.any(np.asarray(dl.grad)), f"{name}: grad of input {i}: torch has none"
            else:
                assert dl.grad is not None, f"{name}: no gradient for input {i}"
                _same(dl.grad, tl.grad, spec, f"grad of input {i}")


def _plain_outs(schema):
    return [p.strip() for p in _schema_args(schema).split(",") if re.search(r"Tensor\([a-z]!\)", p) and
            not p.strip().endswith(" self")]


@pytest.mark.parametrize("name", sorted(PLAN))
@SETTINGS
@given(data=st.data())
def test_operator_matches_torch(name, data):
    functional, kind = PLAN[name]
    _run(name, functional, kind, OPS[functional].sample(data.draw))


@pytest.mark.parametrize("name,sample", REGRESSIONS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REGRESSIONS)])
def test_regression_corpus(name, sample):
    functional, kind = PLAN[name]
    _run(name, functional, kind, sample)
