"""Autograd from Python: backward, grad, hooks, no_grad, inference_mode."""

import pytest

import dispatchkit as dk


def test_backward_accumulates_into_leaves():
    x = dk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2, 4, 6]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5, 7, 9]
    x.grad = None
    assert x.grad is None


def test_autograd_grad_and_create_graph():
    x = dk.tensor([2.0], requires_grad=True)
    y = x * x * x
    (g,) = dk.autograd.grad(y.sum(), x, create_graph=True)
    assert g.tolist() == [12.0]
    (gg,) = dk.autograd.grad(g.sum(), x)
    assert gg.tolist() == [12.0]
    z = dk.tensor([1.0], requires_grad=True)
    assert dk.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None


def test_hooks_see_and_replace_gradients():
    x = dk.tensor([1.0, 1.0], requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 2).sum().backward()
    assert seen == [[2, 2]]
    h.remove()
    x.register_hook(lambda g: g * 10)
    x.grad = None
    (x * 2).sum().backward()
    assert seen == [[2, 2]] and x.grad.tolist() == [20, 20]


def test_no_grad_and_enable_grad():
    x = dk.tensor([1.0], requires_grad=True)
    with dk.no_grad():
        y = x * 2
        with dk.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad
    assert dk.is_grad_enabled()

    @dk.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_inference_mode():
    x = dk.tensor([1.0], requires_grad=True)
    with dk.inference_mode():
        assert dk.is_inference_mode_enabled()
        y = x * 2
    assert not dk.is_inference_mode_enabled()
    assert not y.requires_grad


def test_backward_errors_are_runtime_errors():
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward()  # not a scalar, no gradient given


class Exp(dk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class MulConst(dk.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k, x + 0

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        return grad_a * ctx.k + grad_b, None


def test_function_forward_and_backward():
    x = dk.tensor([0.0, 1.0], dtype=dk.float64, requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([1.0, 2.718281828459045])


def test_function_with_several_outputs_and_non_tensor_arguments():
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    a, b = MulConst.apply(x, 3.0)
    (a.sum() + b.sum() * 0).backward()  # b's gradient arrives as zeros
    assert x.grad.tolist() == [3.0, 3.0]
    with dk.no_grad():
        c, _ = MulConst.apply(x, 2.0)
    assert not c.requires_grad


def test_function_backward_with_the_wrong_number_of_gradients():
    class Bad(dk.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = dk.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(x, x).sum().backward()


def test_function_exception_in_backward_keeps_its_type():
    class Fails(dk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ZeroDivisionError("in backward")

    x = dk.ones(1, requires_grad=True)
    with pytest.raises(ZeroDivisionError, match="in backward"):
        Fails.apply(x).sum().backward()


def test_function_gradient_matches_torch():
    torch = pytest.importorskip("torch")

    class TorchExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    values = [[0.5, -1.0], [2.0, 0.25]]
    x = dk.tensor(values, dtype=dk.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (Exp.apply(x) * x).sum().backward()
    (TorchExp.apply(tx) * tx).sum().backward()
    assert sum(x.grad.tolist(), []) == pytest.approx(sum(tx.grad.tolist(), []))
