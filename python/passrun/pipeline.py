"""Pipelines and the plugin registry.

A Pipeline is a recipe: where it comes from (a shipped name such as "cuda"
or "ablate/no-copy-reuse", a YAML file or text, an inline --passes string)
and the --set overrides on top. Each run builds a fresh C pipeline from it,
so one Pipeline object serves any number of runs and sweeps, and
with_options() makes variants without touching the original."""
import ctypes
import fnmatch
import os

from . import _lib
from ._lib import libs
from .errors import PipelineError


def option_value(v):
    """A Python value as --set's YAML: True -> true, {"forward": True} -> {forward: true}."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {option_value(x)}" for k, x in v.items()) + "}"
    return str(v)


class Registry:
    """Registered passes: the plugins of a plugin search (manager.h)."""

    def __init__(self, plugins=(), plugin_dirs=(), no_default_plugins=False, env_path=None):
        self._h = ctypes.c_void_p(libs.core.pr_registry_new())
        files = [os.fsencode(p) for p in plugins]
        dirs = [os.fsencode(d) for d in plugin_dirs]
        env = os.environ.get("PASSRUN_PLUGIN_PATH") if env_path is None else env_path
        fa = (ctypes.c_char_p * max(1, len(files)))(*files)
        da = (ctypes.c_char_p * max(1, len(dirs)))(*dirs)
        s = _lib.PluginSearch(fa, len(files), da, len(dirs),
                              env.encode() if env else None, no_default_plugins)
        try:
            _lib.check(libs.core.pr_registry_load_search(self._h, ctypes.byref(s)),
                       PipelineError)
        except PipelineError:
            self.close()
            raise

    def close(self):
        if self._h and self._h.value:
            libs.core.pr_registry_free(self._h)
            self._h = None

    def __del__(self):
        self.close()

    @property
    def handle(self):
        return self._h

    @property
    def n_passes(self):
        return libs.core.pr_registry_n_passes(self._h)


_registries = {}


def registry(plugins=(), plugin_dirs=(), no_default_plugins=False):
    """One registry per plugin search and process, made on first use."""
    key = (tuple(map(str, plugins)), tuple(map(str, plugin_dirs)), bool(no_default_plugins),
           os.environ.get("PASSRUN_PLUGIN_PATH"))
    if key not in _registries:
        _registries[key] = Registry(plugins, plugin_dirs, no_default_plugins)
    return _registries[key]


def shipped_pipelines(pattern=None):
    """The shipped pipelines as names ("baseline", "ablate/no-copy-reuse"),
    sorted; with pattern, those that match it as a glob ("ablate/*")."""
    arr = ctypes.POINTER(ctypes.c_char_p)()
    n = libs.core.pr_pipeline_list_shipped(ctypes.byref(arr))
    names = [arr[i].decode() for i in range(n)]
    libs.core.pr_names_free(arr, n)
    return [x for x in names if pattern is None or fnmatch.fnmatchcase(x, pattern)]


class Pipeline:
    """Pipeline.load("cuda"), Pipeline.load("my.yaml"), Pipeline.from_yaml(text),
    Pipeline.inline("param-layout,propagate-device,memory-plan{alloc_graph_input=true}"),
    then .with_options(skip_h2d_for_constants=True) or .with_sets("dce.report=true")."""

    def __init__(self, kind, source, label, sets=()):
        self.kind, self.source, self.label, self.sets = kind, source, label, tuple(sets)

    @classmethod
    def load(cls, name_or_path):
        """A shipped name, or a path ending in .yaml/.yml (as --pipeline)."""
        return cls("file", str(name_or_path), _label(str(name_or_path)))

    @classmethod
    def from_yaml(cls, text, filename="<yaml>"):
        return cls("yaml", (filename, text), filename)

    @classmethod
    def inline(cls, passes):
        """An inline pipeline, as --passes 'a,b{opt=1},c'."""
        return cls("inline", passes, passes)

    @classmethod
    def empty(cls):
        return cls("empty", None, "none")

    def with_sets(self, *assignments):
        """A copy with more --set NAME=VALUE / PASS.NAME=VALUE overrides."""
        return Pipeline(self.kind, self.source, self.label, self.sets + tuple(assignments))

    def with_options(self, options=None, **kw):
        """A copy with options set: {"skip_h2d_for_constants": True,
        "memory-plan.alloc_graph_input": False} or keywords."""
        opts = dict(options or {}, **kw)
        return self.with_sets(*(f"{k}={option_value(v)}" for k, v in opts.items()))

    def build(self, reg):
        """A validated C pipeline (a CPipeline) against registry reg."""
        return CPipeline(self, reg)

    def yaml(self, reg=None):
        """The canonical YAML after the overrides (PipelineError when bad)."""
        with self.build(reg or registry()) as c:
            return c.yaml()

    @property
    def passes(self):
        with self.build(registry()) as c:
            return c.passes()

    def __repr__(self):
        sets = "".join(f" --set {s}" for s in self.sets)
        return f"<passrun.Pipeline {self.label}{sets}>"


def _label(arg):
    base = os.path.basename(arg)
    for ext in (".yaml", ".yml"):
        if arg.endswith(ext):
            return base[:-len(ext)]
    return arg


def as_pipeline(p):
    if p is None:
        return Pipeline.empty()
    if isinstance(p, Pipeline):
        return p
    if isinstance(p, (str, os.PathLike)):
        return Pipeline.load(p)
    raise TypeError(f"expected a Pipeline or a pipeline name/path, got {type(p).__name__}")


class CPipeline:
    """One C pr_pipeline, read, given its plugins and overrides, and validated,
    as the tool's load_pipeline does. Use as a context manager."""

    def __init__(self, recipe, reg):
        self.reg = reg
        self._h = ctypes.c_void_p()
        try:
            self._read(recipe)
            core = libs.core
            _lib.check(core.pr_pipeline_load_plugins(self._h, reg.handle), PipelineError)
            for s in recipe.sets:
                _lib.check(core.pr_pipeline_set(self._h, s.encode()), PipelineError)
            _lib.check(core.pr_pipeline_validate(self._h, reg.handle), PipelineError)
        except BaseException:
            self.close()
            raise

    def _read(self, r):
        core, out = libs.core, ctypes.byref(self._h)
        if r.kind == "empty":
            self._h.value = core.pr_pipeline_new_empty()
        elif r.kind == "inline":
            _lib.check(core.pr_pipeline_parse_inline(r.source.encode(), out), PipelineError)
        elif r.kind == "yaml":
            name, text = r.source
            data = text.encode()
            _lib.check(core.pr_pipeline_parse_yaml(name.encode(), data, len(data), out),
                       PipelineError)
        else:
            path = ctypes.c_void_p()
            _lib.check(core.pr_pipeline_find(os.fsencode(r.source), ctypes.byref(path)),
                       PipelineError)
            try:
                _lib.check(core.pr_pipeline_load_file(ctypes.c_char_p(path.value), out),
                           PipelineError)
            finally:
                _lib._libc.free(path.value)

    def yaml(self):
        return _lib.take_string(libs.core.pr_pipeline_to_yaml(self._h))

    def passes(self):
        n = libs.core.pr_pipeline_n_passes(self._h)
        return [libs.core.pr_pipeline_pass_name(self._h, i).decode() for i in range(n)]

    @property
    def handle(self):
        return self._h

    def close(self):
        if self._h and self._h.value:
            libs.core.pr_pipeline_free(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
