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


class FunctionCtx:
    """What ``forward`` and ``backward`` of a Function share (PyTorch's ``ctx``)."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = set()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        """When on (the default), a gradient that does not arrive is given as zeros."""
        self.materialize_grads = value


class Function:
    """An operation with a Python forward and backward, recorded by autograd (PyTorch's
    ``torch.autograd.Function``)::

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

        Exp.apply(x)

    ``forward`` runs with grad mode off; ``backward`` returns one gradient per argument of
    ``forward`` (None for those that need none) and runs in the backward pass, on whichever
    thread runs it, with the GIL.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward")

    @classmethod
    def apply(cls, *args):
        from dispatchkit import no_grad
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        with no_grad():
            outputs = cls.forward(ctx, *args)
            single = not isinstance(outputs, tuple)
            outputs = (outputs,) if single else tuple(outputs)
            # An input returned as it is gets a view of its own, so that the history set below is
            # the output's and not the input's.
            input_ids = {id(a) for a in args if isinstance(a, _C.Tensor)}
            outputs = tuple(_C.view(o, list(o.shape)) if isinstance(o, _C.Tensor) and id(o) in input_ids else o
                            for o in outputs)
        positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        differentiable = [o for o in outputs if isinstance(o, _C.Tensor) and id(o) not in ctx._non_differentiable
                          and o.dtype.is_floating_point]
        meta = [(tuple(o.shape), o.dtype, o.device) for o in differentiable]
        name = cls.__name__ + "Backward"

        def backward(*grads):
            if ctx.materialize_grads:
                grads = tuple(_C.zeros(list(shape), dtype=dtype, device=device) if g is None else g
                              for g, (shape, dtype, device) in zip(grads, meta))
            result = cls.backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(result)})")
            return tuple(result[i] for i in positions)

        _C._function_record(backward, name, [args[i] for i in positions], differentiable)
        return outputs[0] if single else outputs
