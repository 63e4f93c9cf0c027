"""LTC's TrieCache (trie.h/.cpp): reuse IR nodes across identical traced steps, with hit counters."""
import threading
import weakref

from accel import _impl
from accel.lazy import metrics

_ir = _impl.module("_ir")
HASH_SEED, Node, OpKind, device_data = _ir.HASH_SEED, _ir.Node, _ir.OpKind, _ir.device_data
_CONSTANT = OpKind("prim::Constant")

_ids = threading.local()

# identity_arg(node): an argument LTC's CanBeReused compares by identity, or None.  A random op given
# generator= compares its generator as at::Generator's == does (the same generator object, not an equal
# state), so a node traced with another generator is not reused; accel.lazy.tensors sets it (the run-time
# arguments of set_run_arg(identity=True)).
identity_arg = None

# Device-data nodes that live tensors kept as their IR across a mark_step (id(node) -> (node, [weakref to
# tensor])), registered by the executor at mark_step while IR reuse is on.  When a later step's trace
# reuses such a node for other data (DeviceData::SetData), the tensors holding it drop it and keep their
# own data: LTC lets them read the new data instead.
_held = {}


def hold(node, tensor):
    e = _held.get(id(node))
    if e is None:
        _held[id(node)] = (node, [weakref.ref(tensor)])
    else:
        e[1].append(weakref.ref(tensor))


def release_all():
    _held.clear()


def _retarget(node, handle):
    """``node.set_data(handle)``, first detaching the tensors that kept ``node`` for their own data."""
    if node.handle is not handle:
        e = _held.pop(id(node), None)
        if e is not None:
            for ref in e[1]:
                t = ref()
                if t is not None and t._node is node and t._handle is not None:
                    t._node = None
    node.set_data(handle)


def _same_operands(n, probe):
    """Whether cached ``n`` reads the very values ``probe`` reads.  A device-data node's hash is its shape's,
    so an equal hash alone can hand back a node reading another device-data node (one that a tensor kept
    across a mark_step no longer traces through the trie), and with it an older step's data."""
    a, b = n.operands, probe.operands
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.index != y.index:
            return False
        if x.node is not y.node:
            # LTC compares operands by hash; a constant's hash is its value, so two equal constants (slice
            # bounds: prim::Constant, made anew at every trace) are one value here too
            if not (x.node.op is _CONSTANT and y.node.op is _CONSTANT and x.node.hash == y.node.hash):
                return False
    return True


def _next_id():
    n = getattr(_ids, "next", 0)
    _ids.next = n + 1
    return n


class TrieNode:
    """One trie entry: ``unique_id``, ``hit_counter``, the cached ``ir_node`` and ``successors`` (most recent first)."""
    __slots__ = ("unique_id", "hit_counter", "ir_node", "successors")

    def __init__(self, ir_node=None):
        self.unique_id = _next_id()
        self.hit_counter = 0
        self.ir_node = ir_node
        self.successors = []


class TrieCache:
    """The trace-position trie: ``reuse_or_make`` returns a matching successor of ``current`` or inserts a new node."""
    _local = threading.local()

    def __init__(self):
        self.root = TrieNode()
        self.current = self.root

    @classmethod
    def get(cls):
        """The calling thread's TrieCache (LTC's thread_local singleton)."""
        tc = getattr(cls._local, "cache", None)
        if tc is None:
            tc = cls._local.cache = cls()
        return tc

    def _hit(self, i, counter_name=None):
        # counter_name(node): LTC names the counter after the node's C++ class (IrNodeReused_torch::lazy::Mm);
        # by default the op's qualified name stands in for it
        entry = self.current.successors.pop(i)
        self.current.successors.insert(0, entry)
        entry.hit_counter += 1
        n = entry.ir_node
        metrics.Counter(counter_name(n) if counter_name else "IrNodeReused_" + n.op.qualified_name).add(1)
        self.current = entry
        return entry.ir_node

    def lookup(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        """A cached successor node equal to Node(op, operands, ...) by op, outputs and hashes, or None."""
        return self._lookup(Node(op, operands, shapes, num_outputs, hash_seed))

    def _lookup(self, probe, counter_name=None):
        for i, entry in enumerate(self.current.successors):
            n = entry.ir_node
            if (n.op is probe.op and not n.is_device_data and n.num_outputs == probe.num_outputs
                    and n.hash == probe.hash and n.shape_hash == probe.shape_hash
                    and _same_operands(n, probe)
                    and (identity_arg is None or identity_arg(n) is identity_arg(probe))):
                return self._hit(i, counter_name)
        return None

    def insert(self, node):
        """Add ``node`` as the newest successor of ``current`` and make it current (counter TrieForked on a fork)."""
        if not isinstance(node, Node):
            raise TypeError(f"TrieCache.insert needs a Node, got {type(node).__name__}: {node!r}")
        if self.current.successors:
            metrics.Counter("TrieForked").add(1)
        entry = TrieNode(node)
        self.current.successors.insert(0, entry)
        self.current = entry
        return node

    def reuse_or_make(self, op, operands, shapes=(), num_outputs=1, hash_seed=HASH_SEED):
        """ReuseOrMakeNode: the cached equal node, else a new Node inserted into the trie."""
        probe = Node(op, operands, shapes, num_outputs, hash_seed)
        hit = self._lookup(probe)
        return hit if hit is not None else self.insert(probe)

    def reuse_or_make_device_data(self, shape, handle, device=None, counter_name=None):
        """A cached device-data node with an equal shape, given the new handle (DeviceData::SetData), else a new one."""
        dd = OpKind("lazy_tensors::device_data")
        for i, entry in enumerate(self.current.successors):
            n = entry.ir_node
            if n.op is dd and n.is_device_data and n.shapes[0] == shape:
                _retarget(n, handle)
                return self._hit(i, counter_name)
        return self.insert(device_data(shape, handle, device))

    def reset_current(self):
        """Back to the root (LTC does this at every mark_step)."""
        self.current = self.root

    def clear(self):
        """Drop every cached node (ids keep counting, as in LTC)."""
        self.current = self.root
        self.root.successors = []

    def to_dot(self):
        """DumpToDotFile's text: pre-order from the root, ``id[label="op, N hits"]`` and ``a -> b`` lines."""
        out = ["digraph G {\n"]
        stack = [(self.root, None)]
        while stack:
            entry, parent = stack.pop()
            if parent is not None:
                out.append(f"{parent} -> {entry.unique_id}\n")
            if entry.ir_node is not None:
                out.append(f'{entry.unique_id}[label="{entry.ir_node.op.qualified_name}, {entry.hit_counter} hits"]\n')
            stack.extend((s, entry.unique_id) for s in reversed(entry.successors))
        out.append("}\n")
        return "".join(out)

    def dump_to_dot_file(self, path):
        with open(path, "w") as f:
            f.write(self.to_dot())
