#!/usr/bin/env python3
"""Generates the malformed binary corpus in this folder.

This is a second, independent writer of the binary format, written from
docs/binary-format.md alone. It builds one valid program (base.valid, whose
text is base.valid.txt; test_malformed_bin.c checks that it loads and prints
exactly that text) and derives each bad file from it, either by building a
variant (a forward reference, deep nesting, a NUL in a string, ...) or by patching
one field at an offset the builder recorded. Each NAME.bin has a sidecar
NAME.expect: every non-empty line of it must appear in the loader's error
message (the second line, when present, is the byte offset of the bad field).

Run it from anywhere: python3 tests/malformed/bin/gen.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

MAGIC = b"PASSRUN\0"
VERSION = 1
BYTE_ORDER = 0x0A0B0C0D
HEADER = 64
ENTRY = 24
ALIGN = 64
SCHEMAS, BLOBS, DELEGATES, METHODS, DATA = 1, 2, 3, 4, 5

F32 = 0
INPUT, OP, DELEGATE, GETITEM, RETURN = 0, 1, 2, 3, 4
POSITIONAL, USER, PARAMETER, BUFFER, CONSTANT = 0, 1, 2, 3, 4
D_NONE, D_ZEROS, D_BLOB = 0, 1, 7
A_VALUE, A_INT, A_FLOAT, A_BOOL, A_NONE, A_STRING, A_LIST = range(7)
T_NONE, T_TENSOR, T_TUPLE, T_INT = range(4)
WB_NONE, WB_BUFFER = 0, 1


class Buf:
    """A growable little-endian byte buffer that remembers named offsets."""

    def __init__(self):
        self.b = bytearray()
        self.marks = {"start": 0}

    def mark(self, name):
        self.marks.setdefault(name, len(self.b))

    def u8(self, v): self.b += struct.pack("<B", v)
    def u32(self, v): self.b += struct.pack("<I", v)
    def i32(self, v): self.b += struct.pack("<i", v)
    def u64(self, v): self.b += struct.pack("<Q", v)
    def i64(self, v): self.b += struct.pack("<q", v)
    def f64(self, v): self.b += struct.pack("<d", v)

    def str(self, s):
        raw = s if isinstance(s, bytes) else s.encode()
        self.u32(len(raw))
        self.b += raw

    def ostr(self, s):
        if s is None:
            self.u32(0xFFFFFFFF)
        else:
            self.str(s)


def device(b, typ="cpu", index=-1):
    b.u8(len(typ))
    b.b += typ.encode()
    b.i32(index)


def spec(b, shape, strides=None, dtype=F32, rank=None):
    if strides is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
    b.mark("spec")
    b.u8(dtype)
    b.u8(len(shape) if rank is None else rank)
    b.u8(0)      # flags: no mem
    b.u8(0)      # reserved
    b.mark("shape")
    for d in shape:
        b.i64(d)
    for s in strides:
        b.i64(s)
    device(b)


def tensor(b, shape=(2,), **kw):
    b.u8(T_TENSOR)
    spec(b, list(shape), **kw)


def node_head(b, kind, name, ty=None):
    b.u8(kind)
    b.ostr(name)
    if ty is None:
        tensor(b)
    else:
        ty(b)


def args(b, items):
    """items: ("v", index) | ("i", int) | ("list", [items]) | ("s", bytes) | ("b", n)"""
    b.mark("args")
    b.u32(len(items))
    for kind, v in items:
        if kind == "v":
            b.u8(A_VALUE)
            b.mark("value_ref")
            b.u64(v)
        elif kind == "i":
            b.u8(A_INT)
            b.i64(v)
        elif kind == "b":
            b.u8(A_BOOL)
            b.mark("bool")
            b.u8(v)
        elif kind == "s":
            b.u8(A_STRING)
            b.str(v)
        elif kind == "list":
            b.u8(A_LIST)
            args(b, v)


def base_parts(view_args=None, schema_text=None, second_name="b", k_dims=(2,),
               n_nodes=None, extra_before_return=None, return_first=False, k_seg_size=8,
               blob_off=0):
    """The metadata sections of the base program, as Bufs (marks inside)."""
    schemas = Buf()
    texts = [schema_text or "aten::add.Tensor(Tensor self, Tensor other) -> Tensor",
             "aten::view(Tensor(a) self, int[] size) -> Tensor(a)"]
    schemas.mark("count")
    schemas.u32(len(texts))
    schemas.mark("first")
    for t in texts:
        schemas.str(t)

    blobs = Buf()
    blobs.u32(1)
    blobs.str("w")
    blobs.mark("size")
    blobs.u64(8)
    blobs.mark("offset")
    blobs.u64(blob_off)

    dels = Buf()
    dels.u32(1)
    dels.str("d0")
    dels.u32(2)
    dels.mark("key")
    dels.str("backend")
    dels.str("CudaBackend")
    dels.str("target_device")
    dels.str("cuda:0")
    dels.mark("graph")
    dels.u64(4)
    node_head(dels, INPUT, "a")
    dels.u8(POSITIONAL); dels.ostr(None); dels.u8(D_NONE)
    node_head(dels, INPUT, second_name)
    dels.u8(POSITIONAL); dels.ostr(None); dels.u8(D_NONE)
    node_head(dels, OP, "c")
    dels.u32(0)
    args(dels, [("v", 0), ("v", 1)])
    node_head(dels, RETURN, None, lambda b: b.u8(T_NONE))
    args(dels, [("v", 2)])
    dels.u8(WB_NONE); dels.ostr(None)

    meth = Buf()
    meth.u32(1)
    meth.str("forward")
    meth.mark("count")
    nodes = 8 + (1 if extra_before_return else 0)
    meth.u64(n_nodes if n_nodes is not None else nodes)
    if return_first:
        meth.mark("return_first")
        node_head(meth, RETURN, None, lambda b: b.u8(T_NONE))
        args(meth, [])
    meth.mark("x")
    node_head(meth, INPUT, "x")
    meth.mark("x_input_kind")
    meth.u8(USER); meth.ostr("x"); meth.u8(D_NONE)
    meth.mark("w")
    node_head(meth, INPUT, "w")
    meth.mark("w_input_kind")
    meth.u8(PARAMETER); meth.ostr("w")
    meth.mark("w_data")
    meth.u8(D_BLOB)
    meth.mark("blob_index")
    meth.u32(0)
    meth.mark("k")
    meth.u8(INPUT)
    meth.ostr("k")
    tensor(meth, k_dims)
    meth.u8(BUFFER); meth.ostr("k"); meth.u8(D_ZEROS)
    meth.mark("k_seg")
    meth.u64(64)
    meth.mark("k_seg_size")
    meth.u64(k_seg_size)
    meth.mark("d")
    node_head(meth, DELEGATE, "d", lambda b: (b.u8(T_TUPLE), b.u32(1), spec(b, [2])))
    meth.mark("delegate_index")
    meth.u32(0)
    args(meth, [("v", 0), ("v", 1)])
    node_head(meth, GETITEM, "t")
    meth.i64(0)
    args(meth, [("v", 3)])
    meth.mark("s")
    node_head(meth, OP, "s")
    meth.mark("schema_index")
    meth.u32(0)
    meth.mark("s_args")
    args(meth, [("v", 4), ("v", 2)])
    meth.mark("v")
    node_head(meth, OP, "v")
    meth.u32(1)
    args(meth, view_args or [("v", 5), ("list", [("i", 2)])])
    if extra_before_return:
        extra_before_return(meth)
    meth.mark("return")
    node_head(meth, RETURN, None, lambda b: b.u8(T_NONE))
    args(meth, [("v", 6), ("v", 5)])
    meth.u8(WB_NONE); meth.ostr(None)
    meth.u8(WB_BUFFER); meth.ostr("k")
    return [schemas, blobs, dels, meth]


BASE_TEXT = """passrun 1
op aten::add.Tensor(Tensor self, Tensor other) -> Tensor
op aten::view(Tensor(a) self, int[] size) -> Tensor(a)
blob @w hex"0000803f00000040"

