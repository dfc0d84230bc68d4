"""``SessionPersistence``: properties, checkpoints and export of a ``Session`` (part of
session.Session; MicroPython-safe).

Checkpoints are written and read by the core through the backend, streamed; files go
through ``microtrain._files`` (regular files only, atomic saves). It uses, of the
``Session`` it belongs to: ``_lock``, ``_backend``, ``_properties``,
``_require_open/_compiled/_training``, ``_image``, ``_source``, ``_current_image()``,
``get_weights()``, ``_reset_grad_pending``, ``_params``, ``_param_dtypes``, ``_trained``,
``_optimizer`` and ``_config``.
"""

from . import _files, _model_source, checkpoint_info as _checkpoint_info
from ._shapes import element_count
from .errors import MicrotrainError

MT_ERR_CHECKPOINT_MISMATCH = -9  # microtrain.h


class SessionPersistence:
    """Properties, checkpoints and export for inference."""

    # ---------------------------------------------------------------- properties

    def add_property(self, name, value):
        """Store an int, float or str under ``name`` in the checkpoints saved from now on."""
        with self._lock:
            self._require_open()
            self._properties.add(name, value)

    def get_property(self, name, *default):
        """A property added or loaded from a checkpoint; KeyError (or ``default``) if absent."""
        with self._lock:
            self._require_open()
            return self._properties.get(name, *default)

    def remove_property(self, name):
        """Remove the property ``name`` (added, or loaded from a checkpoint; KeyError if absent)."""
        with self._lock:
            self._require_open()
            self._properties.remove(name)

    @property
    def properties(self):
        """A copy of every property, name -> value."""
        with self._lock:
            self._require_open()
            return self._properties.as_dict()

    # ---------------------------------------------------------------- checkpoints and export

    def checkpoint_bytes(self, include_optimizer_state=True):
        """Size in bytes of the checkpoint save_checkpoint() would write now."""
        with self._lock:
            self._require_training("checkpoint_bytes")
            return int(self._backend.checkpoint_bytes(bool(include_optimizer_state),
                                                      self._properties.items()))

    def save_checkpoint(self, path, include_optimizer_state=True):
        """Write trained weights, optimizer state (unless ``include_optimizer_state`` is
        False; with it, a FedProx session's reference too), step and epoch counters,
        learning rates and properties to ``path``, atomically: a failure leaves the previous
        file as it was (``microtrain._files``)."""
        with self._lock:
            self._require_training("save_checkpoint")
            include = bool(include_optimizer_state)
            items = self._properties.items()
            expected = int(self._backend.checkpoint_bytes(include, items))

            def produce(writer):
                self._backend.checkpoint_save(include, items, writer.write)
                if writer.bytes_written != expected:
                    raise RuntimeError("the core wrote %d checkpoint bytes but announced %d"
                                       % (writer.bytes_written, expected))

            _files.atomic_write(path, produce)

    def load_checkpoint(self, path):
        """Restore a checkpoint saved from a session of the same model, optimizer and
        trained set. A refused checkpoint raises MicrotrainError (MT_ERR_BAD_CHECKPOINT:
        corrupt, truncated or impossible contents; MT_ERR_CHECKPOINT_MISMATCH: another
        model, optimizer or trained set, the message saying which and what the checkpoint
        holds) and changes nothing. Properties are replaced by the checkpoint's."""
        with self._lock:
            self._require_training("load_checkpoint")
            handle, size = _files.open_regular(path, "a checkpoint")
            try:
                def read(offset, count):
                    handle.seek(offset)
                    data = handle.read(count)
                    if len(data) != count:
                        raise OSError(5, "the checkpoint file shrank while it was read")
                    return data

                try:
                    loaded = self._backend.checkpoint_load(size, read)
                except MicrotrainError as error:
                    if error.status != MT_ERR_CHECKPOINT_MISMATCH:
                        raise
                    raise MicrotrainError(error.status, "%s: %s" % (
                        error.message, self._checkpoint_mismatch(read, size)), error.function)
            finally:
                handle.close()
            self._properties.replace_all(loaded)
            self._reset_grad_pending = True  # gradients of the old weights are stale

    def _checkpoint_mismatch(self, read, size):
        """Which of optimizer, trained set and model differs from the checkpoint's."""
        summary = _checkpoint_info.read_summary(read, size)
        trained, in_place = [], []
        for (index, dims, _), dtype, flag in zip(self._params, self._param_dtypes,
                                                 self._trained):
            if flag:
                trained.append((index, element_count(dims)))
                if dtype != "float32":
                    in_place.append((index, dtype))
        state = 0 if self._optimizer.name == "sgd" and not self._config["momentum"] else \
            (1 if self._optimizer.name == "sgd" else 2)
        return _checkpoint_info.mismatch(summary, self._optimizer.name, trained, state,
                                         in_place)

    def export_model_for_inference(self, path, format=None):
        """Write the model for inference, atomically: an .mtm image with the trained
        weights baked in and no training state (load it with ``Session(path)`` or embed it
        in firmware), or — by ``format`` or the extension .tflite / .circle / .onnx — a file
        LiteRT, onert or ONNX Runtime run: the original file with the trained weights
        written back when the session came from one, else a new file (CPython,
        ``microtrain.convert``)."""
        with self._lock:
            self._require_compiled("export_model_for_inference")
            if format is None:
                lowered = str(path).lower()
                for extension in _model_source.FOREIGN_EXTENSIONS:
                    if lowered.endswith(extension):
                        format = extension[1:]
            if format not in (None, "mtm"):
                # the float weights (mt_session_param order): an int8 layer's trained in
                # place are in the current image's int8 tensors, which the writers read
                weights = [w for w, dtype in zip(self.get_weights(), self._param_dtypes)
                           if dtype == "float32"]
                data = _model_source.foreign_file_bytes(self._current_image(), weights,
                                                        format, self._source)
                _files.atomic_write(path, lambda writer: writer.write(data))
                return

            def produce(writer):
                self._backend.export_image(writer.write)
                if writer.bytes_written != len(self._image):
                    raise RuntimeError("the core exported %d bytes, the image has %d"
                                       % (writer.bytes_written, len(self._image)))

            _files.atomic_write(path, produce)
