"""The C library through ctypes: where it is, its functions, its structs.

ctypes, not cffi or an extension module: installing the package compiles
nothing (pip copies Python files), and the same package drives a build tree
or any install prefix. The price is that the structs below mirror the C
headers (core/passrun/*.h, runtime/passrun/runtime.h) by hand; the test
tests/python/test_layout.py compares every size and field offset with what
the C compiler says (tests/python/layout_probe.c), so a header change that
is not followed here fails there, not in a user's session.

Where libpassrun.so is looked for, in this order:
  1. $PASSRUN_LIB_DIR (an error when set and the library is not there);
  2. the build tree when the package runs from the source tree
     (python/passrun -> ../../build/lib);
  3. the prefix of the `passrun` found on $PATH (PREFIX/lib, lib64, lib/<arch>),
     then sys.prefix/lib;
  4. the dynamic loader's own search ($LD_LIBRARY_PATH, ld.so.cache).
libpassrun_runtime.so (running on sim or cuda) is looked for beside it.
"""
import ctypes
import os
import shutil
import sys
from ctypes import (POINTER, Structure, Union, c_bool, c_char, c_char_p, c_double, c_int,
                    c_int16, c_int32, c_int64, c_size_t, c_uint16, c_uint32, c_uint64, c_uint8,
                    c_void_p)
from pathlib import Path

from .errors import LibraryNotFoundError

CORE = "libpassrun.so"
RUNTIME = "libpassrun_runtime.so"
DOT = "libpassrun_dot.so"

# ---- structs (program.h) ---------------------------------------------------

class Device(Structure):
    _fields_ = [("type", c_char * 16), ("index", c_int32)]


# shape points at 2 * rank numbers, the shape then the strides, interned by
# the core and immutable: read them (s.shape[:s.rank], the strides
# s.shape[s.rank:2 * s.rank]), never write through them. The
# devices are ids of the core's device table: pr_device_of reads one.
class Spec(Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int16), ("has_mem", c_bool),
                ("shape", POINTER(c_int64)),
                ("device_id", c_uint32), ("mem_arena_id", c_uint32), ("mem_offset", c_int64)]


# A type is a tensor or a tuple, never both: tensor and elems share their
# bytes (pr_type's unnamed union); read the one of the type's kind.
class TypeValue(Union):
    _fields_ = [("tensor", Spec), ("elems", POINTER(Spec))]


class Type(Structure):
    _anonymous_ = ("value",)
    _fields_ = [("kind", c_int), ("n_elems", c_int), ("value", TypeValue)]


class Alias(Structure):
    _fields_ = [("set", c_char * 16), ("write", c_bool)]


class SchemaArg(Structure):
    _fields_ = [("type", c_char_p), ("name", c_char_p), ("default_value", c_char_p),
                ("alias", Alias), ("kwarg_only", c_bool), ("is_tensor", c_bool)]


class Schema(Structure):
    _fields_ = [("name", c_char_p), ("overload", c_char_p), ("full_name", c_char_p),
                ("n_args", c_int), ("args", POINTER(SchemaArg)),
                ("n_returns", c_int), ("returns", POINTER(SchemaArg)),
                ("returns_tuple", c_bool), ("shape_only", c_bool), ("h2d", c_bool),
                ("d2h", c_bool), ("n_traits", c_int), ("traits", POINTER(c_char_p)),
                ("text", c_char_p)]


class Node(Structure):
    pass


class Graph(Structure):
    pass


class Arg(Structure):
    pass


# pr_arg's unnamed union beside kind: a value's use_index, a list's n_items.
class ArgSlot(Union):
    _fields_ = [("use_index", c_int), ("n_items", c_int)]


class ArgValue(Union):
    _fields_ = [("value", POINTER(Node)), ("i", c_int64), ("f", c_double), ("b", c_bool),
                ("s", c_char_p), ("items", POINTER(Arg))]


Arg._anonymous_ = ("slot",)
Arg._fields_ = [("kind", c_int), ("slot", ArgSlot), ("u", ArgValue),
                ("owner", POINTER(Node))]


# A use entry is its argument slot alone: the reader is arg.contents.owner.
class Use(Structure):
    _fields_ = [("arg", POINTER(Arg))]


class Data(Structure):
    _fields_ = [("kind", c_int), ("fill", c_double), ("seed", c_uint64),
                ("n_values", c_int64), ("values", POINTER(c_double)), ("blob", c_void_p),
                ("mapped", POINTER(c_uint8)), ("mapped_size", c_int64)]


# An input node's record (pr_input): Node.of_kind.input, on an input only.
class Input(Structure):
    _fields_ = [("kind", c_int), ("name", c_char_p), ("data", Data)]


