"""``torch.nn.functional`` forms of the lazy ops (``import accel.lazy.nn.functional as F``): the
activations, softmax / log_softmax, embedding, and what the op table declares for this namespace."""
from accel.lazy import _optable
from accel.lazy import functions as _functions  # noqa: F401  (fills the op table)

_NAMES = ("relu", "gelu", "silu", "softmax", "log_softmax", "embedding", "sigmoid", "tanh", "leaky_relu", "softplus",
          "elu", "hardtanh", "mse_loss", "dropout", "linear",
          "layer_norm", "rms_norm", "group_norm", "batch_norm", "nll_loss", "cross_entropy", "one_hot")


def _export():
    g = globals()
    for name in _NAMES:
        f = _optable.NN_FUNCTIONAL.get(name) or _optable.FUNCTIONS.get(name)
        if f is None:
            raise RuntimeError(f"accel.lazy.nn.functional: {name} is not declared in the op table")
        g[name] = f
    return list(_NAMES)


__all__ = _export()
