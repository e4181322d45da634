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
