"""The numpy program a first (uncached) mark_step compiles: its size is most of that step's cost (Python's
compile() of the generated source, issue 22), so each parameter is read once however many device-data nodes
of the graph (one per use, as LTC records scalars) refer to it."""
import numpy as np

import accel.lazy as L


def test_each_parameter_is_read_once():
    x = L.tensor(np.ones(4, np.float32))
    L.mark_step()
    y = x
    for _ in range(5):
        y = y + 1.0                  # 5 adds: 10 scalar device-data nodes over 2 cached parameters
    L.mark_step()
    src = L.get_latest_computation_graph()
    reads = [ln.split("=", 1)[1].strip() for ln in src.splitlines() if "= P[" in ln]
    assert len(reads) == len(set(reads)) == 3, src
    assert np.array_equal(y.numpy(), np.full(4, 6, np.float32))
