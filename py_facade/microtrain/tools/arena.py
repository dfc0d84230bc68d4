"""The arena plan of a compiled session, buffer by buffer (``mt_plan_buffers``).

    buffers = arena.plan_buffers(session)   # [{"kind": "activation", "tensor": 3,
                                            #   "offset": 2080, "bytes": 512,
                                            #   "start": 1, "end": 9, ...}, ...]
    arena.schedule_labels(session)          # ["start", "fwd 0 Conv2D", ..., "loss", ...]

The layout is the one ``TrainSession.compile`` bound: the core's planner computes
both from the same model image and configuration. Times index the train step's
schedule over O ops: 0 before the step, 1 + o the forward of op o, O + 1 the
loss, 2·O + 1 - o the backward of op o; a buffer is live over [start, end].
"""

import ctypes

from ..backend import _native
from ..backend._native import _check
from ..nn import image as _image


def plan_buffers(session):
    """Every buffer of ``session``'s arena as a dict: kind (name), kind_code, tensor
    (-1 for metadata, target, scratch), start, end (inclusive), in_place_of (-1 or the
    tensor whose bytes it overwrites), offset and bytes (from the arena's start)."""
    session._require_compiled("plan_buffers")
    found = []
    failure = []

    def report(user, pointer):
        try:
            info = pointer.contents
            found.append({"kind": _native.BUFFER_KIND_NAMES.get(info.kind, str(info.kind)),
                          "kind_code": info.kind, "tensor": info.tensor_index,
                          "start": info.start, "end": info.end,
                          "in_place_of": info.in_place_of, "offset": info.offset,
                          "bytes": info.bytes})
            return _native.MT_OK
        except Exception as error:  # noqa: BLE001 - must not unwind through C
            failure.append(error)
            return _native.MT_ERR_IO

    callback = _native.mt_buffer_fn(report)
    status = _native.mt_plan_buffers(session._image.ctypes.data, session._image.size,
                                     ctypes.byref(session._config), callback, None)
    if failure:
        raise failure[0]
    _check(status, "mt_plan_buffers")
    return found


def schedule_labels(session):
    """A label per schedule time 0 .. 2·O + 1 (see the module doc)."""
    session._require_open()
    ops = _image.read_image(session._image).ops
    count = len(ops)
    names = [_native.OP_NAMES.get(op.op_type, str(op.op_type)) for op in ops]
    labels = ["start"] + ["fwd %d %s" % (o, names[o]) for o in range(count)] + ["loss"]
    labels += ["bwd %d %s" % (o, names[o]) for o in reversed(range(count))]
    return labels


def summary(plan):
    """{"total", "lower_bound", "ratio", "reuse", "update"} of a ``memory_plan()`` dict."""
    bound = plan["lower_bound_bytes"]
    return {"total": plan["total_bytes"], "lower_bound": bound,
            "ratio": plan["total_bytes"] / bound if bound else float("nan"),
            "reuse": plan["reuse_bytes"],
            "update": "fused" if plan["fused_update"] else "accumulate"}
