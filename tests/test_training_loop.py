"""TrainSession.train / evaluate / predict: history, metrics on real outputs (checked
against a hand count), validation, timings, callbacks, progress output."""

import io

import numpy as np
import pytest

import microtrain
from microtrain import ops as opcodes
from microtrain import DataLoader, layers, metrics, optimizers


def classifier(seed=0):
    return microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(3),
                                  layers.Softmax()], input_shape=(4,), seed=seed)


def blobs(rows=60, seed=0):
    """Three separable clusters: training reaches a high accuracy quickly."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, rows)
    centres = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], dtype=np.float32)
    x = (centres[labels] + 0.6 * rng.standard_normal((rows, 4))).astype(np.float32)
    return x, labels.astype(np.int32), np.eye(3, dtype=np.float32)[labels]


def compiled(loss="categorical_crossentropy", metric_list=("categorical_accuracy",),
             batch_size=8, **options):
    session = microtrain.TrainSession(classifier())
    session.compile(optimizers.Adam(0.02), loss, metrics=list(metric_list),
                    batch_size=batch_size, **options)
    return session


def test_train_returns_history_and_timings():
    x, _, y = blobs()
    session = compiled()
    history = session.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=0), epochs=4,
                            validation_split=0.25, verbose=0)
    assert history.epochs == [1, 2, 3, 4]
    for name in ("loss", "categorical_accuracy", "val_loss", "val_categorical_accuracy",
                 "learning_rate"):
        assert len(history[name]) == 4, name
    assert history["loss"][-1] < history["loss"][0]
    assert history["val_categorical_accuracy"][-1] > 0.8
    timings = history.timings
    assert timings["model_load_ms"] > 0 and timings["compile_ms"] > 0
    assert len(timings["epoch_ms"]) == 4 and len(timings["step_ms"]) == 4
    assert all(t > 0 for t in timings["epoch_ms"] + timings["step_ms"])
    assert timings["total_ms"] >= sum(timings["epoch_ms"])
    assert session.get_counters() == {"step": 4 * 6, "epoch": 4}  # 45 rows: 6 batches


def test_accuracy_metrics_match_a_hand_count_of_real_outputs():
    """Training metrics are counted on the outputs each step computed (before its update);
    validation metrics on evaluation outputs. Both equal a hand count, and neither is 0."""
    x, _, y = blobs(44, seed=1)
    loader = DataLoader(x, y, batch_size=8)
    trained = compiled()
    history = trained.train(loader, epochs=2, validation_split=0.25, verbose=0)

    hand = compiled()  # same model, same data, the loop written out
    train_part, validation = loader.split(0.25)
    for _ in range(2):
        correct = seen = 0
        for xb, yb in train_part:
            hand.train_step(xb, yb)
            outputs = hand.output_buffer()[:len(yb)]
            correct += int((outputs.argmax(1) == yb.argmax(1)).sum())
            seen += len(yb)
        train_accuracy = correct / seen
        val_outputs = np.concatenate([hand.infer(xb)[0] for xb, _ in validation])
        val_targets = np.concatenate([yb for _, yb in validation])
        val_accuracy = float((val_outputs.argmax(1) == val_targets.argmax(1)).mean())
    assert history["categorical_accuracy"][-1] == train_accuracy > 0
    assert history["val_categorical_accuracy"][-1] == val_accuracy > 0
    for a, b in zip(trained.get_weights(), hand.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_every_metric_in_a_train_run_matches_numpy():
    x, labels, y = blobs(30, seed=2)
    names = ["categorical_accuracy", "binary_accuracy", "mse", "mae"]
    session = compiled(metric_list=names)
    history = session.train(DataLoader(x, y, batch_size=8), epochs=1,
                            validation_data=DataLoader(x, y, batch_size=7), verbose=0)
    outputs = session.predict(x)
    assert history["val_categorical_accuracy"][0] == float(
        (outputs.argmax(1) == labels).mean())
    assert history["val_binary_accuracy"][0] == pytest.approx(
        float(((outputs > 0.5) == (y > 0.5)).mean()))
    assert history["val_mse"][0] == pytest.approx(float(((outputs - y) ** 2).mean()), rel=1e-6)
    assert history["val_mae"][0] == pytest.approx(float(np.abs(outputs - y).mean()), rel=1e-6)

    sparse = compiled("sparse_categorical_crossentropy", ["sparse_categorical_accuracy"])
    history = sparse.train(DataLoader(x, labels, batch_size=8), epochs=2, verbose=0,
                           validation_data=(x, labels))
    outputs = sparse.predict(DataLoader(x, labels, batch_size=8, shuffle=True, seed=3))
    assert history["val_sparse_categorical_accuracy"][-1] == float(
        (outputs.argmax(1) == labels).mean())


def test_validation_loss_is_the_per_sample_mean():
    x, _, y = blobs(21, seed=4)
    session = compiled(batch_size=8)
    result = session.evaluate(DataLoader(x, y, batch_size=8))  # batches of 8, 8, 5
    outputs = session.predict(x)
    expected = float(np.mean(-np.log(np.sum(outputs * y, axis=1))))
    assert result["loss"] == pytest.approx(expected, rel=1e-5)
    summed = compiled(microtrain.losses.CategoricalCrossentropy(reduction="sum"), batch_size=8)
    summed.set_weights(session.get_weights())
    assert summed.evaluate((x, y))["loss"] == pytest.approx(expected, rel=1e-5)


def test_user_metric_subclass_is_fed_real_rows():
    class Counting(metrics.Metric):
        default_name = "rows_seen"

        def update_state(self, outputs, expecteds):
            assert outputs.shape == expecteds.shape
            assert np.allclose(outputs.sum(axis=1), 1.0, atol=1e-5)  # softmax rows
            self._total += len(outputs)
            self._count = 1

    x, _, y = blobs(19)
    session = compiled(metric_list=[Counting()])
    history = session.train(DataLoader(x, y, batch_size=8), epochs=1, verbose=0)
    assert history["rows_seen"] == [19.0]


def test_callbacks_and_early_stop():
    x, _, y = blobs(20)
    session = compiled()
    events = []

    class Recorder:
        def on_train_begin(self, logs):
            events.append("begin")

        def on_epoch_begin(self, epoch, logs):
            events.append(("epoch", epoch))

        def on_batch_end(self, batch, logs):
            events.append(("batch", batch, logs["size"]))

        def on_epoch_end(self, epoch, logs):
            events.append(("end", epoch, round(logs["loss"], 6)))
            if epoch == 2:
                session.stop_training = True

        def on_train_end(self, logs):
            events.append(("done", logs["epochs"]))

    plain = []
    history = session.train(DataLoader(x, y, batch_size=8), epochs=5, verbose=0,
                            callbacks=[Recorder(), lambda epoch, logs: plain.append(epoch)])
    assert history.epochs == [1, 2] and plain == [1, 2]
    assert events[0] == "begin" and events[-1] == ("done", [1, 2])
    assert [e for e in events if e[0] == "batch"][:3] == [("batch", 0, 8), ("batch", 1, 8),
                                                          ("batch", 2, 4)]


def test_epochs_continue_the_session_counter():
    x, _, y = blobs(16)
    session = compiled()
    session.train((x, y), epochs=2, verbose=0)
    history = session.train((x, y), epochs=1, verbose=0)
    assert history.epochs == [3]
    assert session.get_counters()["epoch"] == 3
    assert session.train((x, y), epochs=0, verbose=0).epochs == []


def test_epoch_lines_in_keras_layout_or_onert_trains(capsys):
    """One line per epoch: Keras's "loss: 0.8164" by default; onert_train's "loss: [0]
    0.8164" (the output's index; only output 0 has a loss) where asked, as the microtrain
    command does."""
    import re
    x, _, y = blobs(20)
    session = compiled()
    for line_format, tag, epochs in (("keras", "", ["1/2", "2/2"]),
                                     ("onert_train", r"\[0\] ", ["3/4", "4/4"])):
        arguments = {} if line_format == "keras" else {"line_format": line_format}
        session.train(DataLoader(x, y, batch_size=8), epochs=2, validation_split=0.2,
                      verbose=1, **arguments)
        lines = capsys.readouterr().out.strip().splitlines()
        pattern = (r"^Epoch (\d/\d) - time: [\d.]+ms/step - loss: T[\d.]+ - "
                   r"categorical_accuracy: T[\d.]+ - val_loss: T[\d.]+ - "
                   r"val_categorical_accuracy: T[\d.]+$").replace("T", tag)
        assert [getattr(re.match(pattern, line), "group", lambda _: line)(1)
                for line in lines] == epochs
    session.train(DataLoader(x, y, batch_size=8), epochs=1, verbose=0)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="line_format must be 'keras' or 'onert_train'"):
        session.train((x, y), verbose=0, line_format="tf")


def test_progress_bar_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    x, _, y = blobs(20)
    compiled().train(DataLoader(x, y, batch_size=8), epochs=1, verbose=1)
    text = terminal.getvalue()
    assert "\r" in text and "3/3" in text and "[" in text
    assert text.rstrip().endswith(text.rstrip().splitlines()[-1])
    assert "Epoch 1/1 - time:" in text


def test_train_argument_errors():
    x, labels, y = blobs(10)
    session = compiled(batch_size=4)
    with pytest.raises(ValueError, match="batch_size 8, more than the 4"):
        session.train(DataLoader(x, y, batch_size=8), verbose=0)
    with pytest.raises(ValueError, match="needs expecteds"):
        session.train(DataLoader(x, batch_size=4), verbose=0)
    with pytest.raises(ValueError, match="epochs"):
        session.train((x, y), epochs=-1, verbose=0)
    with pytest.raises(ValueError, match="not both"):
        session.train((x, y), validation_split=0.2, validation_data=(x, y), verbose=0)
    with pytest.raises(ValueError, match="no batch"):
        session.train(DataLoader(x[:3], y[:3], batch_size=4, drop_last=True), verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        session.train((x, y), validation_split=1.5, verbose=0)
    fresh = microtrain.TrainSession(classifier())
    for call in (lambda: fresh.train((x, y)), lambda: fresh.evaluate((x, y))):
        with pytest.raises(RuntimeError, match="compile"):
            call()
    assert fresh.predict(x).shape == (len(x),) + fresh.get_outputs_tensorinfo()[0]["shape"][1:]


def test_predict_in_data_order_for_arrays_lists_and_loaders():
    x, _, y = blobs(13)
    session = compiled(batch_size=4)
    expected = np.concatenate([session.infer(x[i:i + 4])[0] for i in range(0, 13, 4)])
    np.testing.assert_array_equal(session.predict(x), expected)
    np.testing.assert_array_equal(session.predict(x, batch_size=3), expected)
    shuffled = DataLoader(x, y, batch_size=4, shuffle=True, seed=9)
    np.testing.assert_array_equal(session.predict(shuffled), expected)


def two_input_model():
    """inputs a [3] and b [2] -> Concatenation [5] -> Dense(3) -> Softmax (built by hand:
    Sequential has one input)."""
    from microtrain.nn import image as _image
    rng = np.random.default_rng(0)
    weight = rng.uniform(-0.4, 0.4, (3, 5)).astype(np.float32)
    bias = np.zeros(3, dtype=np.float32)
    trainable = _image.FLAG_CONST | _image.FLAG_TRAINABLE
    tensors = [_image.TensorSpec((3,), flags=_image.FLAG_INPUT),
               _image.TensorSpec((2,), flags=_image.FLAG_INPUT),
               _image.TensorSpec((5,)),
               _image.TensorSpec((3, 5), flags=trainable, data=weight),
               _image.TensorSpec((3,), flags=trainable, data=bias),
               _image.TensorSpec((3,)),
               _image.TensorSpec((3,), flags=_image.FLAG_OUTPUT)]
    ops = [_image.OpSpec(13, [0, 1], [2]), _image.OpSpec(opcodes.DENSE, [2, 3, 4], [5]),
           _image.OpSpec(opcodes.SOFTMAX, [5], [6])]
    return _image.write_image(tensors, ops, [0, 1], [6])


def test_multi_input_models_train_from_a_list_of_arrays():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((30, 3)).astype(np.float32)
    b = rng.standard_normal((30, 2)).astype(np.float32)
    labels = (a[:, 0] + b[:, 1] > 0).astype(np.int64) + (a[:, 1] > 1)
    y = np.eye(3, dtype=np.float32)[labels]
    session = microtrain.TrainSession(two_input_model())
    session.compile(optimizers.Adam(0.05), "categorical_crossentropy",
                    metrics=["categorical_accuracy"], batch_size=8)
    history = session.train(DataLoader([a, b], y, batch_size=8, shuffle=True, seed=1),
                            epochs=8, validation_split=0.2, verbose=0)
    assert history["loss"][-1] < history["loss"][0]
    outputs = session.predict([a, b])
    assert outputs.shape == (30, 3)
    reference = microtrain.TrainSession(two_input_model())
    reference.compile("sgd", "categorical_crossentropy", batch_size=8)
    reference.set_weights(session.get_weights())
    np.testing.assert_array_equal(reference.predict(DataLoader([a, b], y, batch_size=5)),
                                  outputs)
    assert session.evaluate(DataLoader([a, b], y, batch_size=8))["categorical_accuracy"] == \
        float((outputs.argmax(1) == labels).mean())


def test_keras_habits_accuracy_x_y_and_integer_labels():
    """compile(metrics=["accuracy"]) is the loss's accuracy, named as given; train(x, y,
    epochs=...) takes Keras's order; integer labels given to cce say to use scce."""
    x, labels, y = blobs(24)
    for loss, targets, kind in (("categorical_crossentropy", y, metrics.CategoricalAccuracy),
                                ("scce", labels, metrics.SparseCategoricalAccuracy),
                                ("mse", y, metrics.CategoricalAccuracy)):
        session = compiled(loss, metric_list=("accuracy",))
        assert [type(m) for m in session.train_metrics] == [kind]
        history = session.train(x, targets, epochs=2, verbose=0)
        assert history.epochs == [1, 2] and len(history["accuracy"]) == 2
        reference = compiled(loss, metric_list=(kind.default_name,))
        other = reference.train(DataLoader(x, targets, batch_size=8), epochs=2, verbose=0)
        assert other[kind.default_name] == history["accuracy"]
        assert other["loss"] == history["loss"]
    binary = microtrain.TrainSession(microtrain.Sequential(
        [layers.Dense(1), layers.Sigmoid()], input_shape=(4,), seed=0))
    binary.compile("sgd", "bce", metrics="acc", batch_size=8)
    assert type(binary.train_metrics[0]) is metrics.BinaryAccuracy
    assert binary.train_metrics[0].name == "acc"
    with pytest.raises(ValueError, match="depends on the loss"):
        metrics.get("accuracy")
    session = compiled()
    with pytest.raises(TypeError, match=r"second argument is the targets y.*epochs=3"):
        session.train(DataLoader(x, y, batch_size=8), 3)
    with pytest.raises(ValueError, match="give the targets once"):
        session.train(DataLoader(x, y, batch_size=8), y)
    hint = r"integer class labels, which need loss='sparse_categorical_crossentropy'"
    for targets in (labels, labels.reshape(-1, 1), [int(v) for v in labels[:8]]):
        with pytest.raises(ValueError, match=hint):
            session.train_step(x[:8], targets[:8])
    with pytest.raises(ValueError, match=hint):
        session.train(x, labels, epochs=1, verbose=0)
    assert session.get_counters()["step"] == 0
