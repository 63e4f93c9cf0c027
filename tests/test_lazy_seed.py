"""Seeded Nodes (LTC's per-op hash seeds) on both twins: the seed and hashes a node reports do not depend on
which seed objects earlier nodes of its op were given (both twins remember the last one per OpKind, and the
native twin shares one read-only record among the nodes of an op built with the same seed)."""
import gc
import weakref

import pytest

BIG = 2**100 + 12345


def _seeds(ir):
    """(label, seed object) in a fixed order: reused objects, equal values from distinct objects, the default
    seed, values across the 64-bit boundary and an int subclass."""
    class MyInt(int):
        pass

    big = BIG
    again = int(str(BIG))                    # equal to big, another object
    wide = 2**64
    return [("big", big), ("big", big), ("again", again), ("big", big), ("zero", 0), ("default", ir.HASH_SEED),
            ("zero", 0), ("wide", wide), ("wide2", int(str(2**64))), ("max", 2**128 - 1), ("dd", 101),
            ("sub", MyInt(7)), ("sub", MyInt(7)), ("seven", 7), ("big", big), ("again", again)]


def _build(ir, op, seed):
    s = ir.Shape(6, [2, 3])
    leaf = ir.Node("t::leaf", [], [s])
    n = ir.Node(op, [leaf, None, ir.Output(leaf)], [s], 1, seed)
    bare = ir.Node(op, [], [], 1, seed)
    return n, bare


def _report(ir, hashmod, op):
    out = []
    for label, seed in _seeds(ir):
        n, bare = _build(ir, op, seed)
        assert type(n.hash_seed) is int and n.hash_seed == int(seed), (label, n.hash_seed)
        assert bare.hash_seed == n.hash_seed
        # no operands, no shapes: the hash is the op's hash combined with the seed
        assert bare.hash == bare.shape_hash == hashmod.hash_combine(ir.OpKind(op).hash, int(seed)), label
        out.append((label, n.hash_seed, n.hash, n.shape_hash, bare.hash))
    return out


def test_seeded_nodes_report_seed_and_hash_identically_on_both_twins(both_twins):
    reports = []
    for t in both_twins:
        ir, h = t.mod("_ir"), t.mod("_hash")
        # one op that only ever sees these seeds, and one whose last seed is warmed by other values first
        cold = _report(ir, h, "t::seed_cold")
        for v in (3, BIG + 1, 2**64 + 1):
            ir.Node("t::seed_warm", [], [], 1, v)
        warm = _report(ir, h, "t::seed_warm")
        # the same seed and value built from a fresh op name each time (nothing remembered)
        fresh = [_report(ir, h, f"t::seed_fresh{i}") for i in range(2)]
        assert [r[:2] for r in cold] == [r[:2] for r in warm] == [r[:2] for r in fresh[0]]
        reports.append((cold, warm, fresh))
    assert reports[0] == reports[1]


def test_equal_seeds_give_equal_nodes(ir):
    s = ir.Shape(6, [4])
    a = ir.Node("t::eq", [], [s], 1, BIG)
    b = ir.Node("t::eq", [], [s], 1, int(str(BIG)))
    c = ir.Node("t::eq", [], [s], 1, BIG + 1)
    d = ir.Node("t::eq", [], [s], 1, BIG)
    assert a.hash == b.hash == d.hash != c.hash
    assert a.hash_seed == b.hash_seed == d.hash_seed == BIG and c.hash_seed == BIG + 1


def test_a_bad_seed_leaves_the_remembered_seed_alone(ir):
    s = ir.Shape(6, [4])
    good = ir.Node("t::bad", [], [s], 1, BIG)
    for bad, exc in ((-1, ValueError), (2**128, ValueError), ("x", TypeError), (None, TypeError), (1.0, TypeError)):
        with pytest.raises(exc, match="Node hash_seed"):
            ir.Node("t::bad", [], [s], 1, bad)
        again = ir.Node("t::bad", [], [s], 1, BIG)
        assert again.hash == good.hash and again.hash_seed == BIG


