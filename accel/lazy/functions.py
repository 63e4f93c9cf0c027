"""Module-level functions of the lazy tensor ops (torch.exp, torch.matmul, ...), as torch names them."""
from accel.lazy.ops import bmm, cat, matmul, mm  # noqa: F401
from accel.lazy.tensors import ALL_DIMS, LazyTensor


def _input(x, name):
    if type(x) is not LazyTensor:
        raise TypeError(f"{name}(): argument 'input' must be a lazy tensor, got {type(x).__name__}: {x!r}")
    return x


def add(input, other, alpha=1):
    return _input(input, "add").add(other, alpha=alpha)


def sub(input, other, alpha=1):
    return _input(input, "sub").sub(other, alpha=alpha)


def mul(input, other):
    return _input(input, "mul").mul(other)


def div(input, other):
    return _input(input, "div").div(other)


def pow(input, exponent):
    if type(input) is not LazyTensor and type(exponent) is LazyTensor:
        return exponent.__rpow__(input)
    return _input(input, "pow").pow(exponent)


def maximum(input, other):
    return _input(input, "maximum").maximum(other)


def minimum(input, other):
    return _input(input, "minimum").minimum(other)


def _compare(name):
    def f(input, other):
        return getattr(_input(input, name), name)(other)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name} on a lazy tensor (a Bool tensor)."
    return f


eq = _compare("eq")
ne = _compare("ne")
lt = _compare("lt")
le = _compare("le")
gt = _compare("gt")
ge = _compare("ge")


def _unary(name):
    def f(input):
        return getattr(_input(input, name), name)()
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name} on a lazy tensor."
    return f


neg = _unary("neg")
abs = _unary("abs")
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
reciprocal = _unary("reciprocal")
t = _unary("t")


def sum(input, dim=ALL_DIMS, keepdim=False):
    return _input(input, "sum").sum(dim, keepdim)


def mean(input, dim=ALL_DIMS, keepdim=False):
    return _input(input, "mean").mean(dim, keepdim)


def amax(input, dim=(), keepdim=False):
    return _input(input, "amax").amax(dim, keepdim)


def reshape(input, shape):
    return _input(input, "reshape").reshape(shape)


def transpose(input, dim0, dim1):
    return _input(input, "transpose").transpose(dim0, dim1)


def permute(input, dims):
    return _input(input, "permute").permute(dims)


def unsqueeze(input, dim):
    return _input(input, "unsqueeze").unsqueeze(dim)


def squeeze(input, dim=None):
    return _input(input, "squeeze").squeeze(dim)


def softmax(input, dim):
    return _input(input, "softmax").softmax(dim)


def log_softmax(input, dim):
    return _input(input, "log_softmax").log_softmax(dim)


def clamp(input, min=None, max=None):
    return _input(input, "clamp").clamp(min, max)


__all__ = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "matmul", "mm", "bmm", "neg", "abs", "exp",
           "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "reciprocal", "sum", "mean", "amax",
           "reshape", "t", "transpose", "permute", "unsqueeze", "squeeze", "softmax", "log_softmax", "clamp", "cat",
           "eq", "ne", "lt", "le", "gt", "ge"]
