"""Figures of a sweep (matplotlib, imported only when drawing).

heatmap_data/heatmap: programs x columns (a pipeline, or a pipeline with one
grid cell's options), the colour the bytes copied per call relative to the
reference pipeline (cuda) on the same program with the same options:
log2(bytes / reference bytes), so 0 is "the same as cuda", +1 twice as many.
A cell whose row is not "ok" (refused, mismatch, error) is masked and
labelled with its status, never coloured: its figures are not real. When the
reference moves no bytes, a cell that moves none is 0 and one that moves some
is drawn at the top of the scale and labelled with its bytes.

copies_data/copies_bars: copies per call (h2d and d2h stacked) added up over
the programs, per column, counting only the programs on which every column
is ok, so that the bars compare the same programs."""
import math

CAP = 4.0   # |log2 ratio| drawn at most: 16x more or fewer bytes


def column_label(row):
    opts = ",".join(f"{k.replace('skip_', '').replace('_for_', ':')}={_v(v)}"
                    for k, v in sorted(row.options.items()))
    return row.pipeline + (f"\n{opts}" if opts else "")


def _v(v):
    return ("T" if v else "F") if isinstance(v, bool) else str(v)


def _key(options):
    return tuple(sorted(options.items()))


def heatmap_data(rows, reference="cuda"):
    """(programs, columns, values, labels): values[i][j] is log2 of the
    bytes-per-call ratio (None when masked), labels[i][j] its annotation."""
    programs = list(dict.fromkeys(r.program for r in rows))
    columns = list(dict.fromkeys(column_label(r) for r in rows if r.pipeline != reference))
    ref = {(r.program, _key(r.options)): r for r in rows if r.pipeline == reference}
    cell = {(r.program, column_label(r)): r for r in rows if r.pipeline != reference}
    values = [[None] * len(columns) for _ in programs]
    labels = [[""] * len(columns) for _ in programs]
    for i, p in enumerate(programs):
        for j, c in enumerate(columns):
            r = cell.get((p, c))
            base = ref.get((p, _key(r.options))) if r else None
            values[i][j], labels[i][j] = _ratio(r, base)
    return programs, columns, values, labels


def _ratio(r, base):
    if r is None:
        return None, ""
    if r.status != "ok":
        return None, r.status
    if base is None or base.status != "ok":
        return None, reference_status(base)
    b, ref = r.bytes_per_call, base.bytes_per_call
    if ref == 0:
        return (0.0, "") if b == 0 else (CAP, f"{b}B")
    if b == 0:
        return -CAP, "0B"
    v = math.log2(b / ref)
    return max(-CAP, min(CAP, v)), (f"{b / ref:.2g}x" if abs(v) > 1e-9 else "")


def reference_status(base):
    return "no ref" if base is None else "ref " + base.status


def heatmap(rows, reference="cuda", path=None, ax=None, title=None):
    """Draws heatmap_data; returns the figure (saved to path when given)."""
    import matplotlib
    if ax is None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    programs, columns, values, labels = heatmap_data(rows, reference)
    data = np.ma.masked_invalid(np.array([[np.nan if v is None else v for v in row]
                                          for row in values], dtype=float))
    fig = ax.figure if ax is not None else plt.figure(
        figsize=(1.0 + 0.55 * len(columns), 1.5 + 0.32 * len(programs)))
    ax = ax or fig.add_subplot()
    cmap = matplotlib.colormaps["RdBu_r"].copy()
    cmap.set_bad("#d9d9d9")
    im = ax.imshow(data, cmap=cmap, vmin=-CAP, vmax=CAP, aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=6)
    ax.set_yticks(range(len(programs)), [_short(p) for p in programs], fontsize=7)
    for i in range(len(programs)):
        for j in range(len(columns)):
            if labels[i][j]:
                ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=5)
    bar = fig.colorbar(im, ax=ax, shrink=0.8)
    bar.set_label(f"log2(bytes per call / {reference}'s)", fontsize=7)
    ax.set_title(title or f"Bytes copied per call, relative to {reference}", fontsize=9)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=130)
    return fig


def _short(p):
    name = str(p).rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".pg") else name


def copies_data(rows):
    """(columns, h2d, d2h): copies per call added up over the programs that
    every column ran ok."""
    columns = list(dict.fromkeys(column_label(r) for r in rows))
    by = {}
    for r in rows:
        by.setdefault(r.program, {})[column_label(r)] = r
    good = [p for p, cols in by.items()
            if len(cols) == len(columns) and all(r.status == "ok" for r in cols.values())]
    h2d = [sum(by[p][c].h2d_copies for p in good) for c in columns]
    d2h = [sum(by[p][c].d2h_copies for p in good) for c in columns]
    return columns, h2d, d2h


def copies_bars(rows, path=None, ax=None, title=None):
    import matplotlib
    if ax is None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    columns, h2d, d2h = copies_data(rows)
    fig = ax.figure if ax is not None else plt.figure(figsize=(1.0 + 0.4 * len(columns), 4))
    ax = ax or fig.add_subplot()
    x = range(len(columns))
    ax.bar(x, h2d, label="h2d")
    ax.bar(x, d2h, bottom=h2d, label="d2h")
    ax.set_xticks(list(x), columns, rotation=90, fontsize=6)
    ax.set_ylabel("copies per call (sum over programs)")
    ax.legend()
    ax.set_title(title or "Copies per call, per pipeline", fontsize=9)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=130)
    return fig
