"""A user's typed code over accel.cuda, checked with mypy --strict by tests/test_types.py (never run)."""
import numpy as np
import numpy.typing as npt

import accel.cuda as cuda


def step(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    s = cuda.Stream(device=0, priority=-1)
    with cuda.stream(s), cuda.device(0):
        a = cuda.to_device(x)
        b = cuda.empty_like(a)
        b.copy_from(a)
        buf = cuda.alloc(a.nbytes, stream=s)
        buf.copy_from(b)
        done = s.record_event(cuda.Event(enable_timing=True))
        cuda.current_stream().wait_event(done)
        out: npt.NDArray[np.float32] = b.copy_to_host().astype(np.float32)
        buf.free()
    props = cuda.get_device_properties(0)
    major, minor = cuda.get_device_capability()
    free, total = cuda.mem_get_info()
    assert props.multi_processor_count > 0 and major * 10 + minor > 0 and free <= total
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        pass
    g.replay()
    return out


def report() -> str:
    peak: int = cuda.max_memory_allocated()
    return f"{cuda.current_device()} {cuda.memory_summary()} {peak} {cuda.is_current_stream_capturing()}"
