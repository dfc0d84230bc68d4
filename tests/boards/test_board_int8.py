"""An int8 backbone frozen in flash, a float head fine-tuned on every Cortex-M and RISC-V board
with the host's exact bits.

The digits backbone of tests/convert/fixtures/int8 (pretrained on digits 0-4 in float,
quantized to int8 by TensorFlow's converter) with a new head (mean -> Dense(5) -> Softmax,
``microtrain.convert(..., new_head=5)``) fine-tunes on digits 5-9 through
`microtrain firmware --run`: the board runs QUANTIZE, the int8 Conv2D, depthwise (its
pointwise expansion streamed into it by the planner), MEAN and DEQUANTIZE kernels under
QEMU, the host replays through ctypes, and the per-epoch losses, accuracy counts and weight
CRC must be equal.
"""

import os
import re

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.nn import image as _image
from microtrain.tools import arena

from board_setup import (BARE_METAL_BOARDS, BUILD_ROOT, REPO_ROOT, build_lock, digits_folder,
                         fine_tune_three_epochs, run_cli_firmware, save_digits_rows)

BACKBONE = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8",
                        "digits_backbone_int8.tflite")
KWS = os.path.join(REPO_ROOT, "examples", "models", "mlperf_tiny", "kws_ref_model.tflite")


def keyword_rows(name, rows, train_rows, seed):
    """BUILD_ROOT/name/keywords.npz: ``rows`` random int8 rows of the keyword spotter's input
    (49 x 10 x 1) and one-hot targets of its 12 classes, the first ``train_rows`` to train on,
    the rest to evaluate; returns the folder."""
    folder = os.path.join(BUILD_ROOT, name)
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (rows, 49, 10, 1)).astype(np.int8)
    y = np.eye(12, dtype=np.float32)[rng.integers(0, 12, rows)]
    np.savez(os.path.join(folder, "keywords.npz"), x=x[:train_rows], y=y[:train_rows],
             x_eval=x[train_rows:], y_eval=y[train_rows:])
    return folder


@pytest.fixture(scope="module")
def int8_inputs():
    pytest.importorskip("tflite")
    folder, x, y = digits_folder("int8", 120, first_class=5)
    microtrain.convert(BACKBONE, new_head=5).save(os.path.join(folder, "digits_int8.mtm"))
    save_digits_rows(folder, x, y)
    return folder


# Every firmware of the digits backbone on a board builds in int8_inputs/<board>: the models
# below differ in what they train, not in their ops (the same MT_OPS), so after the first the
# core is built and only the app rebuilds on the new model's sources (12 core builds fewer on
# INT8_BACKWARD_BOARDS). A board's folder is held while its firmware builds and runs.
def digits_firmware(board, int8_inputs, model_file, *options):
    """run_cli_firmware of int8_inputs/``model_file`` on its digits.npz in int8_inputs/<board>"""
    with build_lock("int8-" + board):
        return run_cli_firmware(board, os.path.join(int8_inputs, model_file),
                                os.path.join(int8_inputs, "digits.npz"),
                                os.path.join(int8_inputs, board), *options)


@pytest.mark.parametrize("board", BARE_METAL_BOARDS)
def test_int8_backbone_head_fine_tunes_bit_identical_to_host(board, int8_inputs):
    with build_lock("int8-" + board):
        fine_tune_three_epochs(board, int8_inputs, "digits_int8.mtm", "sgd", "0.5")


@pytest.mark.parametrize("train_from, over", [("8", False), ("10", True)],
                         ids=["reshape_in_float", "over_inputs"])
