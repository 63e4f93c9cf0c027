"""Node slot reuse under churn: after many nodes are freed in a scattered order (the native twin hands
their slots out again lowest first, through a multi-level bitmap), graphs built into the holes still
traverse and hash exactly like the python twin's."""
import random


def _graph(ir, n, seed, handles=50, width=4):
    """A random DAG (every kind of operand count, repeats, shared device data); returns its last Output."""
    rnd = random.Random(seed)
    s = ir.Shape(6, [2])
    outs = [ir.Output(ir.device_data(s, 0))]
    for i in range(1, n):
        if rnd.random() < 0.15 and i < n - 1:
            outs.append(ir.Output(ir.device_data(s, rnd.randrange(handles))))
            continue
        k = rnd.randrange(width + 1)
        ops = [outs[-1]] + [outs[rnd.randrange(len(outs))] for _ in range(k)]
        outs.append(ir.Output(ir.Node(f"aten::f{i}", ops, [s])))
    return outs[-1]


def _observe(ir, root):
    po = ir.post_order([root])
    index = {id(n): i for i, n in enumerate(po)}
    return ([index[id(o.node)] for n in po for o in n.operands], ir.graph_size(root),
            ir.parameter_sequence(root), ir.graph_hash(root))


def test_graphs_built_into_scattered_holes(both_twins):
    nat, py = (t.mod("_ir") for t in both_twins)
    rnd = random.Random(7)
    # Enough live nodes that the free-slot bitmap needs three levels (64 ** 3 > 300_000 > 64 ** 2).
    pop = [nat.Node("test::leaf", ()) for _ in range(300_000)]
    keep = [_graph(m, 300, 5) for m in (nat, py)]
    ref = _observe(py, keep[1])
    assert _observe(nat, keep[0]) == ref
    for frac in (0.01, 0.3, 0.9):
        order = list(range(len(pop)))
        rnd.shuffle(order)
        drop = set(order[: int(len(pop) * frac)])
        pop = [n for i, n in enumerate(pop) if i not in drop]
        for seed in range(2):
            g = [_graph(m, 1500, seed) for m in (nat, py)]
            assert _observe(nat, g[0]) == _observe(py, g[1])
            # alternate frees and allocations, low and high, around the live graph
            for i in range(0, len(pop), max(1, len(pop) // 50)):
                pop[i] = nat.Node("test::leaf", ())
            assert _observe(nat, g[0]) == _observe(py, g[1])
            del g
        assert _observe(nat, keep[0]) == ref
    del pop
    g = [_graph(m, 3000, 11) for m in (nat, py)]
    assert _observe(nat, g[0]) == _observe(py, g[1])
    assert _observe(nat, keep[0]) == ref
