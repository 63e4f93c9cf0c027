"""LTC's DumpUtil::ToText / ToDot formats (ir_dump_util.cpp), without the C++ ``NodeType=`` tag."""
import re
import sys

from accel import _impl

_TWINS = ("accel._native._ir", "accel._python._ir")
_TAG = re.compile(r"[a-zA-Z0-9_]+=")
_OPEN, _CLOSE = "([{", ")]}"


def _twin_of(obj):
    # Nodes of either implementation can be dumped: use the module that made them.
    for cls in type(obj).__mro__:
        if cls.__module__ in _TWINS and cls.__name__ in ("Node", "Output"):
            return sys.modules[cls.__module__]
    return None


def _root_nodes(roots):
    """The roots as Nodes, checked by the twin that made them (the selected one when none did), so that
    a bad argument gets the same error here as from post_order or graph_hash."""
    mod = _twin_of(roots)
    if mod is None:
        if hasattr(roots, "__iter__") and not isinstance(roots, (str, bytes)):
            roots = tuple(roots)                    # (an iterator is read once, here)
            mod = _twin_of(roots[0]) if roots else None
        if mod is None:
            mod = _impl.module("_ir")
    return mod, mod._root_nodes(roots)


def node_tags(node):
    """The ``name=value`` attribute tags LTC parses out of ``str(node)`` after the op name."""
    s = str(node)
    op = node.op.qualified_name
    pos = s.find(op)
    if pos < 0:
        return []
    pos += len(op)
    tags = []
    while True:
        if s.startswith(", ", pos):
            pos += 2
        m = _TAG.match(s, pos)
        if m is None:
            return tags
        name = m.group()[:-1]
        start = pos = m.end()
        depth = 0
        while pos < len(s):
            c = s[pos]
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth -= 1
            elif depth == 0 and s.startswith(", ", pos):
                break
            pos += 1
        tags.append((name, s[start:pos]))


def _ids_and_roots(roots):
    mod, nodes = _root_nodes(roots)
    post = mod.post_order(nodes)
    ids = {}
    for i, n in enumerate(post):
        if n in ids:
            raise RuntimeError(str(n))
        ids[n] = i
    root_index = {}
    for i, n in enumerate(nodes):
        root_index[n] = i     # with duplicate roots the last index wins, as in LTC
    return post, ids, root_index


def to_text(roots):
    """DumpUtil::ToText: ``IR {`` then one ``%id = [shapes] op(%operands)[, tags][, ROOT=i]`` line per node."""
    post, ids, root_index = _ids_and_roots(roots)
    lines = ["IR {"]
    for n in post:
        ops = ", ".join(f"%{ids[o.node]}" + (f".{o.index}" if o.node.num_outputs > 1 else "") for o in n.operands)
        line = f"  %{ids[n]} = [{', '.join(str(s) for s in n.shapes)}] {n.op.qualified_name}({ops})"
        for name, value in node_tags(n):
            line += f", {name}={value}"
        if n in root_index:
            line += f", ROOT={root_index[n]}"
        lines.append(line)
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(roots, tags=None, shape_text=str):
    """DumpUtil::ToDot: a graphviz digraph with one labelled node per IR node and one edge per operand.
    ``tags(node)`` gives a node's (name, value) label lines (default: ``node_tags``); ``shape_text(shape)``
    its first shape's label (default: str, the IR layer's names)."""
    post, ids, root_index = _ids_and_roots(roots)
    tags = node_tags if tags is None else tags
    out = ["digraph G {\n"]
    for n in post:
        label = n.op.qualified_name
        if n.shapes:
            label += "\\n" + shape_text(n.shapes[0])
        for name, value in tags(n):
            label += f"\\n{name}=" + (value if len(value) < 64 else value[:64] + "...")
        if n in root_index:
            label += f"\\nROOT={root_index[n]}"
        out.append(f'  node{ids[n]} [label="{label}"]\n')
    for n in reversed(post):
        operands = n.operands
        for i, o in enumerate(operands):
            edge = f"  node{ids[o.node]} -> node{ids[n]}"
            if len(operands) > 1:
                edge += f' [label="i={i}' + (f",o={o.index}" if o.node.num_outputs > 1 else "") + '"]'
            elif o.node.num_outputs > 1:
                edge += f' [label="o={o.index}"]'
            out.append(edge + "\n")
    out.append("}\n")
    return "".join(out)
