"""A user's typed code over accel.lazy, checked with mypy --strict by tests/test_types.py (never run)."""
import numpy as np
import numpy.typing as npt

import accel.lazy as lazy
import accel.lazy.nn.functional as F
from accel.lazy import LazyTensor


def step(w: LazyTensor, x: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.float32], bytes, str]:
    t = lazy.tensor(x, dtype=lazy.float32)
    y = F.gelu(t @ w + 1.0).softmax(-1).sum(dim=0)
    values, indices = y.sort(descending=True)
    top = y.max(0).values + values[0] * indices.float()
    parts = lazy.split(top, 1)
    n: int = top.numel() + len(parts) + top.size(0) + top.shape[0] + top.dim()
    assert n > 0 and top.dtype == lazy.float32 and top.device == "lazy:0"
    graph: bytes = lazy.get_graph_hash([top])
    text: str = lazy.get_tensors_text([top])
    lazy.mark_step()
    z = lazy.zeros(3, 4).add_(1.0).clamp(min=0.0)
    z[0] = 2.0
    if bool(z.all()):
        z = z.relu()
    out: npt.NDArray[np.float32] = (z * 2 - 1).numpy().astype(np.float32)
    node = lazy.Node(lazy.OpKind("aten::add"), [], (lazy.Shape(lazy.dtype_to_code(lazy.float32), [2]),))
    assert lazy.graph_size([node]) == 1 and len(lazy.post_order([node])) == 1
    return out, graph, text
