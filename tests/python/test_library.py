"""The dispatcher from Python: dispatchkit.ops, dispatchkit.library with Python kernels and
fallbacks, introspection, errors from Python kernels, and Python kernels on C++ threads."""

import pytest

import dispatchkit as dk


def test_ops_namespace_overloads_and_packets():
    x = dk.tensor([1.0, 2.0])
    add = dk.ops.dk.add
    assert "Tensor" in add.overloads() and "Scalar" in add.overloads()
    assert add.Tensor is dk.ops.dk.add.Tensor  # one object per operator
    assert repr(add.Tensor) == "dk.add.Tensor" and add.Tensor.name() == "dk::add.Tensor"
    assert add.Tensor._schema == "dk::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert add(x, x).tolist() == [2, 4] and add(x, 1).tolist() == [2, 3]
    assert add.Tensor(self=x, other=x, alpha=2).tolist() == [3, 6]  # the schema's names
    assert dk.ops.dk.relu.default(dk.tensor([-1.0, 1.0])).tolist() == [0, 1]
    with pytest.raises(AttributeError, match="no attribute 'no_such_op'"):
        dk.ops.dk.no_such_op
    with pytest.raises(AttributeError, match="has no overload 'Nope'"):
        dk.ops.dk.add.Nope


def test_introspection_dumps():
    state = dk.ops.dk.add.Tensor.dump_state()
    assert state.startswith("name: dk::add.Tensor\nschema: dk::add.Tensor(") and "CPU:" in state
    table = dk.ops.dk.add.Tensor.dump_computed_table()
    assert "CPU:" in table and "AutogradCPU:" in table


def test_define_and_impl_a_python_operator():
    lib = dk.library.Library("pytest_ops", "DEF")
    lib.define("scale(Tensor x, *, float factor=2.0) -> Tensor")
    lib.impl("scale", lambda x, factor: x * factor, "CPU")
    x = dk.tensor([1.0, 2.0])
    assert dk.ops.pytest_ops.scale(x).tolist() == [2, 4]
    assert dk.ops.pytest_ops.scale(x, factor=3.0).tolist() == [3, 6]
    assert "Python kernel at CPU" in dk.ops.pytest_ops.scale.default.dump_state()
    lib._destroy()
    with pytest.raises(AttributeError):
        dk.ops.pytest_ops.scale


def test_impl_in_another_library_and_several_returns():
    lib = dk.library.Library("pytest_multi", "DEF")
    lib.define("split2(Tensor x) -> (Tensor, Tensor)")
    impl = dk.library.Library("pytest_multi", "IMPL", "CPU")
    impl.impl("split2", lambda x: (x + 1, x - 1))
    a, b = dk.ops.pytest_multi.split2(dk.tensor([1.0]))
    assert a.tolist() == [2] and b.tolist() == [0]
    del impl
    del lib


def test_python_kernel_exception_keeps_its_type_with_a_note():
    lib = dk.library.Library("pytest_err", "DEF")
    lib.define("fails(Tensor x) -> Tensor")

    class MyError(Exception):
        pass

    def kernel(x):
        raise MyError("kernel says no")

    lib.impl("fails", kernel, "CPU")
    with pytest.raises(MyError, match="kernel says no") as info:
        dk.ops.pytest_err.fails(dk.ones(1))
    assert info.value.__notes__ == ["while dispatchkit ran the Python kernel of pytest_err::fails at CPU"]


def test_python_kernel_returning_the_wrong_type_is_a_type_error():
    lib = dk.library.Library("pytest_bad", "DEF")
    lib.define("wrong(Tensor x) -> Tensor")
    lib.impl("wrong", lambda x: 3, "CPU")
    with pytest.raises(TypeError, match="a Python kernel for pytest_bad::wrong returned int, expected Tensor"):
        dk.ops.pytest_bad.wrong(dk.ones(1))


def test_bad_registrations_are_clear_errors():
    lib = dk.library.Library("pytest_reg", "DEF")
    with pytest.raises(RuntimeError):
        lib.define("not a schema")
    with pytest.raises(ValueError, match="unknown dispatch key 'Nowhere'"):
        lib.impl("x", lambda t: t, "Nowhere")
    with pytest.raises(ValueError, match="Library kind must be"):
        dk.library.Library("pytest_reg2", "BOTH")


def test_python_kernel_called_from_cpp_threads():
    lib = dk.library.Library("pytest_threads", "DEF")
    lib.define("plus_one(Tensor x) -> Tensor")
    calls = []

    def kernel(x):
        calls.append(1)
        return x + 1

    lib.impl("plus_one", kernel, "CPU")
    results = dk._C._testing.call_from_threads(dk.ops.pytest_threads.plus_one.default, (dk.tensor([1.0]),), 4, 25)
    assert [r.tolist() for r in results] == [[2.0]] * 4
    assert len(calls) == 100


def test_python_fallback_on_privateuse1():
    """A Python backend: every operator on PrivateUse1 tensors runs on the CPU through one fallback."""
    seen = []

    def to_cpu(v):
        if isinstance(v, dk.Tensor) and v.device.type == "privateuseone":
            return dk._C._testing.privateuse1_to_cpu(v)
        return v

    def fallback(func, args, kwargs):
        seen.append(func.name())
        out = func(*[to_cpu(a) for a in args], **{k: to_cpu(v) for k, v in kwargs.items()})
        return dk._C._testing.privateuse1_from_cpu(out)

    lib = dk.library.Library("_", "IMPL", "PrivateUse1")  # a fallback belongs to no namespace
    lib.fallback(fallback)
    x = dk._C._testing.privateuse1_from_cpu(dk.tensor([1.0, 2.0]))
    assert x.device.type == "privateuseone"
    y = dk.mul(x, x)
    assert y.device.type == "privateuseone" and seen == ["dk::mul.Tensor"]
    assert dk._C._testing.privateuse1_to_cpu(y).tolist() == [1, 4]
    lib._destroy()


def test_named_returns_of_another_namespace_get_their_own_tuple_type():
    lib = dk.library.Library("pytest_named", "DEF")
    lib.define("max(Tensor x) -> (Tensor low, Tensor high)")
    lib.impl("max", lambda x: (x - 1, x + 1), "CPU")
    r = dk.ops.pytest_named.max(dk.tensor([1.0]))
    assert type(r).__name__ == "pytest_named_max" and r.high.tolist() == [2.0]
    assert type(dk.max(dk.tensor([[1.0]]), 0)).__name__ == "max"  # dk::max keeps its (values, indices)