delegate @d0 backend="CudaBackend" target_device="cuda:0" {
  %a: f32[2] = input
  %b: f32[2] = input
  %c: f32[2] = aten::add.Tensor(%a, %b)
  return %c
}

method @forward {
  %x: f32[2] = input user "x"
  %w: f32[2] = input parameter "w" data=@w
  %k: f32[2] = input buffer "k" data=zeros
  %d: (f32[2]) = delegate @d0(%x, %w)
  %t: f32[2] = getitem %d, 0
  %s: f32[2] = aten::add.Tensor(%t, %k)
  %v: f32[2] = aten::view(%s, [2])
  return %v, %s -> buffer "k"
}
"""


def assemble(parts):
    """Header + section table + sections + DATA; returns (bytes, marks) where
    marks maps "SECTION.label" and "header.label" to absolute offsets."""
    data = bytearray(struct.pack("<2f", 1.0, 2.0)) + bytes(56) + bytes(8)  # blob @w, %k
    offs, at = [], HEADER + 5 * ENTRY
    for p in parts:
        offs.append(at)
        at += len(p.b)
    data_off = (at + ALIGN - 1) // ALIGN * ALIGN
    size = data_off + len(data)
    out = bytearray(MAGIC)
    out += struct.pack("<IIQQII", VERSION, BYTE_ORDER, size, HEADER, 5, ENTRY)
    out += bytes(HEADER - len(out))
    kinds = [SCHEMAS, BLOBS, DELEGATES, METHODS, DATA]
    sizes = [len(p.b) for p in parts] + [len(data)]
    for k, o, s in zip(kinds, offs + [data_off], sizes):
        out += struct.pack("<IIQQ", k, 0, o, s)
    for p in parts:
        out += p.b
    out += bytes(data_off - len(out))
    out += data
    marks = {"table": HEADER, "data": data_off}
    for i, k in enumerate(kinds):
        marks["entry.%d" % k] = HEADER + i * ENTRY
    for name, p, o in zip(["schemas", "blobs", "delegates", "methods"], parts, offs):
        for label, m in p.marks.items():
            marks["%s.%s" % (name, label)] = o + m
    return bytes(out), marks


def patch(b, off, fmt, value):
    b = bytearray(b)
    struct.pack_into(fmt if fmt[0] in "<>" else "<" + fmt, b, off, value)
    return bytes(b)


def cases():
    base, m = assemble(base_parts())
    yield "base", base, None
    size_at = 16

    def fixed(b):   # keeps the header's file size in step with a resized file
        return patch(b, size_at, "Q", len(b))

    # Truncations and the file size.
    yield "truncated_in_header", base[:40], ["truncated header", "byte 40"]
    yield "truncated_in_table", base[:100], ["records a file size", "byte 16"]
    yield "truncated_in_methods", base[:m["methods.return"]], ["records a file size"]
    yield "truncated_in_data", base[:-3], ["records a file size"]
    # The header.
    yield "wrong_magic", b"PASSRUX\0" + base[8:], ["wrong magic", "byte 0"]
    yield "wrong_version", patch(base, 8, "I", 2), ["format version 2 is not supported", "byte 8"]
    yield "big_endian", patch(base, 12, ">I", BYTE_ORDER), ["byte-order mark", "byte 12"]
    yield "reserved_header_byte", patch(base, 50, "B", 1), ["reserved header byte", "byte 50"]
    yield "section_count", patch(base, 32, "I", 1000000), ["section table has 1000000", "byte 32"]
    yield "table_offset", patch(base, 24, "Q", 1 << 62), ["section table offset", "byte 24"]
    # The section table.
    e_meth = m["entry.%d" % METHODS]
    yield "section_past_end", patch(base, e_meth + 8, "Q", len(base) - 4), \
        ["lies outside the file", "byte %d" % (e_meth + 8)]
    yield "section_size_overflow", patch(base, e_meth + 16, "Q", (1 << 64) - 1), \
        ["lies outside the file"]
    yield "section_twice", patch(base, m["entry.%d" % BLOBS], "I", SCHEMAS), \
        ["appears twice", "byte %d" % m["entry.%d" % BLOBS]]
    yield "section_unknown", patch(base, e_meth, "I", 9), ["section kind 9 is unknown"]
    e_data = m["entry.%d" % DATA]
    yield "misaligned_data_section", patch(patch(base, e_data + 8, "Q", m["data"] + 8),
                                           e_data + 16, "Q", len(base) - m["data"] - 8), \
        ["misaligned", "byte %d" % (e_data + 8)]
    # Counts the file cannot back.
    yield "huge_schema_count", patch(base, m["schemas.count"], "I", 0xFFFFFFFF), \
        ["schema count is 4294967295", "byte %d" % m["schemas.count"]]
    yield "huge_node_count", patch(base, m["methods.count"], "Q", 1 << 60), \
        ["node count is 1152921504606846976", "byte %d" % m["methods.count"]]
    yield "huge_arg_count", patch(base, m["methods.s_args"], "I", 0x7FFFFFF0), \
        ["argument count is 2147483632", "byte %d" % m["methods.s_args"]]
    # Strings and sections that end early.
    yield "string_past_end", patch(base, m["schemas.first"], "I", 1 << 20), \
        ["runs past the end of the SCHEMAS section", "byte %d" % m["schemas.first"]]
    cut = m["methods.return"] + 3 - m["methods.start"]   # inside the return node's name
    yield "section_too_short", patch(base, e_meth + 16, "Q", cut), \
        ["truncated METHODS", "byte %d" % (m["methods.return"] + 1)]
    blobs_size = m["delegates.start"] - m["blobs.start"]
    yield "bytes_left_over", patch(base, m["entry.%d" % BLOBS] + 16, "Q", blobs_size + 4), \
        ["4 bytes are left over at the end of the BLOBS section", "byte %d" % m["delegates.start"]]
    # Shapes and types.
    big = 1 << 40
    b, mk = assemble(base_parts(k_dims=(big, big)))
    yield "overflowing_shape", fixed(b), ["shape overflows", "byte %d" % (mk["methods.k"] + 7)]
    yield "rank_too_large", patch(base, m["methods.k"] + 8, "B", 17), ["rank 17 is too large"]
    yield "unknown_dtype", patch(base, m["methods.k"] + 7, "B", 10), ["dtype 10 is unknown"]
    yield "negative_dimension", patch(base, m["methods.k"] + 11, "q", -1), \
        ["dimension 0 is -1", "byte %d" % (m["methods.k"] + 11)]
    # Indexes.
    yield "forward_node_ref", fixed(assemble(base_parts(view_args=[("v", 6), ("list", [("i", 2)])]))[0]), \
        ["reads node 6, expected a node defined before this one"]
    yield "node_index_out_of_range", fixed(assemble(base_parts(view_args=[("v", 1 << 40)]))[0]), \
        ["reads node 1099511627776"]
    yield "bad_schema_index", patch(base, m["methods.schema_index"], "I", 7), \
        ["op schema index 7 is out of range", "byte %d" % m["methods.schema_index"]]
    yield "bad_delegate_index", patch(base, m["methods.delegate_index"], "I", 1), \
        ["delegate index 1 is out of range"]
    yield "bad_blob_index", patch(base, m["methods.blob_index"], "I", 3), \
        ["blob index 3 is out of range", "byte %d" % m["methods.blob_index"]]
    # Data segments.
    yield "misaligned_segment", patch(base, m["blobs.offset"], "Q", 8), \
        ["segment offset 8 is misaligned", "byte %d" % m["blobs.size"]]
    yield "segment_outside_data", patch(base, m["blobs.offset"], "Q", 1 << 62), \
        ["lies outside the DATA section"]
    yield "segment_size_mismatch", patch(base, m["methods.k_seg_size"], "Q", 4), \
        ["data segment is 4 bytes, expected the tensor's storage size, 8 bytes"]
    # Structure.
    yield "return_not_last", fixed(assemble(base_parts(return_first=True, n_nodes=9))[0]), \
        ["expected the return node exactly at the end"]
    yield "duplicate_node_name", fixed(assemble(base_parts(second_name="a"))[0]), \
        ["%a is defined twice in @d0"]
    # A node's name: checked in one pass when well formed, each fault still
    # reported as such (a NUL first, as in any string; then the name's bytes).
    for case, name in (("node_name_with_nul", b"a\x00b"), ("node_name_not_a_name", b"a-b"),
                       ("node_name_high_byte", b"ab\xc3\xa9")):
        bad = fixed(assemble(base_parts(second_name=name))[0])
        field = struct.pack("<I", len(name)) + name
        assert bad.count(field) == 1
        yield case, bad, ["the node's name " + ("contains a NUL byte" if b"\0" in name else
                                               "is not a name"), "byte %d" % bad.find(field)]
    yield "node_name_empty", fixed(assemble(base_parts(second_name=""))[0]), \
        ["the node's name is not a name"]
    yield "bad_schema_text", fixed(assemble(base_parts(schema_text="aten::add(Tensor self"))[0]), \
        ["op schema 0"]
    yield "nul_in_string", fixed(assemble(base_parts(view_args=[("v", 5), ("s", b"a\x00b")]))[0]), \
        ["a string argument contains a NUL byte"]
    nested = ("i", 1)
    for _ in range(40):
        nested = ("list", [nested])
    yield "deep_nesting", fixed(assemble(base_parts(view_args=[("v", 5), nested]))[0]), \
        ["nest deeper than 32"]
    yield "bad_bool", fixed(assemble(base_parts(view_args=[("v", 5), ("b", 2)]))[0]), \
        ["bool argument is 2"]
    yield "positional_input_in_method", patch(base, m["methods.x_input_kind"], "B", POSITIONAL), \
        ["input kind 0 in method @forward", "byte %d" % m["methods.x_input_kind"]]
    yield "data_on_user_input", patch(base, m["methods.w_input_kind"], "B", USER), \
        ["user or positional input has data", "byte %d" % m["methods.w_data"]]
    yield "bad_node_kind", patch(base, m["methods.x"], "B", 9), \
        ["node kind 9 is unknown", "byte %d" % m["methods.x"]]


def main():
    for name in os.listdir(HERE):
        if name.endswith((".bin", ".expect")) or name.startswith("base.valid"):
            os.remove(os.path.join(HERE, name))
    n = 0
    for name, data, expect in cases():
        if expect is None:
            with open(os.path.join(HERE, "base.valid"), "wb") as f:
                f.write(data)
            with open(os.path.join(HERE, "base.valid.txt"), "w") as f:
                f.write(BASE_TEXT)
            continue
        with open(os.path.join(HERE, name + ".bin"), "wb") as f:
            f.write(data)
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("\n".join(expect) + "\n")
        n += 1
    print("wrote base.valid and %d malformed files" % n)


if __name__ == "__main__":
    main()