class Writeback(Structure):
    _fields_ = [("kind", c_int), ("target", c_char_p)]


class Kv(Structure):
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class Delegate(Structure):
    _fields_ = [("name", c_char_p), ("n_specs", c_int), ("specs", POINTER(Kv)),
                ("body", POINTER(Graph)), ("device_known", c_bool), ("device", Device)]


# pr_node.of_kind: read only the member of the node's kind (a getitem's
# index, an input's record, an op's schema, a delegate call's delegate, a
# return's write-backs).
class NodeOfKind(Union):
    _fields_ = [("index", c_int32), ("input", POINTER(Input)), ("schema", POINTER(Schema)),
                ("delegate", POINTER(Delegate)), ("writebacks", POINTER(Writeback))]


Node._fields_ = [("kind", c_uint8), ("uses_room", c_uint8), ("mem", c_uint16),
                 ("line", c_uint32), ("name", c_char_p),
                 ("graph", POINTER(Graph)), ("prev", POINTER(Node)), ("next", POINTER(Node)),
                 ("order", c_uint64), ("n_args", c_int),
                 ("n_uses", c_int), ("args", POINTER(Arg)),
                 ("uses", POINTER(Use)), ("type", Type), ("of_kind", NodeOfKind),
                 ("scratch", c_void_p)]

Graph._fields_ = [("name", c_char_p), ("first", POINTER(Node)), ("last", POINTER(Node)),
                  ("n_nodes", c_int64), ("store", c_void_p), ("delegate", POINTER(Delegate)),
                  ("program", c_void_p), ("order_stale", c_bool)]


class Program(Structure):
    _fields_ = [("n_schemas", c_int), ("cap_schemas", c_int),
                ("schemas", POINTER(POINTER(Schema))), ("blobs", c_void_p),
                ("n_delegates", c_int), ("cap_delegates", c_int),
                ("delegates", POINTER(POINTER(Delegate))),
                ("n_methods", c_int), ("cap_methods", c_int),
                ("methods", POINTER(POINTER(Graph))),
                ("mapping", c_void_p), ("mapping_size", c_size_t), ("index", c_void_p)]


# ---- structs (diag.h, manager.h, runtime.h) --------------------------------

class Diag(Structure):
    _fields_ = [("severity", c_int), ("code", c_char_p), ("pass_", c_char_p),
                ("method", c_char_p), ("node", c_char_p), ("bytes", c_int64),
                ("message", c_char_p), ("flags", c_uint32)]


class Diags(Structure):
    _fields_ = [("n", c_int), ("cap", c_int), ("items", POINTER(Diag)), ("file", c_char_p),
                ("werror", c_bool), ("print_limit", c_int), ("tally", c_void_p),
                ("strings", c_void_p)]


class PassRecord(Structure):
    _fields_ = [("name", c_char_p), ("ms", c_double), ("changed", c_bool), ("is_pass", c_bool)]


class PassReport(Structure):
    _fields_ = [("n", c_int), ("cap", c_int), ("items", POINTER(PassRecord))]


class InstrumentOpts(Structure):
    _fields_ = [("print_after_all", c_bool), ("print_after", POINTER(c_char_p)),
                ("n_print_after", c_int), ("verify_each", c_bool), ("print_out", c_void_p),
                ("diag_out", c_void_p), ("print_before", POINTER(c_char_p)),
                ("n_print_before", c_int), ("print_changed", c_int), ("verify_after", c_bool),
                ("crash_reproducer", c_char_p), ("hook", c_void_p)]


class PluginSearch(Structure):
    _fields_ = [("files", POINTER(c_char_p)), ("n_files", c_int),
                ("dirs", POINTER(c_char_p)), ("n_dirs", c_int), ("env_path", c_char_p),
                ("no_default", c_bool)]


class RunInput(Structure):
    _fields_ = [("name", c_char_p), ("path", c_char_p)]


class RunOptions(Structure):
    _fields_ = [("method", c_char_p), ("iterations", c_int), ("device", c_char_p),
                ("check", c_bool), ("seed", c_uint64), ("n_inputs", c_int),
                ("inputs", POINTER(RunInput)), ("output_dir", c_char_p),
                ("atol", c_double), ("rtol", c_double)]


class RunReport(Structure):
    _fields_ = [("device", c_char * 8), ("method", c_char * 64), ("iterations", c_int),
                ("checked", c_bool), ("match", c_bool), ("max_abs_err", c_double),
                ("max_rel_err", c_double), ("h2d_bytes_per_call", c_int64),
                ("d2h_bytes_per_call", c_int64), ("load_h2d_bytes", c_int64),
                ("ms_per_call", c_double), ("exit_status", c_int), ("mismatch", c_char * 256)]


