"""Programs: loading, printing, saving, and a Python view of the graph.

A Program owns one C pr_program. The graph view (Program.methods,
Program.delegates) is a snapshot: plain Python objects copied out of the C
structures when asked, so that no Python object ever points into memory a
pass may free; take a new view after the program changed."""
import ctypes
import hashlib
import os
from dataclasses import dataclass, field
from typing import Optional

from . import _lib
from ._lib import libs
from .errors import PipelineError, ProgramError

NODE_KINDS = ("input", "op", "delegate", "getitem", "return")
INPUT_KINDS = ("positional", "user", "parameter", "buffer", "constant")
WRITEBACK_KINDS = (None, "buffer", "input")
SEVERITIES = ("note", "warning", "error")


@dataclass(frozen=True)
class Spec:
    """A tensor's spec (docs/text-format.md): dtype, shape, strides in elements,
    device ("cpu", "cuda:0"), and the memory plan's (arena, offset) or None."""
    dtype: str
    shape: tuple
    strides: tuple
    device: str
    mem: Optional[tuple]
    nbytes: int            # numel * element size
    storage_bytes: int     # what the storage spans, gaps of a strided view included

    def __str__(self):
        dev = "" if self.device == "cpu" else "@" + self.device
        return f"{self.dtype}[{','.join(map(str, self.shape))}]{dev}"


@dataclass(eq=False)
class Node:
    """One node. args holds Node objects (values read) and Python literals;
    users are the nodes that read this one (the return node included)."""
    kind: str                       # input, op, delegate, getitem, return
    name: Optional[str]
    type: object                    # Spec, a tuple of Specs, "int", or None
    op: Optional[str] = None        # the schema's full name, for kind "op"
    delegate: Optional[str] = None  # for kind "delegate"
    index: Optional[int] = None     # for kind "getitem"
    input_kind: Optional[str] = None
    input_name: Optional[str] = None
    line: int = 0                   # source line; 0 when a pass made the node
    args: list = field(default_factory=list)
    users: list = field(default_factory=list)
    writebacks: list = field(default_factory=list)  # return: (kind, target) per arg
    is_copy: Optional[str] = None   # "h2d" or "d2h" for copy ops (schema traits)

    @property
    def spec(self):
        return self.type if isinstance(self.type, Spec) else None

    @property
    def device(self):
        """The device of its value (a tuple's first element's); None when none."""
        if isinstance(self.type, Spec):
            return self.type.device
        if isinstance(self.type, tuple) and self.type:
            return self.type[0].device
        return None

    def __repr__(self):
        what = self.op or (self.delegate and "@" + self.delegate) or self.input_kind or ""
        t = self.type
        t = "(" + ", ".join(map(str, t)) + ")" if isinstance(t, tuple) else t or ""
        return f"<Node {self.kind} %{self.name or '-'} {what} {t}>"


@dataclass(eq=False)
class Graph:
    """A method or a delegate body: its nodes in graph order."""
    name: str
    nodes: list
    is_delegate: bool = False

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self):
        return len(self.nodes)

    def __getitem__(self, name):
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def inputs(self):
        return [n for n in self.nodes if n.kind == "input"]

    @property
    def copies(self):
        return [n for n in self.nodes if n.is_copy]

    @property
    def ret(self):
        return self.nodes[-1] if self.nodes and self.nodes[-1].kind == "return" else None


@dataclass(eq=False)
class Delegate:
    name: str
    specs: dict           # compile specs, in the order written
    body: Graph

    @property
    def target_device(self):
        return self.specs.get("target_device")


# ---- snapshots of the C structures -----------------------------------------

def _spec(s):
    core = libs.core
    rank = s.rank
    mem = (_device(core.pr_device_of(s.mem_arena_id).contents), s.mem_offset) if s.has_mem else None
    return Spec(core.pr_dtype_name(s.dtype).decode(), tuple(s.shape[:rank]),
                tuple(s.shape[rank:2 * rank]), _device(core.pr_device_of(s.device_id).contents), mem,
                core.pr_spec_nbytes(ctypes.byref(s)), core.pr_spec_storage_bytes(ctypes.byref(s)))


def _device(d):
    t = d.type.decode() or "cpu"
    return t if d.index < 0 else f"{t}:{d.index}"


def _type(t):
    if t.kind == 1:
        return _spec(t.tensor)
    if t.kind == 2:
        return tuple(_spec(t.elems[i]) for i in range(t.n_elems))
    return "int" if t.kind == 3 else None


def _arg(a, by_addr):
    k = a.kind
    if k == 0:
        return by_addr[ctypes.addressof(a.u.value.contents)]
    if k == 1:
        return a.u.i
    if k == 2:
        return a.u.f
    if k == 3:
        return a.u.b
    if k == 4:
        return None
    if k == 5:
        return _lib.cstr(a.u.s)
    return [_arg(a.u.items[i], by_addr) for i in range(a.n_items)]


def _node(c):
    kind = NODE_KINDS[c.kind]
    n = Node(kind, _lib.cstr(c.name), _type(c.type), line=c.line)
    of = c.of_kind   # only the member of the node's kind is read
    if kind == "input":
        i = of.input.contents
        n.input_kind = INPUT_KINDS[i.kind]
        n.input_name = _lib.cstr(i.name)
    elif kind == "op" and of.schema:
        s = of.schema.contents
        n.op = _lib.cstr(s.full_name)
        n.is_copy = "h2d" if s.h2d else "d2h" if s.d2h else None
    elif kind == "delegate" and of.delegate:
        n.delegate = _lib.cstr(of.delegate.contents.name)
    elif kind == "getitem":
        n.index = of.index
    return n


