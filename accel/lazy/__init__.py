"""accel.lazy: PyTorch Lazy Tensor Core (LTC) without torch: the IR (hashing, post-order, graph hash,
bit-exact), and lazy tensors on it (``tensor(ndarray)``, torch's op names, ``mark_step``) traced node for
node as LTC's TorchScript backend and run by a numpy backend through the computation cache.

Everything here runs on the implementation ``accel._impl`` selected (Cython or pure Python); both give
identical results.  See shared/reference/ltc_ir.md for the algorithms reproduced.  Note that this module
defines torch's names ``bool``, ``abs``, ``sum``, ``pow``, ``all``, ``any``, ``min``, ``max`` (dtype and ops)
over the builtins.  The ops are declared once each in accel.lazy.ops (see accel.lazy._optable).
"""
import contextlib

import numpy as _np

from accel import _impl

_ir = _impl.module("_ir")
_hash = _impl.module("_hash")

HASH_SEED = _ir.HASH_SEED
NULL_OPT = _hash.NULL_OPT
DEVICE_DATA_SEED = _ir.DEVICE_DATA_SEED
DEVICE_DATA_OP = _ir.DEVICE_DATA_OP
NOT_SUPPORTED_OP = _ir.NOT_SUPPORTED_OP
EMITTING = _ir.EMITTING
EMITTED = _ir.EMITTED
MAX_OUTPUTS = _ir.MAX_OUTPUTS

OpKind = _ir.OpKind
Shape = _ir.Shape
Node = _ir.Node
Output = _ir.Output
EmissionMap = _ir.EmissionMap
device_data = _ir.device_data
post_order = _ir.post_order
graph_size = _ir.graph_size
parameter_sequence = _ir.parameter_sequence
graph_hash = _ir.graph_hash
scalar_type_name = _ir.scalar_type_name
set_dynamic_shapes = _ir.set_dynamic_shapes
dynamic_shapes_enabled = _ir.dynamic_shapes_enabled

data_hash = _hash.data_hash
string_hash = _hash.string_hash
hash_combine = _hash.hash_combine
std_hash_combine = _hash.std_hash_combine
hash_reduce = _hash.hash_reduce
std_data_hash = _hash.std_data_hash
hash_to_string = _hash.hash_to_string
hash_scalar = _hash.hash_scalar
hash_value = _hash.hash_value
container_hash = _hash.container_hash
mhash = _hash.mhash
mhash_hashes = _hash.mhash_hashes
hash_bool_vector = _hash.hash_bool_vector

from accel.lazy import metrics  # noqa: E402
from accel.lazy.cache import ComputationCache, DataCache  # noqa: E402
from accel.lazy.dump import to_dot, to_text  # noqa: E402
from accel.lazy.trie import TrieCache  # noqa: E402


@contextlib.contextmanager
def dynamic_shapes(enabled=True):
    """Within the block, nodes are built in LTC dynamic-shape mode (dag hashes without sizes)."""
    prev = set_dynamic_shapes(enabled)
    try:
        yield
    finally:
        set_dynamic_shapes(prev)


from accel.lazy._dtypes import code_to_dtype, dtype_to_code  # noqa: E402


def shape_of(array):
    """Shape(dtype code, sizes) of a numpy array."""
    a = _np.asarray(array)
    return Shape(dtype_to_code(a.dtype), a.shape)


__all__ = [
    "HASH_SEED", "NULL_OPT", "DEVICE_DATA_SEED", "DEVICE_DATA_OP", "NOT_SUPPORTED_OP", "EMITTING", "EMITTED",
    "MAX_OUTPUTS",
    "OpKind", "Shape", "Node", "Output", "EmissionMap", "device_data", "post_order", "graph_size",
    "parameter_sequence", "graph_hash", "scalar_type_name", "set_dynamic_shapes", "dynamic_shapes_enabled",
    "dynamic_shapes", "data_hash", "string_hash", "hash_combine", "std_hash_combine", "hash_reduce",
    "std_data_hash", "hash_to_string", "hash_scalar", "hash_value", "hash_bool_vector", "container_hash", "mhash",
    "mhash_hashes",
    "dtype_to_code", "code_to_dtype", "shape_of", "to_text", "to_dot", "ComputationCache", "DataCache",
    "TrieCache", "metrics",
]

# ---- lazy tensors (accel.lazy.tensors / executor / backend) ----
from accel.lazy import _dtypes as _D  # noqa: E402
from accel.lazy.tensors import LazyTensor, tensor, force_fallback, get_force_fallback  # noqa: E402
from accel.lazy.executor import (  # noqa: E402
    get_tensors_text, get_tensors_dot, get_graph_hash, mark_step, sync_multi, wait_device_ops, get_tensor_id,
    get_latest_computation_graph, set_backend, computation_cache, run_cached_graph)
from accel.lazy.functions import *  # noqa: E402,F401,F403
from accel.lazy import functions as _functions  # noqa: E402
from accel.lazy.tensors import set_reuse_ir, get_reuse_ir  # noqa: E402
from accel.lazy import nn  # noqa: E402
from accel.lazy import linalg  # noqa: E402

float16, float32, float64 = _D.CODE_TO_NP[5], _D.CODE_TO_NP[6], _D.CODE_TO_NP[7]
uint8, int8, int16, int32, int64 = (_D.CODE_TO_NP[c] for c in (0, 1, 2, 3, 4))
bfloat16 = _D.bfloat16
bool = _D.CODE_TO_NP[11]  # noqa: A001 (torch's name; the builtin is not used below this line)

__all__ += ["LazyTensor", "tensor", "force_fallback", "get_force_fallback", "get_tensors_text", "get_tensors_dot",
            "get_graph_hash", "mark_step", "sync_multi", "wait_device_ops", "get_tensor_id",
            "get_latest_computation_graph", "set_backend", "computation_cache", "run_cached_graph", "set_reuse_ir",
            "get_reuse_ir", "nn", "linalg",
            "float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"] + _functions.__all__
