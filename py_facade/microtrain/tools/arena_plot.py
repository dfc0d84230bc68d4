"""Draw a session's arena over the train step's schedule (``microtrain info --plot``).

    from microtrain.tools import arena_plot
    arena_plot.save(session, "arena.png")

x is schedule time (before the step, each op's forward, the loss, each op's backward
in reverse), y the byte offset in the arena; every buffer of ``mt_plan_buffers`` is
one rectangle over the times it is live, coloured by kind. Buffers that live across
steps (metadata, trained weights, optimizer state, the input and target) span the
whole width: the persistent region. Dashed lines mark the arena size and the
planner's lower bound. matplotlib is optional: ``MissingMatplotlib`` says so.
"""

from .. import _files
from ..errors import install_hint
from . import arena

COLOURS = {
    "metadata": "#9e9e9e", "weight": "#1f77b4", "gradient": "#d62728",
    "optimizer": "#9467bd", "activation": "#2ca02c", "target": "#ff7f0e",
    "scratch": "#8c564b",
}
_MAX_TICK_LABELS = 40


class MissingMatplotlib(RuntimeError):
    """matplotlib is not installed."""


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as pyplot
    except ImportError:
        raise MissingMatplotlib("drawing the arena needs matplotlib: %s"
                                % install_hint("plot")) from None
    return pyplot


def save(session, path, title=None):
    """Draw the arena plan of a compiled ``session`` into ``path`` (PNG, SVG, PDF...)."""
    pyplot = _pyplot()
    from matplotlib.patches import Patch, Rectangle

    buffers = arena.plan_buffers(session)
    labels = arena.schedule_labels(session)
    plan = session.memory_plan()
    last = len(labels) - 1
    figure, axes = pyplot.subplots(figsize=(max(8.0, 0.28 * len(labels) + 3.0), 6.0))
    kinds = []
    for buffer in buffers:
        persistent = buffer["start"] == 0 and buffer["end"] == last
        colour = COLOURS.get(buffer["kind"], "#17becf")
        axes.add_patch(Rectangle((buffer["start"], buffer["offset"]),
                                 buffer["end"] + 1 - buffer["start"], buffer["bytes"],
                                 facecolor=colour, edgecolor="black", linewidth=0.4,
                                 alpha=0.45 if persistent else 0.85,
                                 hatch="//" if buffer["in_place_of"] >= 0 else None))
        if buffer["kind"] not in kinds:
            kinds.append(buffer["kind"])
    persistent_top = max([b["offset"] + b["bytes"] for b in buffers
                          if b["start"] == 0 and b["end"] == last] or [0])
    if persistent_top:
        axes.axhline(persistent_top, color="#333333", linewidth=0.8)
        axes.text(0.1, persistent_top, "persistent region (lives across steps)",
                  va="bottom", fontsize=7)
    total, bound = plan["total_bytes"], plan["lower_bound_bytes"]
    axes.axhline(total, color="black", linestyle="--", linewidth=1.0)
    axes.axhline(bound, color="#555555", linestyle=":", linewidth=1.0)
    axes.set_xlim(0, len(labels))
    axes.set_ylim(0, total * 1.04)
    step = max(1, -(-len(labels) // _MAX_TICK_LABELS))
    axes.set_xticks([t + 0.5 for t in range(0, len(labels), step)])
    axes.set_xticklabels(labels[::step], rotation=70, ha="right", fontsize=7)
    axes.set_ylabel("arena offset (bytes)")
    axes.set_xlabel("schedule: forward ops, loss, backward ops (faded: persistent buffers; "
                    "hatched: in place)")
    handles = [Patch(facecolor=COLOURS.get(k, "#17becf"), edgecolor="black", label=k)
               for k in kinds]
    handles.append(pyplot.Line2D([], [], color="black", linestyle="--",
                                 label="arena %d B" % total))
    handles.append(pyplot.Line2D([], [], color="#555555", linestyle=":",
                                 label="lower bound %d B" % bound))
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    axes.set_title(title or "arena plan: %d bytes, lower bound %d (ratio %.3f), %s updates"
                   % (total, bound, total / bound if bound else float("nan"),
                      "fused" if plan["fused_update"] else "accumulated"), fontsize=10)
    figure.tight_layout()
    try:
        _files.save_figure(figure, path, dpi=110)  # atomically, a regular file only
    finally:
        pyplot.close(figure)
    return path
