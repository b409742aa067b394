"""The comparer the torch example tests rely on: it must read what passrun
and numpy write, and must fail on a wrong value, shape or missing file."""
import os
import struct
import tempfile
import unittest

import npy_compare


def write_npy(path, descr, fmt, shape, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}{fmt}", *values))


class NpyCompare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.want = os.path.join(self.tmp.name, "want")
        self.got = os.path.join(self.tmp.name, "got")
        os.makedirs(self.want)
        os.makedirs(self.got)

    def tearDown(self):
        self.tmp.cleanup()

    def test_reads_shape_and_values(self):
        p = os.path.join(self.want, "a.npy")
        write_npy(p, "<f4", "f", (2, 3), [1, 2, 3, 4, 5, 6])
        self.assertEqual(npy_compare.read_npy(p), ((2, 3), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))

    def test_within_tolerance_matches(self):
        write_npy(os.path.join(self.want, "forward.0.npy"), "<f4", "f", (2,), [1.0, 100.0])
        write_npy(os.path.join(self.got, "forward.0.npy"), "<f4", "f", (2,), [1.0, 100.005])
        self.assertEqual(npy_compare.main([self.want, self.got]), 0)

    def test_wrong_value_fails(self):
        write_npy(os.path.join(self.want, "forward.0.npy"), "<f4", "f", (2,), [1.0, 2.0])
        write_npy(os.path.join(self.got, "forward.0.npy"), "<f4", "f", (2,), [1.0, 2.01])
        self.assertEqual(npy_compare.main([self.want, self.got]), 1)

    def test_equal_infinities_match_and_opposite_ones_fail(self):
        inf = float("inf")
        write_npy(os.path.join(self.want, "forward.0.npy"), "<f4", "f", (2,), [inf, -inf])
        write_npy(os.path.join(self.got, "forward.0.npy"), "<f4", "f", (2,), [inf, -inf])
        self.assertEqual(npy_compare.main([self.want, self.got]), 0)
        write_npy(os.path.join(self.got, "forward.0.npy"), "<f4", "f", (2,), [inf, inf])
        self.assertEqual(npy_compare.main([self.want, self.got]), 1)

    def test_wrong_shape_fails(self):
        write_npy(os.path.join(self.want, "forward.0.npy"), "<i8", "q", (2,), [1, 2])
        write_npy(os.path.join(self.got, "forward.0.npy"), "<i8", "q", (1, 2), [1, 2])
        self.assertEqual(npy_compare.main([self.want, self.got]), 1)

    def test_missing_output_is_an_error(self):
        write_npy(os.path.join(self.want, "forward.0.npy"), "<f8", "d", (1,), [1.0])
        self.assertEqual(npy_compare.main([self.want, self.got]), 2)

    def test_bad_file_is_an_error_not_a_crash(self):
        with open(os.path.join(self.want, "forward.0.npy"), "wb") as f:
            f.write(b"not numpy")
        write_npy(os.path.join(self.got, "forward.0.npy"), "<f8", "d", (1,), [1.0])
        self.assertEqual(npy_compare.main([self.want, self.got]), 2)


if __name__ == "__main__":
    unittest.main()
