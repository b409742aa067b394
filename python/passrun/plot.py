"""Figures of a sweep (matplotlib, imported only when drawing).

heatmap_data/heatmap: programs x pipelines, one panel per combination of
options in the sweep, the colour the bytes copied per call relative to the
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
    """A pipeline with its options, for the bar chart."""
    opts = options_label(row.options)
    return row.pipeline + (f"\n{opts}" if opts else "")


def options_label(options):
    return ", ".join(f"{k}={_v(v)}" for k, v in sorted(options.items()))


def _v(v):
    return str(v).lower() if isinstance(v, bool) else str(v)


def _key(options):
    return tuple(sorted(options.items()))


def heatmap_data(rows, reference="cuda", options=None):
    """(programs, pipelines, values, labels) of the rows with these options
    (a dict; None: the options of the first row): values[i][j] is log2 of
    program i's bytes-per-call ratio under pipeline j (None when masked),
    labels[i][j] its annotation."""
    if options is None:
        options = rows[0].options if rows else {}
    rows = [r for r in rows if _key(r.options) == _key(options)]
    programs = list(dict.fromkeys(r.program for r in rows))
    pipelines = list(dict.fromkeys(r.pipeline for r in rows if r.pipeline != reference))
    ref = {r.program: r for r in rows if r.pipeline == reference}
    cell = {(r.program, r.pipeline): r for r in rows}
    values = [[None] * len(pipelines) for _ in programs]
    labels = [[""] * len(pipelines) for _ in programs]
    for i, p in enumerate(programs):
        for j, pl in enumerate(pipelines):
            values[i][j], labels[i][j] = _ratio(cell.get((p, pl)), ref.get(p))
    return programs, pipelines, values, labels


def _ratio(r, base):
    if r is None:
        return None, ""
    if r.status != "ok":
        return None, r.status
    if base is None or base.status != "ok":
        return None, "no ref" if base is None else "ref " + base.status
    b, ref = r.bytes_per_call, base.bytes_per_call
    if ref == 0:
        return (0.0, "") if b == 0 else (CAP, f"{b}B")
    if b == 0:
        return -CAP, "0B"
    v = math.log2(b / ref)
    return max(-CAP, min(CAP, v)), (f"{b / ref:.2g}x" if abs(v) > 1e-9 else "")


def heatmap(rows, reference="cuda", path=None, title=None, ncols=2):
    """Draws heatmap_data, one panel per combination of options in the rows;
    returns the figure (saved to path when given)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    combos = list(dict.fromkeys(_key(r.options) for r in rows))
    ncols = max(1, min(ncols, len(combos)))
    nrows = -(-len(combos) // ncols)
    first = heatmap_data(rows, reference, dict(combos[0]) if combos else {})
    w = 1.0 + 0.42 * len(first[1])
    h = 1.6 + 0.3 * len(first[0])
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False,
                             layout="constrained")
    cmap = matplotlib.colormaps["RdBu_r"].copy()
    cmap.set_bad("#d9d9d9")
    im = None
    for k, ax in enumerate(axes.flat):
        if k >= len(combos):
            ax.axis("off")
            continue
        programs, pipelines, values, labels = heatmap_data(rows, reference, dict(combos[k]))
        data = np.ma.masked_invalid(np.array(
            [[np.nan if v is None else v for v in row] for row in values], dtype=float))
        im = ax.imshow(data, cmap=cmap, vmin=-CAP, vmax=CAP, aspect="auto")
        ax.set_xticks(range(len(pipelines)), [p.replace("ablate/", "") for p in pipelines],
                      rotation=60, ha="right", fontsize=6)
        ax.set_yticks(range(len(programs)),
                      [_short(p) for p in programs] if k % ncols == 0 else [], fontsize=6)
        for i in range(len(programs)):
            for j in range(len(pipelines)):
                if labels[i][j]:
                    ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=4.5)
        ax.set_title(options_label(dict(combos[k])) or "default options", fontsize=7)
    if im is not None:
        bar = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6)
        bar.set_label(f"log2(bytes per call / {reference}'s)", fontsize=7)
    fig.suptitle(title or f"Bytes copied per call, relative to {reference} with the same "
                 "options (grey: not ok)", fontsize=9)
    if path:
        fig.savefig(path, dpi=130, bbox_inches="tight")
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
