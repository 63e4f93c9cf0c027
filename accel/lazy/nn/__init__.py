"""``accel.lazy.nn``: the ``torch.nn`` names lazy tensor code uses (``accel.lazy.nn.functional``)."""
from accel.lazy.nn import functional  # noqa: F401
