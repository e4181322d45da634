"""dispatchkit.nn.functional: the neural-network operators (``python_module: nn`` in the
YAML, bound in ``dispatchkit._C._nn``) and the activations of the top-level namespace, with
``torch.nn.functional``'s signatures where they differ from the operator's schema: losses take
``reduction`` as a string, ``embedding`` takes ``(input, weight)``, ``batch_norm`` takes the
running statistics second, ``dropout`` and ``softmax`` have defaults. The operators themselves
(``dispatchkit.batch_norm``, ``dispatchkit._C._nn.mse_loss``, ...) keep their schemas, as
``torch.batch_norm`` and ``torch._C._nn.mse_loss`` do."""

import math
import warnings

from dispatchkit import _C

for _name in dir(_C._nn):
    if not _name.startswith("__"):
        globals()[_name] = getattr(_C._nn, _name)

for _name in ("gelu", "sigmoid", "tanh", "linear", "conv1d", "conv2d"):
    if hasattr(_C, _name) and _name not in globals():
        globals()[_name] = getattr(_C, _name)

del _name

# The schema's `int reduction` (PyTorch's at::Reduction values).
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction, size_average=None, reduce=None):
    """The operator's reduction number; size_average and reduce are the deprecated spellings,
    combined as PyTorch does (either given overrides `reduction`)."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead."
                      .format(_legacy_reduction(size_average, reduce)))
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError("{} is not a valid value for reduction".format(reduction))
    return _REDUCTIONS[reduction]


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C._nn.mse_loss(input, target, _reduction(reduction, size_average, reduce))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    code = _reduction(reduction, size_average, reduce)
    if input.dim() <= 2:
        return _C._nn.nll_loss(input, target, weight, code, ignore_index)
    # [N, C, d1, ...] (PyTorch's nll_loss_nd): the class dim moved last and every position made a
    # row of the 2-d operator; the weighted mean over all positions is the same.
    expected = (input.size(0),) + tuple(input.size()[2:])
    if tuple(target.size()) != expected:
        raise ValueError("Expected target size {}, got {}".format(list(expected), list(target.size())))
    order = [0] + list(range(2, input.dim())) + [1]
    rows = input.permute(order).reshape(-1, input.size(1))
    loss = _C._nn.nll_loss(rows, target.reshape(-1), weight, code, ignore_index)
    return loss.reshape(expected) if code == _REDUCTIONS["none"] else loss


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return _C._nn.cross_entropy_loss(input, target, weight, _reduction(reduction, size_average, reduce), ignore_index,
                                     label_smoothing)


def _softmax_dim(ndim):
    warnings.warn("Implicit dimension choice for softmax has been deprecated. "
                  "Change the call to include dim=X as an argument.")
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype=dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
    result = _C.dropout(input, p, training)
    return input.copy_(result) if inplace else result


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _C.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training:
        size = input.size()
        values = size[0] * math.prod(size[2:])
        if values == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input size {}".format(size))
    return _C.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx > 0:
        if padding_idx >= weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = weight.size(0) + padding_idx
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm (renormalizing rows in place) is not supported by dispatchkit")
    return _C.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = [] if stride is None else stride
    if return_indices:
        return _C._nn.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _C.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _C._nn.avg_pool2d(input, kernel_size, [] if stride is None else stride, padding, ceil_mode,
                             count_include_pad, divisor_override)


def relu(input, inplace=False):
    return _C.relu_(input) if inplace else _C.relu(input)
