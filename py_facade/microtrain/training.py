"""The training loop: ``train`` / ``evaluate`` / ``predict`` over a ``Session`` (MicroPython-safe).

The loop uses the session's public methods only (``train_step``, ``eval_step``, ``infer``,
counters, checkpoints, schedulers, ``train_metrics`` / ``eval_metrics``), plus
``_require_training`` / ``_require_trainable`` for the "call compile() before train()" and
"nothing is trainable" checks; ``Session.train`` and friends call these functions.

    history = sess.train(DataLoader(x, y, batch_size=16, shuffle=True, seed=0), epochs=5,
                         validation_split=0.2, checkpoint_path="ck.bin")
    history.history["val_categorical_accuracy"][-1], history.timings["total_ms"]

Per epoch, ``train`` reports the training loss (the per-sample mean over the
epoch), every compiled metric on the outputs the training steps computed, and,
with validation data, the validation loss and metrics (``val_`` prefix) on the
outputs of evaluation steps. Metrics always read the real output rows of the
step that produced them (never a stale or zero buffer).

Epochs continue the session's epoch counter: on a session resumed at epoch 3,
``train(loader, epochs=2)`` runs epochs 4 and 5, and a shuffling loader uses the
orders of those epochs, so resuming reproduces an uninterrupted run bit for bit.

A step the core refuses because its loss or a gradient is NaN or infinite
(MT_ERR_NUMERIC) is handled as ``train(on_numeric_error=...)`` says: "raise" it,
"stop" training there and return the history of the epochs completed (the
refused step in ``History.numeric_error``), or "skip" the batch, count it
(``numeric_errors`` in the logs and the epoch line) and go on. The core leaves
the weights and optimizer state as they were only if the loss was the problem,
or if the session was compiled with ``guard_gradients=True``; with fused updates
a non-finite gradient stops the step after the later layers have been updated.
"""

import sys

from . import _feed
from ._platform import clock_ms, is_integer
from .backend import MT_ERR_NUMERIC
from .errors import MicrotrainError
from .data import DataLoader


class History:
    """What ``train`` returns.

    Attributes:
        epochs:  the epoch numbers run (1-based, continuing the session's counter)
        history: {"loss": [...], "<metric>": [...], "val_loss": [...], "val_<metric>": [...],
                  "learning_rate": [...]} one value per epoch; with on_numeric_error "skip"
                  or "stop" also "numeric_errors": [batches refused in that epoch]
        numeric_error: None, or with on_numeric_error="stop" the step that stopped
                  training: {"epoch", "batch", "step", "loss", "message"}; that epoch is
                  not in ``epochs`` (its counter is not advanced, no checkpoint saved)
        timings: {"model_load_ms", "compile_ms": session set-up; "epoch_ms": wall time of
                  each epoch (training, validation, checkpoint); "step_ms": mean time of
                  one training step in the C core per epoch; "total_ms": all of train()}
    """

    def __init__(self):
        self.epochs = []
        self.history = {}
        self.timings = {}
        self.numeric_error = None

    def append(self, epoch, logs):
        """Record epoch ``epoch``'s logs ({name: value}): ``history[name]`` gains the value."""
        self.epochs.append(epoch)
        for name, value in logs.items():
            self.history.setdefault(name, []).append(value)

    def __getitem__(self, name):
        return self.history[name]

    def __contains__(self, name):
        return name in self.history

    def __repr__(self):
        return "History(epochs=%r, history=%r)" % (self.epochs, self.history)