# The C names of the structs above, for the layout test (pass_ is `pass`).
STRUCTS = {"pr_device": Device, "pr_spec": Spec, "pr_type": Type, "pr_alias": Alias,
           "pr_schema_arg": SchemaArg, "pr_schema": Schema, "pr_arg": Arg, "pr_arg_value": ArgValue, "pr_use": Use,
           "pr_data": Data, "pr_input": Input, "pr_writeback": Writeback, "pr_kv": Kv, "pr_delegate": Delegate,
           "pr_node": Node, "pr_node_of_kind": NodeOfKind, "pr_graph": Graph, "pr_program": Program, "pr_diag": Diag,
           "pr_diags": Diags, "pr_pass_record": PassRecord, "pr_pass_report": PassReport,
           "pr_instrument_opts": InstrumentOpts, "pr_plugin_search": PluginSearch,
           "prt_run_input": RunInput, "prt_run_options": RunOptions,
           "prt_run_report": RunReport}

# ---- functions -------------------------------------------------------------

P = c_void_p
PP = POINTER(c_void_p)
# name: (restype, argtypes). Functions returning malloc'd strings return
# c_void_p so that the pointer can be freed after it is read.
CORE_FUNCS = {
    "pr_err_message": (c_char_p, [P]),
    "pr_err_free": (None, [P]),
    "pr_device_of": (POINTER(Device), [c_uint32]),
    "pr_program_free": (None, [P]),
    "pr_program_load_file": (P, [c_char_p, PP]),
    "pr_program_save_file": (P, [P, c_char_p]),
    "pr_text_parse": (P, [c_char_p, c_char_p, c_size_t, PP]),
    "pr_text_print": (P, [P, POINTER(c_size_t)]),
    "pr_binary_sniff": (c_bool, [c_char_p, c_size_t]),
    "pr_binary_write": (P, [P, POINTER(P), POINTER(c_size_t)]),
    "pr_binary_load": (P, [c_char_p, c_char_p, c_size_t, c_bool, PP]),
    "pr_registry_new": (P, []),
    "pr_registry_free": (None, [P]),
    "pr_registry_load_search": (P, [P, POINTER(PluginSearch)]),
    "pr_registry_n_passes": (c_int, [P]),
    "pr_registry_pass_plugin": (c_char_p, [P, c_int]),
    "pr_pipeline_load_file": (P, [c_char_p, PP]),
    "pr_pipeline_parse_yaml": (P, [c_char_p, c_char_p, c_size_t, PP]),
    "pr_pipeline_parse_inline": (P, [c_char_p, PP]),
    "pr_pipeline_new_empty": (P, []),
    "pr_pipeline_free": (None, [P]),
    "pr_pipeline_find": (P, [c_char_p, POINTER(P)]),
    "pr_pipeline_load_plugins": (P, [P, P]),
    "pr_pipeline_set": (P, [P, c_char_p]),
    "pr_pipeline_validate": (P, [P, P]),
    "pr_pipeline_check_methods": (c_int, [P, P, POINTER(Diags)]),
    "pr_pipeline_name": (c_char_p, [P]),
    "pr_pipeline_n_passes": (c_int, [P]),
    "pr_pipeline_pass_name": (c_char_p, [P, c_int]),
    "pr_pipeline_to_yaml": (P, [P]),
    "pr_pipeline_list_shipped": (c_int, [POINTER(POINTER(c_char_p))]),
    "pr_names_free": (None, [POINTER(c_char_p), c_int]),
    "pr_pipeline_run": (P, [P, P, P, POINTER(Diags), POINTER(InstrumentOpts),
                            POINTER(PassReport)]),
    "pr_diags_init": (None, [POINTER(Diags), c_char_p]),
    "pr_diags_free": (None, [POINTER(Diags)]),
    "pr_diags_errors": (c_int, [POINTER(Diags)]),
    "pr_diags_print": (None, [POINTER(Diags), c_int, P]),
    "pr_pass_report_init": (None, [POINTER(PassReport)]),
    "pr_pass_report_free": (None, [POINTER(PassReport)]),
    "pr_pass_report_add": (None, [POINTER(PassReport), c_char_p, c_double, c_bool, c_bool]),
    "pr_now_ms": (c_double, []),
    "pr_stats_json": (P, [P, POINTER(Diags), POINTER(PassReport), c_char_p]),
    "pr_verify": (c_int, [P, POINTER(Diags), c_char_p]),
    "pr_plan_check": (c_int, [P, POINTER(Diags), c_char_p]),
    "pr_spec_storage_bytes": (c_int64, [POINTER(Spec)]),
    "pr_spec_nbytes": (c_int64, [POINTER(Spec)]),
    "pr_dtype_name": (c_char_p, [c_int]),
    "pr_copy_bytes": (c_int64, [POINTER(Node)]),
}
DOT_FUNCS = {
    "pr_dot_render": (P, [P, POINTER(Diags)]),
}
RUNTIME_FUNCS = {
    "prt_runtime_execute": (P, [P, P, POINTER(RunOptions), POINTER(RunReport)]),
    "prt_runtime_has_cuda": (c_bool, []),
    "prt_run_report_json": (None, [POINTER(RunReport), P]),
}