def _graph(g, is_delegate):
    cs, nodes, by_addr = [], [], {}
    p = g.first
    while p:
        c = p.contents
        n = _node(c)
        cs.append(c)
        nodes.append(n)
        by_addr[ctypes.addressof(c)] = n
        p = c.next
    for c, n in zip(cs, nodes):
        n.args = [_arg(c.args[i], by_addr) for i in range(c.n_args)]
        n.users = [by_addr[ctypes.addressof(c.uses[i].arg.contents.owner.contents)] for i in range(c.n_uses)]
        wbs = c.of_kind.writebacks if n.kind == "return" else None
        if wbs:
            n.writebacks = [(WRITEBACK_KINDS[wbs[i].kind], _lib.cstr(wbs[i].target))
                            for i in range(c.n_args)]
    return Graph(_lib.cstr(g.name), nodes, is_delegate)


# ---- Program -----------------------------------------------------------------

class Program:
    """A passrun program. Make one with Program.load(path),
    Program.from_text(text), Program.from_bytes(binary) or
    passrun.from_torch(module, args)."""

    def __init__(self, handle, source="<program>"):
        self._h = ctypes.c_void_p(handle)
        self.source = source

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and h.value:
            libs.core.pr_program_free(h)
            self._h = None

    @property
    def handle(self):
        if not self._h or not self._h.value:
            raise ProgramError(f"{self.source}: the program was released")
        return self._h

    # loading
    @classmethod
    def load(cls, path):
        """A .pg or .bin file, told apart by content (ProgramError when bad)."""
        out = ctypes.c_void_p()
        _lib.check(libs.core.pr_program_load_file(os.fsencode(path), ctypes.byref(out)),
                   ProgramError)
        return cls(out.value, str(path))

    @classmethod
    def from_text(cls, text, filename="<text>"):
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out = ctypes.c_void_p()
        _lib.check(libs.core.pr_text_parse(filename.encode(), data, len(data),
                                           ctypes.byref(out)), ProgramError)
        return cls(out.value, filename)

    @classmethod
    def from_bytes(cls, data, filename="<bytes>"):
        """Binary (.bin) or text bytes, told apart by content."""
        data = bytes(data)
        if not libs.core.pr_binary_sniff(data, len(data)):
            return cls.from_text(data, filename)
        out = ctypes.c_void_p()
        _lib.check(libs.core.pr_binary_load(filename.encode(), data, len(data), False,
                                            ctypes.byref(out)), ProgramError)
        return cls(out.value, filename)

    # writing
    def text(self):
        n = ctypes.c_size_t()
        return _lib.take_string(libs.core.pr_text_print(self.handle, ctypes.byref(n)), n.value)

    __str__ = text

    def to_bytes(self):
        """The binary format (lossless)."""
        buf, n = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(libs.core.pr_binary_write(self.handle, ctypes.byref(buf), ctypes.byref(n)),
                   ProgramError)
        return _lib.take_bytes(buf.value, n.value)

    def save(self, path):
        """Text, or binary when path ends in .bin; written atomically."""
        _lib.check(libs.core.pr_program_save_file(self.handle, os.fsencode(path)),
                   PipelineError)

    def copy(self):
        return Program.from_bytes(self.to_bytes(), self.source)

    def __reduce__(self):
        # Pickled as its binary form: sweeps send programs to worker processes.
        return (_from_pickle, (self.to_bytes(), self.source))

    @property
    def hash(self):
        """SHA-256 of the binary form: the same program gives the same hash."""
        return hashlib.sha256(self.to_bytes()).hexdigest()

    def dot(self):
        """The Graphviz picture (--dot) of the program as it is."""
        return _lib.take_string(libs.dot.pr_dot_render(self.handle, None))

    def verify(self):
        """The verifier's and the plan checker's findings, as Diagnostics."""
        from .run import Diags
        with Diags(self.source) as d:
            libs.core.pr_verify(self.handle, d.ref, b"verifier")
            libs.core.pr_plan_check(self.handle, d.ref, b"verifier")
            return d.items()

    # the graph
    def _c(self):
        return ctypes.cast(self.handle, ctypes.POINTER(_lib.Program)).contents

    @property
    def methods(self):
        p = self._c()
        return [_graph(p.methods[i].contents, False) for i in range(p.n_methods)]

    def method(self, name="forward"):
        for g in self.methods:
            if g.name == name:
                return g
        raise KeyError(name)

    @property
    def delegates(self):
        p = self._c()
        out = []
        for i in range(p.n_delegates):
            d = p.delegates[i].contents
            specs = {_lib.cstr(d.specs[k].key): _lib.cstr(d.specs[k].value)
                     for k in range(d.n_specs)}
            out.append(Delegate(_lib.cstr(d.name), specs, _graph(d.body.contents, True)))
        return out

    @property
    def schemas(self):
        p = self._c()
        return [_lib.cstr(p.schemas[i].contents.text) for i in range(p.n_schemas)]

    def run(self, pipeline=None, **kw):
        """passrun.run(self, pipeline, ...): see there."""
        from .run import run
        return run(self, pipeline, **kw)

    def __repr__(self):
        p = self._c()
        return (f"<passrun.Program {self.source}: {p.n_methods} method(s), "
                f"{p.n_delegates} delegate(s)>")


def _from_pickle(data, source):
    return Program.from_bytes(data, source)


def as_program(x):
    """A Program from a Program, a path, or (label, Program)."""
    if isinstance(x, Program):
        return x
    if isinstance(x, (str, os.PathLike)):
        return Program.load(x)
    raise TypeError(f"expected a Program or a path, got {type(x).__name__}")


__all__ = ["Program", "Graph", "Node", "Spec", "Delegate"]