class _Progress:
    """A per-epoch progress bar on a terminal; on a pipe only the epoch summary line."""

    WIDTH = 30

    def __init__(self, verbose, stream):
        self.verbose = verbose
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.live = verbose == 1 and bool(isatty and isatty())

    def update(self, label, done, total, loss):
        if not self.live:
            return
        filled = self.WIDTH * done // max(1, total)
        bar = "=" * filled + (">" if filled < self.WIDTH else "") + "." * max(
            0, self.WIDTH - filled - 1)
        self.stream.write("\r%s [%s] %d/%d - loss: %.4f" % (label, bar, done, total, loss))
        self._flush()

    def finish(self, line):
        if self.verbose <= 0:
            return
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(line + "\n")
        self._flush()

    def _flush(self):
        flush = getattr(self.stream, "flush", None)  # MicroPython's UART stdout has none
        if flush is not None:
            flush()


def _call(callbacks, method, *args):
    for callback in callbacks:
        function = getattr(callback, method, None)
        if function is not None:
            function(*args)
        elif method == "on_epoch_end" and callable(callback):
            callback(*args)  # a plain function is an on_epoch_end(epoch, logs) callback


LINE_FORMATS = ("keras", "onert_train")


def _epoch_line(epoch, total, step_ms, logs, metric_names, line_format="keras"):
    """Epoch 1/5 - time: 0.120ms/step - loss: 0.1234 - categorical_accuracy: 0.9000 - ...
    ("keras"); "onert_train" names the output of each value as onert_train does
    (loss: [0] 0.1234): only output 0 has a loss, so it is always [0]."""
    tag = "[0] " if line_format == "onert_train" else ""
    parts = ["Epoch %d/%d - time: %.3fms/step - loss: %s%.4f" % (epoch, total, step_ms, tag,
                                                                 logs["loss"])]
    for name in metric_names:
        parts.append("%s: %s%.4f" % (name, tag, logs[name]))
    if logs.get("numeric_errors"):
        parts.append("numeric_errors: %d" % logs["numeric_errors"])
    if "val_loss" in logs:
        parts.append("val_loss: %s%.4f" % (tag, logs["val_loss"]))
        for name in metric_names:
            parts.append("val_%s: %s%.4f" % (name, tag, logs["val_" + name]))
    return " - ".join(parts)


def _as_loader(session, data, what, expecteds=None):
    batch_size = session.batch_size
    if isinstance(data, DataLoader):
        if data.batch_size > batch_size:
            raise ValueError("%s has batch_size %d, more than the %d given to compile()"
                             % (what, data.batch_size, batch_size))
        return data
    if isinstance(data, tuple) and len(data) == 2 and expecteds is None:
        data, expecteds = data
    return DataLoader(data, expecteds, batch_size=batch_size)


def _weighted_loss(session, loss, rows):
    """This step's contribution to a per-sample mean loss over an epoch."""
    if session.loss.reduction == "sum":
        return float(loss)
    return float(loss) * rows


def _rows(targets):
    return targets.shape[0] if hasattr(targets, "shape") else len(targets)


def evaluate(session, data_loader, expecteds=None):
    """Loss (per-sample mean) and every compiled metric over a loader (or arrays ``x, y``),
    batch by batch; nothing is updated. Returns {"loss": .., name: ..}."""
    session._require_training("evaluate")
    loader = _as_loader(session, data_loader, "the evaluation loader", expecteds)
    if loader.expecteds is None:
        raise ValueError("evaluate() needs expecteds; the loader has none")
    metrics = session.eval_metrics
    for metric in metrics:
        metric.reset_state()
    total, count = 0.0, 0
    for inputs, targets in loader.batches(shuffle=False):
        result = session.eval_step(inputs, targets, reset_metrics=False)
        rows = _rows(targets)
        total += _weighted_loss(session, result["loss"][0], rows)
        count += rows
    logs = {"loss": total / count}
    for metric in metrics:
        logs[metric.name] = float(metric.result())
    return logs


