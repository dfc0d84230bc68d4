"""The arena plan of a compiled session, buffer by buffer (``mt_plan_buffers``).

    buffers = arena.plan_buffers(session)   # [{"kind": "activation", "tensor": 3,
                                            #   "offset": 2080, "bytes": 512,
                                            #   "start": 1, "end": 9, ...}, ...]
    arena.schedule_labels(session)          # ["start", "fwd 0 Conv2D", ..., "loss", ...]

The layout is the one the session bound: the core's planner computes both from the same
model image and configuration. Times index the train step's schedule over O ops: 0 before
the step, 1 + o the forward of op o, O + 1 the loss, 2·O + 1 - o the backward of op o; a
buffer is live over [start, end].
"""

from .. import ops as _ops
from ..backend import ctypes_backend as _ctypes_backend


def plan_buffers(session):
    """Every buffer of ``session``'s arena as a dict: kind (name), kind_code, tensor
    (-1 for metadata, target, scratch), start, end (inclusive), in_place_of (-1 or the
    tensor whose bytes it overwrites), offset and bytes (from the arena's start)."""
    session._require_compiled("plan_buffers")
    return _ctypes_backend.Backend().plan_buffers(session.model_image, session.config)


def schedule_labels(session):
    """A label per schedule time 0 .. 2·O + 1 (see the module doc)."""
    ops = session.model_description()["ops"]
    names = [_ops.display_name(op["type"]) for op in ops]
    labels = ["start"] + ["fwd %d %s" % (o, names[o]) for o in range(len(ops))] + ["loss"]
    labels += ["bwd %d %s" % (o, names[o]) for o in reversed(range(len(ops)))]
    return labels


def summary(plan):
    """{"total", "lower_bound", "ratio", "reuse", "update"} of a ``memory_plan()`` dict."""
    bound = plan["lower_bound_bytes"]
    return {"total": plan["total_bytes"], "lower_bound": bound,
            "ratio": plan["total_bytes"] / bound if bound else float("nan"),
            "reuse": plan["reuse_bytes"],
            "update": update_mode(plan)}


def update_mode(plan):
    """How the weights update: "accumulate", "fused", or "fused, tiled" where some weights
    get their gradient a block of output rows at a time (``tiled_updates``)."""
    if not plan["fused_update"]:
        return "accumulate"
    return "fused, tiled" if plan.get("tiled_updates") else "fused"
