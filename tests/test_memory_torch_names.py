"""torch.cuda.memory's remaining names on accel.cuda: the nested stats and the deprecated aliases."""
import os
import warnings

import pytest

if os.environ.get("ACCEL_CUDART") != "emu":
    pytest.skip("needs the emulated runtime", allow_module_level=True)

import accel.cuda as cuda  # noqa: E402


def test_memory_stats_as_nested_dict_mirrors_the_flat_keys():
    buf = cuda.alloc(4096, device=0)
    try:
        flat = cuda.memory_stats(0)
        nested = cuda.memory_stats_as_nested_dict(0)
        for key, value in flat.items():
            node = nested
            for part in key.split("."):
                node = node[part]
            assert node == value, key
        assert nested["allocated_bytes"]["all"]["current"] >= 4096
    finally:
        buf.free()


@pytest.mark.parametrize("old, new, text", [
    ("memory_cached", "memory_reserved", "torch.cuda.memory_cached has been renamed to torch.cuda.memory_reserved"),
    ("max_memory_cached", "max_memory_reserved",
     "torch.cuda.max_memory_cached has been renamed to torch.cuda.max_memory_reserved"),
])
def test_deprecated_reserved_aliases(old, new, text):
    with pytest.warns(FutureWarning, match=text):
        got = getattr(cuda, old)(0)
    assert got == getattr(cuda, new)(0)


@pytest.mark.parametrize("old", ["reset_max_memory_allocated", "reset_max_memory_cached"])
def test_deprecated_reset_aliases_reset_the_peaks(old):
    big = cuda.alloc(1 << 20, device=0)
    big.free()
    assert cuda.max_memory_allocated(0) >= 1 << 20
    with pytest.warns(FutureWarning, match=f"torch.cuda.{old} now calls torch.cuda.reset_peak_memory_stats"):
        getattr(cuda, old)(0)
    assert cuda.max_memory_allocated(0) == cuda.memory_allocated(0)