def predict(session, data, batch_size=None):
    """Outputs of the model over a loader (in data order, whatever its shuffle) or an
    array / list of arrays, any number of rows: one array [N, ...] per output (the array
    itself when the model has one output; lists of rows without numpy)."""
    session._require_compiled("predict")
    if isinstance(data, DataLoader):
        batches = (inputs for inputs, _ in data.batches(shuffle=False))
    else:
        if batch_size is not None and (not is_integer(batch_size) or batch_size < 1):
            raise ValueError("batch_size must be a positive integer, got %r" % (batch_size,))
        if batch_size is not None and batch_size > session.batch_size:
            raise ValueError("batch_size %d is more than the batch size %d given to compile()"
                             % (batch_size, session.batch_size))
        loader = DataLoader(data, None, batch_size=batch_size or session.batch_size)
        batches = (inputs for inputs, _ in loader.batches())
    pieces = None
    for inputs in batches:
        outputs = session.infer(inputs)
        if pieces is None:
            pieces = [[] for _ in outputs]
        for position, output in enumerate(outputs):
            pieces[position].append(output)
    outputs = [_feed.concatenate(p) for p in pieces]
    return outputs[0] if len(outputs) == 1 else outputs


def train(session, data_loader, epochs=1, validation_split=0.0, checkpoint_path=None,
          callbacks=None, verbose=1, scheduler=None, validation_data=None,
          on_numeric_error="raise", expecteds=None, line_format="keras"):
    """Train ``session`` for ``epochs`` epochs; returns a ``History`` with per-epoch losses,
    metrics and timings.

    Args:
        data_loader: a DataLoader (its batch_size <= the compiled one), (x, y) arrays, or
            x with ``expecteds`` y (``Session.train(x, y, epochs=5)``, Keras's order; the
            rows are taken in order, in batches of the compiled batch size)
        epochs: epochs to run now, continuing the session's epoch counter
        validation_split: fraction of the loader's samples held out for validation
            (``DataLoader.split``); 0 = none
        checkpoint_path: save a checkpoint (atomically) after every epoch
        callbacks: objects with any of on_train_begin(logs), on_epoch_begin(epoch, logs),
            on_batch_end(batch, logs), on_epoch_end(epoch, logs), on_train_end(logs), or
            plain functions called as on_epoch_end(epoch, logs); setting
            ``session.stop_training = True`` ends training after the current epoch
        verbose: 0 silent, 1 progress bar on a terminal and one line per epoch, 2 one line
            per epoch
        scheduler: a ``microtrain.schedules`` scheduler, registered now and stepped after
            every optimizer step
        validation_data: a DataLoader or (x, y) to validate on instead of a split
        on_numeric_error: what a training step refused with MT_ERR_NUMERIC (NaN or infinite
            loss, gradient or update) does: "raise" the MicrotrainError; "stop": print the
            step, stop and return the history so far with ``History.numeric_error`` set;
            "skip": leave that batch out of the epoch's loss and metrics, count it in
            ``numeric_errors`` and go on. Compile with ``guard_gradients=True`` so that a
            refused step changes nothing.
        expecteds: the targets when ``data_loader`` is the input rows x
        line_format: the epoch line's layout: "keras" (loss: 0.1234 - accuracy: 0.9000)
            or "onert_train" (loss: [0] 0.1234 - ..., the ``microtrain`` command's)
    """
    session._require_training("train")
    session._require_trainable("mt_session_train_step")
    begin = clock_ms()
    if is_integer(expecteds):
        raise TypeError("train()'s second argument is the targets y (train(x, y, "
                        "epochs=...)), got %r: give the epochs by name, train(loader, "
                        "epochs=%r)" % (expecteds, expecteds))
    if expecteds is not None and isinstance(data_loader, DataLoader):
        raise ValueError("give the targets once: train(x, y), train((x, y)) or "
                         "train(DataLoader(x, y))")
    if not is_integer(epochs) or epochs < 0:
        raise ValueError("epochs must be a non-negative integer, got %r" % (epochs,))
    if line_format not in LINE_FORMATS:
        raise ValueError("line_format must be 'keras' or 'onert_train', got %r"
                         % (line_format,))
    if on_numeric_error not in ("raise", "stop", "skip"):
        raise ValueError("on_numeric_error must be 'raise', 'stop' or 'skip', got %r"
                         % (on_numeric_error,))
    loader = _as_loader(session, data_loader, "the training loader", expecteds)
    if loader.expecteds is None:
        raise ValueError("train() needs expecteds; the loader has none")
    validation = None
    if validation_data is not None:
        if validation_split:
            raise ValueError("give validation_split or validation_data, not both")
        validation = _as_loader(session, validation_data, "the validation loader")
    elif validation_split:
        loader, validation = loader.split(validation_split)
    callbacks = list(callbacks or [])
    if scheduler is not None:
        session.register_lr_scheduler(scheduler)
    stepping = session.lr_scheduler is not None
    progress = _Progress(int(verbose), sys.stdout)
    train_metrics = session.train_metrics
    metric_names = [m.name for m in train_metrics]
    timings = session.timings
    history = History()
    history.timings = {"model_load_ms": timings["model_load_ms"],
                       "compile_ms": timings["compile_ms"], "epoch_ms": [], "step_ms": []}
    first_epoch = session.get_counters()["epoch"]
    last_epoch = first_epoch + int(epochs)
    session.stop_training = False
    _call(callbacks, "on_train_begin", {})

    for epoch in range(first_epoch + 1, last_epoch + 1):
        epoch_start = clock_ms()
        _call(callbacks, "on_epoch_begin", epoch, {})
        loader.set_epoch(epoch - 1)
        for metric in train_metrics:
            metric.reset_state()
        total, count, step_ms, steps, refused = 0.0, 0, 0.0, 0, 0
        label = "Epoch %d/%d" % (epoch, last_epoch)
        num_batches = len(loader)
        for batch, (inputs, targets) in enumerate(loader):
            try:
                result = session.train_step(inputs, targets, reset_metrics=False)
            except MicrotrainError as error:
                if error.status != MT_ERR_NUMERIC or on_numeric_error == "raise":
                    raise
                refused += 1
                if on_numeric_error == "skip":
                    continue
                history.numeric_error = {
                    "epoch": epoch, "batch": batch, "step": session.get_counters()["step"],
                    "loss": getattr(error, "loss", None), "message": str(error)}
                progress.finish("%s - stopped at batch %d/%d: %s" % (
                    label, batch + 1, num_batches, error))
                break
            rows = _rows(targets)
            total += _weighted_loss(session, result["loss"][0], rows)
            count += rows
            step_ms += result["train_time"]
            steps += 1
            if stepping:
                session.scheduler_step()
            progress.update(label, batch + 1, num_batches, total / count)
            _call(callbacks, "on_batch_end", batch, {"loss": result["loss"][0], "size": rows})
        if history.numeric_error is not None:
            break
        if count == 0 and not refused:
            raise ValueError("the training loader produced no batch (drop_last with fewer "
                             "samples than batch_size?)")
        session.set_epoch(epoch)
        logs = {"loss": total / count if count else float("nan")}
        if on_numeric_error != "raise":
            logs["numeric_errors"] = refused
        for metric in train_metrics:
            logs[metric.name] = float(metric.result())
        if validation is not None:
            for name, value in evaluate(session, validation).items():
                logs["val_" + name] = value
        logs["learning_rate"] = session.get_learning_rate()
        if checkpoint_path is not None:
            session.save_checkpoint(checkpoint_path)
        epoch_ms = clock_ms() - epoch_start
        history.timings["epoch_ms"].append(epoch_ms)
        history.timings["step_ms"].append(step_ms / max(1, steps))
        history.append(epoch, logs)
        progress.finish(_epoch_line(epoch, last_epoch, step_ms / max(1, steps), logs,
                                    metric_names, line_format))
        _call(callbacks, "on_epoch_end", epoch, dict(logs))
        if session.stop_training:
            break

    history.timings["total_ms"] = clock_ms() - begin
    _call(callbacks, "on_train_end", {"epochs": list(history.epochs)})
    return history
