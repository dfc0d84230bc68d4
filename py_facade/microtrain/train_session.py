"""``TrainSession``: the CPython name of ``Session``, with zero-copy views of the arena.

Everything a session does is ``microtrain.session.Session``'s; this layer adds what only
the ctypes backend can give: numpy views of the arena's input, output and target buffers,
so a caller may fill rows in place and read outputs without a copy.

    with microtrain.TrainSession("model.mtm") as sess:
        sess.compile(optimizer="adam", loss="categorical_crossentropy", batch_size=16)
        x = sess.input_buffer()          # float32 [B, ...] inside the arena
        x[:n] = rows; sess.target_buffer()[:n] = targets
        ...

Views stay readable after ``close()`` (they keep the arena array alive) but no longer
belong to a session. They are not guarded by the session's lock: writing one while
another thread runs a step of the same session is the caller's race.
"""

from .session import Session


class TrainSession(Session):
    """A ``Session`` over the ctypes backend, with numpy views of its buffers: the CPython
    name of the one session class (``Session`` is the same on every platform,
    ``lite.Session`` the same under MicroPython's short import)."""

    def _views(self, what):
        self._require_compiled(what)
        views = getattr(self._backend, "buffer_views", None)
        if views is None:
            raise RuntimeError("%s() needs a backend with zero-copy views (ctypes); this "
                               "session's backend is %s" % (what, type(self._backend).__name__))
        return views()

    def input_buffer(self, position=0):
        """The arena's input buffer number ``position``: a float32 view [B, ...]."""
        with self._lock:
            inputs = self._views("input_buffer")[0]
            return inputs[position].reshape((self._batch_size,) + self._inputs[position][1])

    def output_buffer(self, position=0):
        """The arena's output buffer number ``position``: a read-only float32 view [B, ...]."""
        with self._lock:
            outputs = self._views("output_buffer")[1]
            view = outputs[position].reshape((self._batch_size,) + self._outputs[position][1])
            view.flags.writeable = False
            return view

    def target_buffer(self):
        """The arena's target buffer: float32 [B, ...] or int32 [B] labels."""
        with self._lock:
            target = self._views("target_buffer")[2]
            if self._loss.sparse_labels:
                return target.reshape(self._batch_size)
            return target.reshape((self._batch_size,) + self._outputs[0][1])
