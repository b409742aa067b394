"""The Python API against the C library and the passrun tool (standard library only).

Run by ctest (label python) with PASSRUN_LIB_DIR, PASSRUN (the tool) and
PYTHONPATH set; skipped when the library is missing."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import passrun  # noqa: E402
from passrun import plot  # noqa: E402

TOOL = os.environ.get("PASSRUN", str(ROOT / "build" / "bin" / "passrun"))
EX = ROOT / "examples"


def tool(*args):
    return subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True)


class Programs(unittest.TestCase):
    def test_text_binary_round_trip(self):
        p = passrun.Program.load(EX / "f8_copy_reuse.pg")
        q = passrun.Program.from_bytes(p.to_bytes())
        self.assertEqual(q.text(), p.text())
        self.assertEqual(q.hash, p.hash)
        with tempfile.TemporaryDirectory() as d:
            p.save(Path(d) / "a.bin")
            self.assertEqual(passrun.Program.load(Path(d) / "a.bin").text(), p.text())
        self.assertEqual(passrun.Program.from_text(p.text()).text(), tool("--print",
                         EX / "f8_copy_reuse.pg").stdout)

    def test_lists_read_with_their_counts_and_uses_with_their_readers(self):
        # pr_arg.n_items beside kind, u.items; a use entry is its slot alone
        g = passrun.Program.load(ROOT / "tests" / "text" / "args.pg").method("args")
        a, b = g["a"], g["b"]
        self.assertEqual(b.args[5:8], [[0, -1, 9223372036854775807], [a, a],
                                       [[1, [2.5, False]], [], None, "s"]])
        self.assertEqual([u.kind for u in a.users].count("op"), 4)
        self.assertEqual([u for u in a.users if u is b], [b, b, b])

    def test_malformed_program_raises_with_location(self):
        with self.assertRaises(passrun.ProgramError) as c:
            passrun.Program.from_text('passrun 1\nmethod @f {\n  %x: f33[2] = input user "x"\n}\n',
                                      "bad.pg")
        self.assertEqual(c.exception.location, ("bad.pg", 3, 7))
        self.assertEqual(c.exception.status, 3)
        with self.assertRaisesRegex(passrun.ProgramError, r"^bad.bin: byte \d+"):
            passrun.Program.from_bytes(b"PASSRUN\0" + b"\xff" * 40, "bad.bin")
        with self.assertRaises(passrun.ProgramError):
            passrun.Program.load(EX / "no-such-file.pg")

    def test_graph_walk(self):
        res = passrun.run(EX / "f8_copy_reuse.pg", "cuda")
        g = res.program.method("forward")
        copies = g.copies
        self.assertEqual(sorted(n.is_copy for n in copies), ["d2h", "d2h", "h2d", "h2d"])
        a = g["a"]
        self.assertEqual((a.kind, a.input_kind, a.input_name, a.device), ("input", "user", "a", "cpu"))
        (h2d,) = a.users
        self.assertEqual((h2d.op, h2d.device, h2d.args[0]), ("et_copy::_h2d_copy", "cuda:0", a))
        self.assertEqual({u.kind for u in h2d.users}, {"delegate"})
        self.assertIs(g.ret, g.nodes[-1])
        self.assertEqual(g.ret.args, [g["u_d2h"], g["v_d2h"]])
        dels = {d.name: d for d in res.program.delegates}
        self.assertEqual(dels["add_ab"].target_device, "cuda:0")
        self.assertEqual(dels["add_ab"].body["c"].op, "aten::add.Tensor")
        # The input program is not changed by run().
        self.assertEqual(res.original.method("forward").copies, [])

    def test_each_node_reads_its_kinds_member(self):
        # pr_node.of_kind: an input's record, an op's schema, a delegate
        # call's delegate, a return's write-backs, each read on its kind only
        g = passrun.Program.load(EX / "f6_buffer_writeback.pg").method("forward")
        last, d, s, delta = g["last"], g["d"], g["s"], g["delta"]
        self.assertEqual((last.input_kind, last.input_name, last.op, last.delegate),
                         ("buffer", "last", None, None))
        self.assertEqual((d.kind, d.delegate, d.op, d.input_kind), ("delegate", "add0", None, None))
        self.assertEqual((s.kind, s.op, s.delegate, s.index), ("getitem", None, None, 0))
        self.assertEqual((delta.op, delta.is_copy, delta.delegate, delta.input_name),
                         ("aten::sub.Tensor", None, None, None))
        self.assertEqual(g.ret.writebacks, [(None, None), (None, None), ("buffer", "last")])
        self.assertEqual((g.ret.op, last.writebacks), (None, []))


class Pipelines(unittest.TestCase):
    def test_bad_pipelines_raise(self):
        p = passrun.Program.load(EX / "f8_copy_reuse.pg")
        cases = [dict(pipeline="nope"), dict(passes="param-layout,propagat-device"),
                 dict(pipeline="cuda", sets=["skip_h2d_for_method_inputs=maybe"]),
                 dict(pipeline="cuda", options={"dce.report": True})]
        for kw in cases:
            with self.subTest(kw=kw), self.assertRaises(passrun.PipelineError) as c:
                passrun.run(p, **kw)
            self.assertEqual(c.exception.status, 2)
        with self.assertRaisesRegex(passrun.PipelineError, "did you mean 'propagate-device'"):
            passrun.run(p, passes="param-layout,propagat-device")
        with self.assertRaises(passrun.PipelineError) as c:
            passrun.Pipeline.from_yaml("name: x\npasses:\n  - [oops\n", "bad.yaml").yaml()
        self.assertEqual(c.exception.location[0], "bad.yaml")

    def test_yaml_reloads_to_the_same_pipeline(self):
        pl = passrun.Pipeline.load("cuda").with_options(skip_h2d_for_constants=True)
        y = pl.yaml()
        self.assertIn("skip_h2d_for_constants: true", y)
        self.assertEqual(passrun.Pipeline.from_yaml(y).yaml(), y)
        self.assertEqual(passrun.Pipeline.load("cuda").passes[0], "param-layout")

    def test_shipped_globs(self):
        names = passrun.shipped_pipelines("ablate/*")
        self.assertIn("ablate/no-copy-reuse", names)
        self.assertTrue(all(n.startswith("ablate/") for n in names))


class Runs(unittest.TestCase):
    def test_stats_equal_the_tools(self):
        args = ["--pipeline", "cuda", "--set", "skip_h2d_for_method_inputs=true"]
        want = json.loads(tool(*args, "--stats=json", EX / "f9_per_call_copies.pg").stdout)
        res = passrun.run(EX / "f9_per_call_copies.pg", "cuda",
                          options={"skip_h2d_for_method_inputs": True})
        self.assertEqual(res.stats.raw["methods"], want["methods"])
        self.assertEqual(res.stats.raw["diagnostics"], want["diagnostics"])
        m = res.stats.methods["forward"]
        self.assertEqual(m.h2d_bytes_per_call, want["methods"]["forward"]["h2d_bytes_per_call"])
        self.assertEqual([d.code for d in res.diagnostics],
                         [d["code"] for d in want["diagnostics"]])

    def test_diagnostics_text_is_the_tools_stderr(self):
        f = EX / "f5_transposed_constant_refused.pg"
        res = passrun.run(passrun.Program.load(f), "cuda")
        self.assertEqual(res.diagnostics_text, tool("--pipeline", "cuda", f).stderr)

    def test_refusal_is_a_status(self):
        res = passrun.run(EX / "f9_per_call_copies.pg", "cuda",
                          options={"error_on_per_call_copies": True,
                                   "skip_h2d_for_method_inputs": True})
        self.assertEqual(res.status, 1)
        self.assertIn("E-", "".join(d.code for d in res.diagnostics))
        with self.assertRaises(passrun.PassError):
            res.raise_for_status()

    def test_sim_check(self):
        res = passrun.run(EX / "f8_copy_reuse.pg", "cuda", device="sim", check=True,
                          iterations=2, seed=3)
        self.assertEqual(res.status, 0, res.error)
        self.assertEqual((res.run.device, res.run.iterations, res.run.match), ("sim", 2, True))
        self.assertEqual(res.run.h2d_bytes_per_call, res.stats.methods["forward"].h2d_bytes_per_call)

    def test_print_after(self):
        res = passrun.run(EX / "f8_copy_reuse.pg", "cuda", print_after=["copy-reuse"])
        self.assertIn("_h2d_copy", res.printed)
        with self.assertRaises(passrun.PipelineError):
            passrun.run(EX / "f8_copy_reuse.pg", "baseline", print_after=["copy-reuse"])


class Sweeps(unittest.TestCase):
    PROGS = [str(EX / "f8_copy_reuse.pg"), str(EX / "f6_shared_input.pg")]

    def test_rows_in_order_with_status_and_provenance(self):
        rows = passrun.sweep(self.PROGS, ["baseline", "cuda"],
                             {"skip_h2d_for_method_inputs": [False, True]}, check=True)
        self.assertEqual(len(rows), 8)
        self.assertEqual([(Path(r.program).stem, r.pipeline, r.options["skip_h2d_for_method_inputs"])
                          for r in rows[:4]],
                         [("f8_copy_reuse", "baseline", False), ("f8_copy_reuse", "baseline", True),
                          ("f8_copy_reuse", "cuda", False), ("f8_copy_reuse", "cuda", True)])
        refused = [r for r in rows if r.status == "refused"]
        self.assertTrue(refused)   # baseline refuses shared inputs under the skip flag
        for r in refused:
            self.assertIsNone(r.h2d_copies)
            self.assertIn("E-INPUT-SHARED", r.diagnostics)
        ok = [r for r in rows if r.status == "ok"]
        self.assertTrue(all(r.match for r in ok))
        self.assertTrue(all(r.program_hash and "passes:" in r.pipeline_yaml for r in ok))
        one = passrun.run(self.PROGS[0], "cuda").stats.methods["forward"]
        self.assertEqual(rows[2].h2d_bytes_per_call, one.h2d_bytes_per_call)

    def test_parallel_equals_serial_and_csv_round_trip(self):
        args = (self.PROGS, ["cuda", "ablate/no-copy-reuse"], {"skip_h2d_for_constants": [False, True]})
        serial = passrun.sweep(*args)
        parallel = passrun.sweep(*args, jobs=2)
        self.assertEqual(serial, parallel)
        with tempfile.TemporaryDirectory() as d:
            passrun.write_csv(serial, Path(d) / "rows.csv")
            self.assertEqual(passrun.read_csv(Path(d) / "rows.csv"), serial)

    def test_a_bad_cell_does_not_stop_the_sweep(self):
        rows = passrun.sweep(self.PROGS[:1], ["cuda", "baseline"], sets=["dce.report=true"])
        self.assertEqual([r.status for r in rows], ["error", "error"])
        rows = passrun.sweep(self.PROGS[:1], ["cuda", "ablate/no-copy-reuse"],
                             {"copy-reuse.nope": [1]})
        self.assertEqual([r.exit_status for r in rows], [2, 2])

    def test_heatmap_data(self):
        rows = passrun.sweep(self.PROGS, ["baseline", "cuda"])
        programs, pipelines, values, labels = plot.heatmap_data(rows)
        self.assertEqual(pipelines, ["baseline"])
        b = {r.program: r for r in rows if r.pipeline == "baseline"}
        c = {r.program: r for r in rows if r.pipeline == "cuda"}
        import math
        for i, p in enumerate(programs):
            self.assertAlmostEqual(values[i][0],
                                   math.log2(b[p].bytes_per_call / c[p].bytes_per_call))
        cols, h2d, d2h = plot.copies_data(rows)
        self.assertEqual(h2d[1], sum(r.h2d_copies for r in c.values()))


class Packaging(unittest.TestCase):
    def test_version_is_the_projects(self):
        cm = (ROOT / "CMakeLists.txt").read_text()
        self.assertIn(f"project(passrun VERSION {passrun.__version__} ", cm)
        self.assertIn(f'version = "{passrun.__version__}"', (ROOT / "python" / "pyproject.toml").read_text())

    def test_missing_library_is_an_error_not_a_crash(self):
        code = "import passrun\ntry:\n passrun.Program.from_text('passrun 1\\n')\n" \
               "except passrun.LibraryNotFoundError as e:\n print('missing:', e)\n"
        env = dict(os.environ, PASSRUN_LIB_DIR="/nonexistent")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             cwd=ROOT / "python")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("missing: PASSRUN_LIB_DIR=/nonexistent", out.stdout)


if __name__ == "__main__":
    unittest.main()
