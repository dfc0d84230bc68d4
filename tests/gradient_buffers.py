"""The trained weights' gradients as the core left them in the arena, for the tests that
hold them against another runtime's: tests/ops/op_parity.py (PyTorch),
tests/convert/test_int8_backward.py (PyTorch, fake-quantized) and tests/convert/test_onert.py
(onert's Adam formula).

A session compiled with ``accumulate_gradients=True`` keeps each trained weight's gradient in
a buffer of its own (``microtrain.tools.arena.plan_buffers`` says where), summed over the
steps since the last update; ``train_step(..., update=False)`` leaves it there to read.
"""

import numpy as np

from microtrain.tools import arena


def trained_gradients(session):
    """Copies of the trained weights' gradient buffers, float32 arrays of the weights'
    shapes, in ``trained_tensors()`` order."""
    trained = session.trained_tensors()
    offsets = {b["tensor"]: b["offset"] for b in arena.plan_buffers(session)
               if b["kind"] == "gradient" and b["tensor"] in trained}
    # get_weights() lists every weight, trained or not, in model_description()'s params order
    shapes = {tensor: weight.shape for (tensor, _), weight
              in zip(session.model_description()["params"], session.get_weights())}
    grads = []
    for tensor in trained:
        count = int(np.prod(shapes[tensor]))
        raw = session._backend._arena[offsets[tensor]:offsets[tensor] + 4 * count]
        grads.append(raw.view(np.float32).reshape(shapes[tensor]).copy())
    return grads