def test_keyword_spotter_with_int8_rows_fine_tunes_bit_identical_to_host(train_from, over):
    """MLPerf Tiny's keyword spotter (an int8 DS-CNN whose input is int8: rows of 49 x 10 x 1
    = 490 bytes, not a whole number of words) straight from its .tflite on the Cortex-M7 with
    the file's own 12-class head: the C sources hold the rows back to back, the device copies
    each batch's rows from there, and the losses, accuracy counts and weight CRC equal the
    host's; the firmware reports the stack it used (its painted high-water mark).
    Trained from its last convolution (operator 8 of the file, `--train-from 8`), the float
    part holds the Flatten's RESHAPE and its int32 shape, and the float part is the arena's
    peak: laying the int8 convolutions over their inputs would save nothing, so the planner
    keeps the plain layout. Trained from its Dense (operator 10), the int8 activations are
    the peak: the planner lays the first Conv2D's output before its int8 input and runs the
    first depthwise in place over that output (plan_lifetimes.c, mt_plan_over_input), so the
    board runs both layouts."""
    pytest.importorskip("tflite")
    model = microtrain.convert(KWS, train_from=int(train_from))
    with microtrain.TrainSession(model) as session:
        session.compile("adam", "categorical_crossentropy", batch_size=4)
        acts = dict((b["tensor"], b) for b in arena.plan_buffers(session)
                    if b["kind"] == "activation")
        assert (session.memory_plan()["over_inputs"] > 0) == over
    ops = _image.read_image(model._image).ops

    def group(tensor):
        return acts[tensor]["in_place_of"] if acts[tensor]["in_place_of"] >= 0 else tensor
    for kind in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8):
        first = next(op for op in ops if op.op_type == kind)
        assert (group(first.inputs[0]) == group(first.outputs[0])) == over, kind
    folder = keyword_rows("int8_kws_from_" + train_from, 10, 6, seed=3)
    losses, stdout = run_cli_firmware(
        "mps2-an500", KWS, os.path.join(folder, "keywords.npz"),
        os.path.join(folder, "mps2-an500"), "--train-from", train_from, "--epochs", "2",
        "--batch-size", "4", "--optimizer", "adam", "--learning-rate", "0.01",
        "--loss", "categorical_crossentropy")
    assert len(losses) == 2 and "accuracy" in stdout, stdout
    stack = re.search(r"^stack used on mps2-an500: (\d+) bytes", stdout, re.MULTILINE)
    assert stack and 0 < int(stack.group(1)) < 16 * 1024, stdout  # within memory.ld's 16 KiB


# M3 (no FPU: the reference kernels), M7 (the FPU's kernels), M55 (Helium)
INT8_BACKWARD_BOARDS = ("mps2-an385", "mps2-an500", "mps3-an547")


@pytest.fixture(scope="module")
def kws_inside_inputs():
    pytest.importorskip("tflite")
    folder = keyword_rows("int8_backward", 6, 4, seed=7)
    microtrain.convert(KWS, train_from=6, int8_after=True).save(
        os.path.join(folder, "kws_inside.mtm"))
    return folder


@pytest.mark.parametrize("board", INT8_BACKWARD_BOARDS)
def test_keyword_spotter_trains_inside_its_int8_backbone_bit_identical_to_host(
        board, kws_inside_inputs):
    """The keyword spotter trained from its fourth pointwise Conv2D (op 6 of the file,
    ``convert(..., train_from=6, int8_after=True)``): the depthwise, Conv2D, pool, Flatten and
    FullyConnected after it stay int8 and pass the gradient back (the int8 backward kernels,
    the QUANTIZE after the float layer, the DEQUANTIZE before the Softmax) on the device;
    the losses, accuracy counts and weight CRC equal the host's."""
    losses, stdout = run_cli_firmware(
        board, os.path.join(kws_inside_inputs, "kws_inside.mtm"),
        os.path.join(kws_inside_inputs, "keywords.npz"),
        os.path.join(kws_inside_inputs, board), "--epochs", "2", "--batch-size", "2",
        "--optimizer", "adam", "--learning-rate", "0.001", "--loss",
        "categorical_crossentropy")
    assert len(losses) == 2 and losses[-1] < losses[0], stdout


