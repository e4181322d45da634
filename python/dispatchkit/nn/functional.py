"""dispatchkit.nn.functional: the neural-network operators (``python_module: nn`` in the
YAML, bound in ``dispatchkit._C._nn``) and the activations of the top-level namespace, as in
``torch.nn.functional``."""

from dispatchkit import _C

for _name in dir(_C._nn):
    if not _name.startswith("__"):
        globals()[_name] = getattr(_C._nn, _name)

for _name in ("relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax", "dropout", "layer_norm", "linear",
              "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "embedding", "mse_loss", "nll_loss"):
    if hasattr(_C, _name) and _name not in globals():
        globals()[_name] = getattr(_C, _name)

del _name
