"""dispatchkit.autograd: gradients of outputs with respect to inputs."""

from dispatchkit import _C


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of ``outputs`` with respect to each of ``inputs`` (PyTorch's
    ``torch.autograd.grad``): a tuple with one entry per input, None for an unused input when
    ``allow_unused``."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} grad_outputs "
                           f"and {len(outputs)} outputs")
    return _C._autograd_grad(list(outputs), list(inputs), list(grad_outputs), retain_graph, create_graph,
                             allow_unused)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of ``tensors`` into the ``.grad`` of the leaves of their graph."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors) or (None,) * len(tensors)
    for t, g in zip(tensors, grad_tensors):
        t.backward(g, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)
