#!/usr/bin/env python3
"""npy_compare.py: compare passrun's output .npy files with PyTorch's.

Standard library only (CI installs python3 but not numpy): reads .npy
version 1/2/3 files of the dtypes passrun writes (little-endian f2/f4/f8,
i1/i2/i4/i8, u1, b1), C order only, and compares element by element with
the same rule as passrun's --check: |got - want| <= atol + rtol * |want|,
NaN equal to NaN.

    npy_compare.py [--rtol R] [--atol A] EXPECTED_DIR GOT_DIR

Every EXPECTED_DIR/*.npy must have a same-named file in GOT_DIR with the
same shape. Exit status: 0 all match, 1 a mismatch, 2 a missing or bad file.
"""
import argparse
import ast
import math
import os
import struct
import sys

# descr -> (struct format character, element size)
_FORMATS = {
    "<f2": ("e", 2), "<f4": ("f", 4), "<f8": ("d", 8),
    "|i1": ("b", 1), "<i2": ("h", 2), "<i4": ("i", 4), "<i8": ("q", 8),
    "|u1": ("B", 1), "|b1": ("?", 1),
}


class NpyError(Exception):
    """A file that is not a .npy this reader understands."""


def read_npy(path):
    """Returns (shape, list of Python numbers) from a .npy file."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        raise NpyError(f"{path}: not a .npy file (bad magic)")
    major = raw[6]
    if major == 1:
        (hlen,), start = struct.unpack_from("<H", raw, 8), 10
    elif major in (2, 3):
        (hlen,), start = struct.unpack_from("<I", raw, 8), 12
    else:
        raise NpyError(f"{path}: .npy version {major} is not supported")
    try:
        header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    except (ValueError, SyntaxError) as e:
        raise NpyError(f"{path}: bad header: {e}") from None
    descr = header.get("descr")
    if descr not in _FORMATS:
        raise NpyError(f"{path}: dtype {descr!r} is not supported")
    if header.get("fortran_order"):
        raise NpyError(f"{path}: Fortran order is not supported")
    shape = tuple(header.get("shape", ()))
    fmt, size = _FORMATS[descr]
    count = math.prod(shape)
    body = raw[start + hlen:]
    if len(body) < count * size:
        raise NpyError(f"{path}: {len(body)} data bytes, expected {count * size}")
    values = list(struct.unpack_from(f"<{count}{fmt}", body, 0)) if count else []
    return shape, values


def compare(want_path, got_path, rtol, atol):
    """Returns None when the files match, else a one-line reason."""
    ws, wv = read_npy(want_path)
    gs, gv = read_npy(got_path)
    if ws != gs:
        return f"shape {list(gs)}, expected {list(ws)}"
    worst, worst_at = 0.0, -1
    for i, (g, w) in enumerate(zip(gv, wv)):
        g, w = float(g), float(w)
        if (math.isnan(g) and math.isnan(w)) or g == w:   # equal infinities: inf - inf is NaN
            continue
        d = abs(g - w)
        if not math.isfinite(d) or d > atol + rtol * abs(w):   # an infinity is close only to itself
            return f"element {i}: {g!r}, expected {w!r} (rtol {rtol}, atol {atol})"
        if d > worst:
            worst, worst_at = d, i
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("expected_dir")
    ap.add_argument("got_dir")
    a = ap.parse_args(argv)
    names = sorted(n for n in os.listdir(a.expected_dir) if n.endswith(".npy"))
    if not names:
        print(f"npy_compare: no .npy files in {a.expected_dir}", file=sys.stderr)
        return 2
    status = 0
    for n in names:
        got = os.path.join(a.got_dir, n)
        if not os.path.exists(got):
            print(f"{n}: missing from {a.got_dir}", file=sys.stderr)
            return 2
        try:
            why = compare(os.path.join(a.expected_dir, n), got, a.rtol, a.atol)
        except NpyError as e:
            print(f"npy_compare: {e}", file=sys.stderr)
            return 2
        print(f"{n}: {'match' if why is None else 'MISMATCH: ' + why}")
        if why is not None:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