def test_rewiring_one_seeded_node_leaves_its_seed_siblings_alone(ir):
    s = ir.Shape(6, [2])
    leaf = ir.Node("t::leaf", [], [s])
    m = ir.Node("t::multi", [], [s, s], 2)
    a = ir.Node("t::sib", [leaf], [s], 1, BIG)
    b = ir.Node("t::sib", [leaf], [s], 1, BIG)
    a.replace_operand(0, ir.Output(m, 1))
    assert [(o.node, o.index) for o in a.operands] == [(m, 1)]
    assert [(o.node, o.index) for o in b.operands] == [(leaf, 0)]
    assert a.hash_seed == b.hash_seed == BIG
    a.replace_operand(0, leaf)               # back to output 0
    assert [(o.node, o.index) for o in a.operands] == [(leaf, 0)]
    assert a.hash_seed == BIG
    c = ir.Node("t::sib", [ir.Output(m, 1)], [s], 1, BIG)   # multi-output operand with a remembered seed
    assert [(o.node, o.index) for o in c.operands] == [(m, 1)] and c.hash_seed == BIG
    assert [(o.node, o.index) for o in b.operands] == [(leaf, 0)]


def test_device_data_nodes_keep_their_own_handles(ir):
    s = ir.Shape(6, [2])
    plain = ir.Node(ir.DEVICE_DATA_OP, [], [s], 1, ir.DEVICE_DATA_SEED)   # same op and seed, not data
    a = ir.device_data(s, "ha", "dev:0")
    b = ir.device_data(s, "hb")
    a.set_data("hc")
    assert (a.handle, a.device, b.handle, b.device, plain.handle, plain.device) == ("hc", "dev:0", "hb", None,
                                                                                  None, None)
    assert a.hash_seed == b.hash_seed == plain.hash_seed == ir.DEVICE_DATA_SEED
    assert not plain.is_device_data and a.is_device_data


def test_cycles_through_seeded_nodes_are_collected_and_spare_the_siblings(ir):
    s = ir.Shape(6, [1])

    class Ref:
        pass

    class MyNode(ir.Node):
        pass

    keep = ir.Node("t::cyc", [], [s], 1, BIG)
    refs = []
    for _ in range(3):
        m = MyNode("t::cyc", [], [s], 1, BIG)
        m.me = m                                  # a subclass cycle through a seeded node
        h = Ref()
        d = ir.device_data(s, h)
        h.to = ir.Node("t::cyc", [d], [s], 1, BIG)   # d -> h -> seeded node -> d
        refs += [weakref.ref(m), weakref.ref(d)]
        del m, h, d
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    assert keep.hash_seed == BIG and ir.Node("t::cyc", [], [s], 1, BIG).hash == keep.hash


@pytest.mark.parametrize("dynamic", [False, True])
def test_device_data_equals_the_generic_node_it_stands_for(both_twins, dynamic):
    """device_data builds its node without the generic Node path (a traced scalar makes one per op): it
    must equal Node(device_data op, [], [shape], seed 101) in every observable, in both shape modes."""
    seen = []
    for t in both_twins:
        ir = t.mod("_ir")
        prev = ir.set_dynamic_shapes(dynamic)
        try:
            row = []
            for shape in (ir.Shape(6, [4]), ir.Shape(7, [2, 3]), ir.Shape(11, [])):
                d = ir.device_data(shape, ("h", 1), "dev:0")
                g = ir.Node(ir.DEVICE_DATA_OP, [], [shape], 1, ir.DEVICE_DATA_SEED)
                assert (d.hash, d.shape_hash, d.hash_seed, d.num_outputs, d.operands, d.shapes) == \
                       (g.hash, g.shape_hash, g.hash_seed, g.num_outputs, g.operands, g.shapes)
                assert (d.is_device_data, d.handle, d.device) == (True, ("h", 1), "dev:0")
                assert ir.Output(d).hash == ir.Output(g).hash
                row.append((d.hash, d.shape_hash))
            seen.append(row)
        finally:
            ir.set_dynamic_shapes(prev)
    assert seen[0] == seen[1]
