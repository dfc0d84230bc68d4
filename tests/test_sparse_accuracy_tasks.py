"""The synthetic tasks benchmarks/sparse_accuracy.py scores sparse update on: the gratings are
reproducible from their seed and hold what their doc says, and the autoencoder's AUC is the
textbook one (scikit-learn's ``roc_auc_score``)."""

import os
import sys

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import sparse_accuracy  # noqa: E402
import synthetic_images  # noqa: E402


def test_gratings_are_the_same_bits_for_the_same_seed_and_differ_for_another():
    classes = synthetic_images.target_classes()
    labels = synthetic_images.balanced_labels(len(classes), 1, 3)
    a = synthetic_images.images(classes, labels, 5, 0.4, shape="rectangle", size=32)
    b = synthetic_images.images(classes, labels, 5, 0.4, shape="rectangle", size=32)
    assert a.dtype == np.float32 and a.shape == (10, 32, 32, 3)
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, synthetic_images.images(classes, labels, 6, 0.4,
                                                         shape="rectangle", size=32))
    assert a.min() >= -1.0 and a.max() <= 1.0


def test_a_grating_at_angle_0_is_constant_down_its_columns_and_absent_is_background():
    # without noise, an image of angle 0 varies along the columns only inside its region:
    # compare one class's stripes with the same draws and no object
    classes = [(0.0, 8.0)]
    with_object = synthetic_images.images(classes, [0], 1, 0.0, size=64)
    without = synthetic_images.images(classes, [0], 1, 0.0, size=64, present=[False])
    inside = with_object != without
    assert inside.any() and not inside.all()  # a region, not the whole image
    # angle 0: u cos 0 = the column; the same row of the region holds the same stripes
    rows, cols = np.nonzero(inside[0, :, :, 0])
    middle = rows[len(rows) // 2]
    stripe = with_object[0, middle, cols[rows == middle], 0]
    above = with_object[0, middle - 1, cols[rows == middle], 0]
    assert np.array_equal(stripe[inside[0, middle - 1, cols[rows == middle], 0]],
                          above[inside[0, middle - 1, cols[rows == middle], 0]])
    with pytest.raises(ValueError, match="'ellipse' or 'rectangle'"):
        synthetic_images.images(classes, [0], 1, 0.0, shape="circle")


def test_source_and_target_classes_do_not_overlap():
    source = set(synthetic_images.source_classes())
    target = set(synthetic_images.target_classes())
    assert len(source) == 12 and len(target) == 10 and not source & target


def test_auc_equals_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=300), 1)  # rounded: many ties
    positive = rng.random(300) < 0.4
    assert sparse_accuracy.auc(scores, positive) == pytest.approx(
        roc_auc_score(positive, scores), abs=1e-12)
    assert sparse_accuracy.auc([1, 2, 3, 4], [False, False, True, True]) == 1.0
    assert sparse_accuracy.auc([4, 3, 2, 1], [False, False, True, True]) == 0.0


def test_anomalous_spectra_differ_from_normal_ones_where_the_doc_says():
    normal = sparse_accuracy.spectra(200, 1, 0.0, False).reshape(200, 5, 128)
    anomalous = sparse_accuracy.spectra(200, 1, 0.0, True).reshape(200, 5, 128)
    # the fundamental near bin 9 (normal) and 9.27 (3 % higher): the mean spectrum's
    # first peak moves right
    def first_peak(rows):  # the mean spectrum's centroid over bins 6..12, above its floor
        mean = rows.mean(axis=(0, 1))[6:13]
        weight = mean - mean.min()
        return float(np.sum(weight * np.arange(6, 13)) / np.sum(weight))

    assert abs(first_peak(normal) - 9.0) < 0.1
    assert first_peak(anomalous) > first_peak(normal) + 0.1
    assert not np.array_equal(normal, anomalous)
    # noise-free frames of a row are equal (the machine is stationary within a row)
    assert np.array_equal(normal[:, 0], normal[:, 4])
