"""partition.py: which nodes go into which delegate.

A rule is a predicate on an op's full name ("aten::linear"). Two modes:
  - "per-op": every matching node is its own delegate (ExecuTorch's test
    partitioner does this: the worst case for copies between delegates);
  - "grouped": matching nodes that are connected share a delegate, built
    greedily in graph order. A node joins the group of one of its inputs
    when that creates no cycle between units: none of its inputs outside the
    group may depend on the group. View ops may join a group but never start
    one; a group left with no compute op goes back to the host.
Nodes that write an argument in place (mutations, custom mutable ops) always
stay on the host. Dependencies include the ordering edges of reinplaced
mutations (a reader of a buffer's old value runs before the write).
"""


def partition(nodes, deps, name_of, matches, is_view, writes, mode):
    """nodes: the call nodes in graph order; deps[n]: the nodes n depends on
    (data and ordering); name_of(n): the op's full name. Returns a list of
    groups (lists of nodes, in graph order)."""
    if mode not in ("per-op", "grouped"):
        raise ValueError(f"torch_export: unknown partition mode {mode!r} (per-op or grouped)")
    group_of = {}           # node -> group index
    reach = {}              # node -> groups its inputs' chains pass through
    greach = []             # group -> union of its members' reach
    groups = []

    def depends_on(e, g):
        seen, todo = set(), set(reach.get(e, ()))
        if e in group_of:
            todo.add(group_of[e])
        while todo:
            h = todo.pop()
            if h == g:
                return True
            if h not in seen:
                seen.add(h)
                todo |= greach[h]
        return False

    for n in nodes:
        r = set()
        for d in deps[n]:
            r |= reach.get(d, set())
            if d in group_of:
                r.add(group_of[d])
        reach[n] = r
        name = name_of(n)
        eligible = not writes(n) and (matches(name) or (mode == "grouped" and is_view(name)))
        if eligible and mode == "grouped":
            for d in deps[n]:
                g = group_of.get(d)
                if g is not None and all(group_of.get(e) == g or not depends_on(e, g)
                                         for e in deps[n]):
                    group_of[n] = g
                    groups[g].append(n)
                    greach[g] |= r - {g}
                    break
        if eligible and n not in group_of and matches(name):
            group_of[n] = len(groups)
            groups.append([n])
            greach.append(set(r))
    return [g for g in groups if any(matches(name_of(n)) and not is_view(name_of(n)) for n in g)]


def schedule(nodes, deps, groups):
    """Orders units (a group, or a lone node) so that every unit comes after
    what it depends on, keeping graph order where it can (Kahn's algorithm,
    smallest first position first). Returns a list of ("group", i) or
    ("node", n)."""
    import heapq
    pos = {n: i for i, n in enumerate(nodes)}
    unit_of = {}
    for gi, g in enumerate(groups):
        for n in g:
            unit_of[n] = ("group", gi)
    for n in nodes:
        unit_of.setdefault(n, ("node", n))
    first = {}
    preds = {}
    for n in nodes:
        u = unit_of[n]
        first[u] = min(first.get(u, pos[n]), pos[n])
        ps = preds.setdefault(u, set())
        for d in deps[n]:
            if d in unit_of and unit_of[d] != u:
                ps.add(unit_of[d])
    succs = {u: [] for u in preds}
    for u, ps in preds.items():
        for p in ps:
            succs[p].append(u)
    indeg = {u: len(ps) for u, ps in preds.items()}
    heap = [(first[u], id(u), u) for u in preds if indeg[u] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, _, u = heapq.heappop(heap)
        order.append(u)
        for s in succs[u]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (first[s], id(s), s))
    if len(order) != len(preds):
        raise RuntimeError("torch_export: the partition has a cycle between delegates (a bug)")
    return order
