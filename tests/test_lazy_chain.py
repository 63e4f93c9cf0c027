"""Deep graphs: a 10-million-node chain builds, traverses, hashes and is freed without a crash or RecursionError."""
import pytest

CHAIN = """
import sys, gc
from accel.{pkg} import _ir as ir
N = {n}
s = ir.Shape(6, [2])
shapes = (s,)
o = ir.Output(ir.device_data(s, "x"))
k = ir.OpKind("aten::neg")
for i in range(N):
    o = ir.Output(ir.Node(k, (o,), shapes))
assert ir.graph_size([o]) == N + 1
po = ir.post_order([o])
assert len(po) == N + 1 and po[0].is_device_data and po[-1] is o.node
del po
em = ir.EmissionMap()
assert len(ir.post_order(o, em)) == N + 1 and ir.post_order(o, em) == [] and len(em) == N + 1
assert ir.parameter_sequence([o]) == [0]
print(ir.graph_hash([o]).hex())
del em
del o                  # the whole chain is freed here, iteratively
gc.collect()
print("freed")
"""


def _run(subprocess_python, pkg, n, timeout):
    r = subprocess_python(CHAIN.format(pkg=pkg, n=n), timeout=timeout)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout={r.stdout}\nstderr={r.stderr[-3000:]}"
    digest, freed = r.stdout.split()
    assert freed == "freed" and len(digest) == 32
    return digest


def test_ten_million_node_chain_native(subprocess_python, both_twins):
    _run(subprocess_python, "_native", 10_000_000, timeout=600)


def test_million_node_chain_python(subprocess_python):
    # The pure-Python twin handles 1e7 too (measured: ~72 s to build, ~105 s in all, 4 GB) but that is too
    # slow for the suite, so it runs 1e6 here; the native twin runs the full 1e7 above.
    _run(subprocess_python, "_python", 1_000_000, timeout=300)


def test_deep_chain_hash_identical(both_twins):
    digests = []
    for t in both_twins:
        ir = t.mod("_ir")
        s = ir.Shape(6, [2])
        o = ir.Output(ir.device_data(s, 0))
        for i in range(200_000):
            o = ir.Output(ir.Node("aten::add", [o, None], [s], 1, i))
        digests.append((ir.graph_hash([o]), o.hash))
    assert digests[0] == digests[1]


@pytest.mark.parametrize("depth", [100_000])
def test_wide_and_deep_teardown(twin, depth):
    # a chain of multi-operand nodes that share every earlier output is freed without recursion
    ir = twin.mod("_ir")
    s = ir.Shape(6, [])
    outs = [ir.Output(ir.device_data(s, 0))]
    for i in range(depth):
        outs.append(ir.Output(ir.Node("aten::mul", [outs[-1], outs[i // 2], outs[-1]], [s])))
    root = outs[-1]
    del outs
    assert ir.graph_size(root) == depth + 1
    del root