@pytest.mark.parametrize("master", [False, True], ids=["in_place", "in_place_master"])
@pytest.mark.parametrize("board", INT8_BACKWARD_BOARDS)
def test_int8_layers_trained_in_place_bit_identical_to_host(board, master, int8_inputs):
    """The digits backbone trained from its depthwise convolution in int8, in place
    (``convert(..., new_head=5, train_from="dw", int8_train=True)``): the depthwise's and the
    pointwise Conv2D's int8 weights and int32 biases take the QAS update (their gradients from
    the int8 backward, the rounding half to even, a tile of output channels at a time where
    the planner tiles; with ``int8_master_weights``, through float master copies), the new
    float head trains after them. The losses, accuracy counts and the head's weight CRC
    (which every int8 update before it changes) equal the host's."""
    name = "digits_int8_in_place%s.mtm" % ("_master" if master else "")
    microtrain.convert(BACKBONE, new_head=5, train_from="dw", int8_train=True,
                       int8_master_weights=master).save(os.path.join(int8_inputs, name))
    losses, stdout = digits_firmware(
        board, int8_inputs, name, "--epochs", "3", "--batch-size", "16",
        "--optimizer", "sgd", "--learning-rate", "0.1")
    assert len(losses) == 3 and losses[-1] < losses[0], stdout


@pytest.mark.parametrize("board", INT8_BACKWARD_BOARDS)
def test_int8_layers_trained_in_part_bit_identical_to_host(board, int8_inputs):
    """The same in-place digits model under a sparse scheme (``--trainable-scheme``): the first
    4 of the depthwise's 16 channels (4 runs of 4 a tap row), the first 8 of the pointwise
    Conv2D's 32 output rows (in a tile: their gradient only), both int32 biases whole, and the
    float head; the device's losses, accuracy counts and head CRC equal the host's."""
    from microtrain.sparse_scheme import SparseScheme
    name = "digits_int8_in_part.mtm"
    microtrain.convert(BACKBONE, new_head=5, train_from="dw", int8_train=True).save(
        os.path.join(int8_inputs, name))
    scheme = os.path.join(int8_inputs, "in_part.json")
    with open(scheme, "w") as handle:
        # by position: a saved .mtm keeps no layer names (2 dw, 3 conv_b, 5 the new head)
        handle.write(SparseScheme({2: 4, 3: 8, 5: "all"}).to_json())
    losses, stdout = digits_firmware(
        board, int8_inputs, name, "--epochs", "3", "--batch-size", "16",
        "--optimizer", "sgd", "--learning-rate", "0.1", "--trainable-scheme", scheme)
    assert len(losses) == 3 and losses[-1] < losses[0], stdout


@pytest.mark.parametrize("board", INT8_BACKWARD_BOARDS)
def test_mean_broadcast_gradient_bit_identical_to_host(board, int8_inputs):
    """The in-place digits model training the biases of its depthwise and of conv_b (a
    pointwise Conv2D read by the MEAN alone, its weight frozen) and the new head: conv_b's
    output gradient is planned as the Mean's broadcast, 16 x 32 floats after conv_b's work area
    (plan_lifetimes.c, mt_plan_grad_broadcast), and conv_b's backward expands it for its mask, its bias's
    gradient and its input's. The device's losses, accuracy counts and weight CRC (the int32
    biases among them) equal the host's; the host's equal, bit for bit, those of the whole
    buffer's path (tests/ops/test_pooling_s8.c: the kernels both ways)."""
    from microtrain.sparse_scheme import SparseScheme
    name = "digits_int8_broadcast.mtm"
    model = microtrain.convert(BACKBONE, new_head=5, train_from="dw", int8_train=True)
    model.save(os.path.join(int8_inputs, name))
    trainable = {2: "bias", 3: "bias", 5: "all"}
    mean = next(op for op in _image.read_image(model._image).ops if op.op_type == _ops.MEAN_S8)
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "categorical_crossentropy", batch_size=16, trainable=trainable)
        grads = [b["bytes"] for b in arena.plan_buffers(session)
                 if b["kind"] == "gradient" and b["tensor"] == mean.inputs[0]]
    assert grads == [(5 * 32 + 16 * 32) * 4], grads  # the broadcast is taken
    scheme = os.path.join(int8_inputs, "broadcast.json")
    with open(scheme, "w") as handle:
        handle.write(SparseScheme(trainable).to_json())
    losses, stdout = digits_firmware(
        board, int8_inputs, name, "--epochs", "3", "--batch-size", "16",
        "--optimizer", "sgd", "--learning-rate", "0.1", "--trainable-scheme", scheme)
    assert len(losses) == 3 and losses[-1] < losses[0], stdout
