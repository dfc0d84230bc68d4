"""The pure-logic modules: metrics (numpy and plain-Python paths), losses, optimizers."""

import numpy as np
import pytest

from microtrain import losses, metrics, optimizers

OUTPUTS = [[0.1, 0.7, 0.2], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]]
ONE_HOT = [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
LABELS = [1, 1, 2, 0]


def both_paths(monkeypatch, metric_class, outputs, expecteds, **kwargs):
    """(numpy result, plain-Python result) of one update; both must agree."""
    with_numpy = metric_class(**kwargs)
    with_numpy.update_state(np.array(outputs, np.float32), np.array(expecteds))
    monkeypatch.setattr(metrics, "_np", None)
    plain = metric_class(**kwargs)
    plain.update_state(outputs, expecteds)
    monkeypatch.undo()
    return with_numpy.result(), plain.result()


def test_metric_values_on_both_paths(monkeypatch):
    expected = {
        metrics.CategoricalAccuracy: (OUTPUTS, ONE_HOT, 0.5),
        metrics.SparseCategoricalAccuracy: (OUTPUTS, LABELS, 0.5),
        metrics.BinaryAccuracy: ([[0.2, 0.9], [0.6, 0.4]], [[0.0, 1.0], [0.0, 0.0]], 0.75),
        metrics.MeanSquaredError: ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 4.0]],
                                   (4 + 9) / 4.0),
        metrics.MeanAbsoluteError: ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 4.0]],
                                    (2 + 3) / 4.0),
    }
    for metric_class, (outputs, expecteds, value) in expected.items():
        numpy_result, plain_result = both_paths(monkeypatch, metric_class, outputs, expecteds)
        assert numpy_result == pytest.approx(value), metric_class.__name__
        assert plain_result == pytest.approx(value), metric_class.__name__


def test_argmax_ties_go_to_the_lowest_index_on_both_paths(monkeypatch):
    numpy_result, plain_result = both_paths(monkeypatch, metrics.SparseCategoricalAccuracy,
                                            [[0.5, 0.5], [0.5, 0.5]], [0, 1])
    assert numpy_result == plain_result == 0.5


def test_metrics_accumulate_until_reset():
    accuracy = metrics.SparseCategoricalAccuracy()
    assert accuracy.result() == 0.0
    accuracy.update_state(np.array(OUTPUTS[:1]), np.array(LABELS[:1]))
    assert accuracy.result() == 1.0  # row 0 right
    accuracy.update_state(np.array(OUTPUTS[1:]), np.array(LABELS[1:]))
    assert accuracy.result() == 0.5  # rows 0 and 2 right of 4
    accuracy.reset_state()
    assert accuracy.result() == 0.0


def test_binary_accuracy_threshold():
    metric = metrics.BinaryAccuracy(threshold=0.8)
    metric.update_state(np.array([[0.7, 0.9]]), np.array([[1.0, 1.0]]))
    assert metric.result() == 0.5


def test_metric_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape"):
        metrics.CategoricalAccuracy().update_state(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="do not match 3 labels"):
        metrics.SparseCategoricalAccuracy().update_state(np.zeros((2, 3)), np.zeros(3))


def test_metric_aliases_and_names():
    for name, metric_class in metrics.ALIASES.items():
        metric = metrics.get(name)
        assert isinstance(metric, metric_class) and metric.name == name
    assert metrics.CategoricalAccuracy().name == "categorical_accuracy"
    instance = metrics.MeanAbsoluteError(name="l1")
    assert metrics.get(instance) is instance
    with pytest.raises(ValueError, match="unknown metric 'auc'"):
        metrics.get("auc")


def test_loss_aliases_and_reductions():
    for name, loss_class in losses.ALIASES.items():
        loss = losses.get(name)
        assert isinstance(loss, loss_class) and loss.reduction == "mean"
    assert losses.SparseCategoricalCrossentropy().sparse_labels
    assert not losses.CategoricalCrossentropy().sparse_labels
    assert losses.BinaryCrossentropy(reduction="sum").reduction == "sum"
    with pytest.raises(ValueError, match="unknown reduction 'none'"):
        losses.MeanSquaredError(reduction="none")
    with pytest.raises(ValueError, match="unknown loss 'huber'"):
        losses.get("huber")


def test_optimizer_defaults_follow_pytorch():
    assert optimizers.SGD().get_config() == {"learning_rate": 0.01, "momentum": 0.0,
                                             "weight_decay": 0.0}
    assert optimizers.Adam().get_config() == {"learning_rate": 0.001, "beta1": 0.9,
                                              "beta2": 0.999, "epsilon": 1e-8,
                                              "weight_decay": 0.0}
    assert optimizers.AdamW().weight_decay == 0.01 and optimizers.AdamW().name == "adamw"
    for name, optimizer_class in optimizers.ALIASES.items():
        assert type(optimizers.get(name)) is optimizer_class
    assert "learning_rate=0.01" in repr(optimizers.SGD())


def test_optimizer_hyper_parameter_errors():
    cases = [
        (lambda: optimizers.SGD(learning_rate=0), "learning_rate"),
        (lambda: optimizers.SGD(learning_rate=float("nan")), "learning_rate"),
        (lambda: optimizers.SGD(momentum=1.0), "momentum"),
        (lambda: optimizers.SGD(weight_decay=-0.1), "weight_decay"),
        (lambda: optimizers.Adam(beta1=1.0), "beta1"),
        (lambda: optimizers.Adam(beta2=-0.1), "beta2"),
        (lambda: optimizers.Adam(epsilon=0.0), "epsilon"),
        (lambda: optimizers.AdamW(learning_rate=float("inf")), "learning_rate"),
        (lambda: optimizers.get("lion"), "unknown optimizer 'lion'"),
        (lambda: optimizers.get(None), "unknown optimizer None"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