def _declare(lib, funcs):
    for name, (res, args) in funcs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def _candidates():
    """Folders that may hold libpassrun.so, in the order of the module doc."""
    here = Path(__file__).resolve().parent
    root = here.parent.parent
    if (root / "CMakeLists.txt").exists() and (root / "core").is_dir():
        yield root / "build" / "lib"
    tool = shutil.which("passrun")
    if tool:
        prefix = Path(tool).resolve().parent.parent
        for sub in ("lib", "lib64", "lib/" + _multiarch()):
            yield prefix / sub
    yield Path(sys.prefix) / "lib"


def _multiarch():
    return getattr(sys.implementation, "_multiarch", "") or "x86_64-linux-gnu"


def find_lib_dir():
    """The folder of libpassrun.so, or None to let the dynamic loader search."""
    env = os.environ.get("PASSRUN_LIB_DIR")
    if env:
        if not (Path(env) / CORE).exists():
            raise LibraryNotFoundError(f"PASSRUN_LIB_DIR={env}: no {CORE} there")
        return Path(env)
    for d in _candidates():
        if (d / CORE).exists():
            return d
    return None


class _Libs:
    def __init__(self):
        self._core = self._runtime = self._dot = None
        self.dir = None

    @property
    def core(self):
        if self._core is None:
            self.dir = find_lib_dir()
            name = str(self.dir / CORE) if self.dir else CORE
            try:
                lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                raise LibraryNotFoundError(
                    f"cannot load {CORE} ({e}); build passrun (cmake --build build), set "
                    "PASSRUN_LIB_DIR to the folder that holds it, or put an installed "
                    "passrun on PATH") from None
            self._core = _declare(lib, CORE_FUNCS)
        return self._core

    @property
    def runtime(self):
        if self._runtime is None:
            self.core
            name = str(self.dir / RUNTIME) if self.dir else RUNTIME
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                raise LibraryNotFoundError(
                    f"cannot load {RUNTIME} ({e}): running a program needs passrun's "
                    "runtime library beside the core one") from None
            self._runtime = _declare(lib, RUNTIME_FUNCS)
        return self._runtime

    @property
    def dot(self):
        if self._dot is None:
            self.core
            name = str(self.dir / DOT) if self.dir else DOT
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                raise LibraryNotFoundError(
                    f"cannot load {DOT} ({e}): pictures need passrun's picture library "
                    "beside the core one") from None
            self._dot = _declare(lib, DOT_FUNCS)
        return self._dot


libs = _Libs()

# ---- the C library's own helpers: free() and memory streams ------------------

_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]
_libc.free.restype = None
_libc.open_memstream.argtypes = [POINTER(c_void_p), POINTER(c_size_t)]
_libc.open_memstream.restype = c_void_p
_libc.fclose.argtypes = [c_void_p]
_libc.fclose.restype = c_int


def take_string(ptr, size=None):
    """The text of a malloc'd C string (or of size bytes), freeing it."""
    if not ptr:
        return ""
    try:
        raw = ctypes.string_at(ptr, size) if size is not None else ctypes.string_at(ptr)
    finally:
        _libc.free(ptr)
    return raw.decode("utf-8", "replace")


def take_bytes(ptr, size):
    try:
        return ctypes.string_at(ptr, size) if size else b""
    finally:
        _libc.free(ptr)


class MemStream:
    """A FILE* whose bytes end up in .text once closed (open_memstream)."""

    def __init__(self):
        self._buf = c_void_p()
        self._len = c_size_t()
        self.fp = _libc.open_memstream(ctypes.byref(self._buf), ctypes.byref(self._len))
        if not self.fp:
            raise MemoryError("open_memstream failed")
        self.text = None

    def close(self):
        if self.fp:
            _libc.fclose(self.fp)
            self.fp = None
            self.text = take_string(self._buf.value, self._len.value)
        return self.text


def check(err, cls):
    """Raises cls with the C error's message (and frees the error)."""
    if err:
        msg = libs.core.pr_err_message(err).decode("utf-8", "replace")
        libs.core.pr_err_free(err)
        raise cls(msg)


def cstr(b):
    return b.decode("utf-8", "replace") if b is not None else None
