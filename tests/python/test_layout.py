"""Every ctypes mirror in passrun/_lib.py has the C compiler's size and field
offsets (layout_probe, built from the headers; $PASSRUN_LAYOUT_PROBE)."""
import os
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from passrun import _lib  # noqa: E402

PROBE = os.environ.get("PASSRUN_LAYOUT_PROBE")


def _named_fields(st):
    """st's fields as C names them: an unnamed union's members (ctypes'
    _anonymous_, as pr_arg's use_index and n_items) stand for it."""
    for f in st._fields_:
        if f[0] in getattr(st, "_anonymous_", ()):
            yield from (g[0] for g in f[1]._fields_)
        else:
            yield f[0]


@unittest.skipUnless(PROBE, "PASSRUN_LAYOUT_PROBE (the layout_probe program) is not set")
class Layout(unittest.TestCase):
    def test_sizes_and_offsets(self):
        c = {}
        for line in subprocess.run([PROBE], capture_output=True, text=True, check=True).stdout.splitlines():
            struct, fld, value = line.split()
            c[(struct, fld)] = int(value)
        for name, st in _lib.STRUCTS.items():
            with self.subTest(struct=name):
                self.assertEqual(__import__("ctypes").sizeof(st), c[(name, "sizeof")])
                for field in _named_fields(st):
                    cname = "pass" if field == "pass_" else field
                    self.assertEqual(getattr(st, field).offset, c[(name, cname)], f"{name}.{cname}")


if __name__ == "__main__":
    unittest.main()
