"""The int8 per-op cost table's generator (benchmarks/arm_int8_ops.py) without QEMU: the MACs
it divides by (benchmarks/op_work.py) against counts made by hand, its zoo (int8_zoo.py)
against the MobileNetV2 whose layer shapes it claims, what each instruction is charged to,
how a streamed expansion joins its depthwise's row, the README block it writes, the
published figures' conversions (int8_published.py) and the layer table of CMSIS-NN's run
(cmsis_nn_ops.py). The QEMU runs are benchmarks only."""

import os
import sys

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.nn import image as _image

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import arm_int8_ops  # noqa: E402
import cmsis_nn_ops  # noqa: E402
import int8_published  # noqa: E402
import int8_zoo  # noqa: E402
import op_work  # noqa: E402

SAME, VALID = _image.PADDING_SAME, _image.PADDING_VALID
MBV2 = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8", "mbv2_035_128.tflite")


@pytest.fixture(scope="module")
def zoo():
    image_bytes, layers = int8_zoo.zoo()
    return image_bytes, _image.read_image(image_bytes), layers


def test_taps_in_the_padding_are_no_macs():
    # SAME 3x3 over 8 columns: the first and last outputs have a tap in the padding
    assert op_work.valid_taps(8, 3, 1, SAME) == [2, 3, 3, 3, 3, 3, 3, 2]
    # 8x8: 64·9 taps less the padded ones (4 edges of 8 less the 4 corners counted twice)
    assert op_work.conv_taps(8, 8, 3, 3, (1, 1), SAME) == 64 * 9 - 4 * 3 * 8 + 4 == 484
    # stride 2 over 128: TFLite pads 1 after, none before, so only the last output loses one
    assert op_work.valid_taps(128, 3, 2, SAME) == [3] * 63 + [2]
    assert op_work.valid_taps(5, 3, 1, VALID) == [3, 3, 3]
    assert op_work.valid_taps(7, 3, 2, VALID) == [3, 3, 3]
    assert op_work.spatial_axis(32, 3, 2, SAME) == (16, 0)
    with pytest.raises(ValueError, match="neither VALID nor SAME"):
        op_work.spatial_axis(8, 3, 1, 7)


def test_zoo_layers_work_by_hand(zoo):
    _, image, layers = zoo
    by_name = {layer.mobilenet: (image.ops[o], layer) for o, layer in enumerate(layers)
               if layer is not None}
    expected = {
        "Conv1": (op_work.MAC, (63 * 3 + 2) ** 2 * 3 * 16),            # 3x3 /2, 3 -> 16
        "expanded_conv_depthwise": (op_work.MAC, (62 * 3 + 4) ** 2 * 16),  # 64x64, C 16
        "block_2_depthwise": (op_work.MAC, (30 * 3 + 4) ** 2 * 48),    # 32x32, C 48
        "block_3_depthwise": (op_work.MAC, (15 * 3 + 2) ** 2 * 48),    # 32 -> 16, C 48
        "block_2_expand": (op_work.MAC, 32 * 32 * 8 * 48),
        "block_3_project": (op_work.MAC, 16 * 16 * 48 * 16),
        "Conv_1": (op_work.MAC, 4 * 4 * 112 * 1280),
        "predictions": (op_work.MAC, 1280 * 1000),
        "block_2_add": (op_work.ELEMENT, 32 * 32 * 8),                 # output elements
        "global_average_pooling2d": (op_work.ELEMENT, 4 * 4 * 1280),   # input elements
    }
    for name, work in expected.items():
        op, _ = by_name[name]
        assert op_work.op_work(image, op) == work, name
    assert (1751088, 424128, 106032) == (expected["Conv1"][1], expected["block_2_depthwise"][1],
                                         expected["block_3_depthwise"][1])
    dequantize = [op for op in image.ops if op.op_type == _ops.DEQUANTIZE]
    assert op_work.op_work(image, dequantize[0]) is None


def test_zoo_layers_have_mobilenet_shapes(zoo):
    """Every zoo layer named after a MobileNetV2 layer has a layer of that model's shapes"""
    _, image, layers = zoo
    mbv2 = _image.read_image(microtrain.convert(MBV2, new_head=10, int8_input=True).to_bytes())

    def signature(img, op):
        """op type, input, output, and a convolution's weight shape, strides and padding"""
        conv = op.op_type in (_ops.CONV2D_S8, _ops.DEPTHWISE_CONV2D_S8)
        return (op.op_type, img.tensors[op.inputs[0]].dims, img.tensors[op.outputs[0]].dims,
                (img.tensors[op.inputs[1]].dims, op.params[1:3]) if conv else None)

    model = {signature(mbv2, op) for op in mbv2.ops}
    checked = 0
    for op, layer in zip(image.ops, layers):
        if layer is None or layer.mobilenet is None or op.op_type == _ops.DENSE_S8:
            continue  # the float head; glue; the classifier (the fixture has no top)
        assert signature(image, op) in model, (layer, signature(image, op))
        checked += 1
    assert checked == 14
    assert [layer.kind for layer in layers if layer is not None and layer.readme] == \
        [int8_zoo.STEM, int8_zoo.POINTWISE_EXPAND, int8_zoo.DEPTHWISE_1,
         int8_zoo.POINTWISE_PROJECT, int8_zoo.ADD, int8_zoo.DEPTHWISE_2, int8_zoo.MEAN,
         int8_zoo.FULLY_CONNECTED]


def test_zoo_trains_on_the_host(zoo):
    image_bytes, _, _ = zoo
    with microtrain.TrainSession(image_bytes) as session:
        session.compile("sgd", "categorical_crossentropy", batch_size=1)
        plan = session.memory_plan()
        x = np.random.default_rng(0).integers(-128, 128, (1, 128, 128, 3)).astype(np.int8)
        loss = session.train_step(x, np.eye(10, dtype=np.float32)[:1])["loss"][0]
    assert np.isfinite(loss)
    assert plan["total_bytes"] < 256 * 1024  # the boards' 512 KiB of RAM hold it


@pytest.mark.parametrize("chain,category", [
    (["mt_q_scale_known", "mt_s8_requant_run", "mt_s8_requant_block"], "requantization"),
    (["mt_s8_saturate", "mt_s8_requant_run", "mt_s8_requant_block"], "requantization"),
    (["mt_q_fc_scale_narrow", "mt_s8_fc_requant_run", "mt_s8_fc_requant_block"],
     "requantization"),
    (["mt_q_requant_of", "mt_s8_requants", "dw_group_of"], "requantization"),
    (["mt_s8_word", "mt_s8_sum", "mt_s8_dense_rows"], "zero point (Σ W)"),
    (["__usada8", "mt_s8_sum", "mt_s8_dense_rows"], "zero point (Σ W)"),
    (["mt_s8_dot2x2_run"], "products"),
    (["mt_s8_dot4_pixels"], "products"),
    (["__smlabb", "dw_interior_tap", "dw_interior_pixels"], "products"),
    (["mt_s8_word", "dw_tap", "dw_sums", "dw_row_channels"], "depthwise edges"),
    (["copy_run", "conv_windows"], "window copies"),
    (["memset"], "window copies"),
    (["mt_s8_dw3_run"], "products"),
    (["mt_s8_dw3_channel", "dw3_row"], "products"),
    (["mt_s8_dw3_slot", "dw3_row"], "window copies"),
    (["mt_s8_dw3_copy_run"], "window copies"),
    (["mt_spatial_tap", "mt_spatial_in_bounds"], "loops and setup"),
    (["dw_row_channels"], "loops and setup"),
    (["?"], "loops and setup"),
])
def test_each_instruction_is_charged_by_its_inline_chain(chain, category):
    assert arm_int8_ops.category_of(chain) == category


def test_a_memcpy_outside_a_conv2d_is_setup():
    assert arm_int8_ops.category_of(["memcpy"], _ops.CONV2D_S8) == "window copies"
    assert arm_int8_ops.category_of(["memcpy"], _ops.DEPTHWISE_CONV2D_S8) == "loops and setup"
    # a DSP core's depthwise copies its rows into channel planes: that is its window copy
    assert arm_int8_ops.category_of(["mt_s8_dw3_slot"], _ops.DEPTHWISE_CONV2D_S8) == "window copies"


def fake_profile(image, skip=()):
    """forward counts of 10 instructions a unit of work per op (none for ``skip``), one
    category each"""
    forward, split = {}, {}
    for o, op in enumerate(image.ops):
        work = op_work.op_work(image, op)
        if o in skip or work is None:
            continue
        forward[o] = 10.0 * work[1]
        split[o] = {"products": forward[o]}
    return forward, split


def test_a_streamed_expansion_joins_its_depthwise_row(zoo):
    _, image, layers = zoo
    streamed = [o for o, layer in enumerate(layers) if layer is not None and
                layer.kind == int8_zoo.STREAMED]
    assert len(streamed) == 2 and image.ops[streamed[1]].op_type == _ops.DEPTHWISE_CONV2D_S8
    forward, split = fake_profile(image, skip=(streamed[0],))
    rows = arm_int8_ops.zoo_rows(image, layers, forward, {}, split)
    pair = [r for r in rows if r["kind"] == int8_zoo.STREAMED]
    assert len(pair) == 1 and pair[0]["mobilenet"] == "block_1_expand + block_1_depthwise"
    assert pair[0]["work"] == 64 * 64 * 8 * 48 + (31 * 3 + 2) ** 2 * 48
    assert pair[0]["shape"] == "64x64x8 -> 64x64x48 -> 32x32x48"
    assert len(rows) == 14  # every named layer, the pair as one, no glue, no float head
    # an op that ran nowhere and is not followed by a depthwise: the planner changed
    forward, split = fake_profile(image, skip=(0,))
    with pytest.raises(RuntimeError, match="ran in no region"):
        arm_int8_ops.zoo_rows(image, layers, forward, {}, split)


def fake_results(image, layers):
    forward, split = fake_profile(image, skip=(3,))
    rows = arm_int8_ops.zoo_rows(image, layers, forward, {}, split)
    return {board: {"core": arm_int8_ops.CORE_NAMES[core], "rows": rows, "total": 1.0}
            for board, core in zip(arm_int8_ops.BOARDS, ("cortex-m3", "cortex-m4f",
                                                          "cortex-m7", "cortex-m33",
                                                          "cortex-m55", "rv32imac",
                                                          "rv32imafc"))}


def test_summary_block_replaces_only_its_markers(zoo, tmp_path):
    _, image, layers = zoo
    block = arm_int8_ops.summary_block(fake_results(image, layers))
    table = [line for line in block.splitlines() if line.startswith("| ")]
    assert table[0].split(" | ")[4:] == ["M3", "M4F", "M7", "M33", "M55", "rv32imac",
                                         "rv32imafc |"]
    assert [line.split(" | ")[0][2:] for line in table[1:]] == \
        [arm_int8_ops.pretty(kind) for kind in int8_zoo.README_KINDS]
    assert "DepthwiseConv2D 3×3 stride 2 | block_3_depthwise | 32×32×48 → 16×16×48" in block
    assert "Mean | global_average_pooling2d | 4×4×1280 → 1280 | element" in block
    assert all(line.count("10.00") == 7 for line in table[1:])
    readme = tmp_path / "performance.md"
    readme.write_text("before\n%s\nold table\n%s\nafter\n" % (arm_int8_ops.BEGIN,
                                                             arm_int8_ops.END))
    arm_int8_ops.replace_block(str(readme), block)
    assert readme.read_text() == "before\n" + block + "\nafter\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- arm-int8-ops:begin -->"):
        arm_int8_ops.replace_block(str(readme), block)


def test_published_figures_convert_as_documented():
    rows = {name: row for name, *row in int8_published.executorch_rows()}
    _, _, macs, cycles, per = rows["features.0 (stem)"]
    assert macs == 335 * 335 * 3 * 32 and cycles == 13754047  # 224 -> 112, 3 -> 32
    assert per == pytest.approx(cycles / macs)
    assert rows["features.2 depthwise"][2] == 167 * 167 * 96
    assert rows["features.2 expand"][2] == 112 * 112 * 16 * 96
    tinyengine = {model: row for model, *row in int8_published.tinyengine_rows()}
    macs, cmsis, te, speedup = tinyengine["mcunet-in0"]
    assert cmsis == pytest.approx(51e-3 * 480e6 / 6.4e6) and te == pytest.approx(25e-3 * 480e6 / 6.4e6)
    assert speedup == pytest.approx(51 / 25)


def test_cmsis_nn_layer_table_is_the_zoo(zoo):
    """benchmarks/cmsis_nn_ops.py's C table: each measured zoo op once, at its region, with the
    padding before as TFLite's SAME puts it and the zero points of the image"""
    _, image, layers = zoo
    rows = dict(cmsis_nn_ops.layer_rows(image, layers))
    assert len(rows) == 15  # the 14 rows of the table, the streamed pair as its two ops
    assert rows[0] == "{CONV, 1, 128, 128, 3, 16, 3, 2, 0, 0, 64, 64, 0, -128}"
    assert rows[1] == "{DEPTHWISE, 4, 64, 64, 16, 16, 3, 1, 1, 1, 64, 64, -128, -128}"
    mean = [text for text in rows.values() if text.startswith("{AVERAGE_POOL")]
    assert mean == ["{AVERAGE_POOL, 43, 4, 4, 1280, 1280, 4, 1, 0, 0, 1, 1, -128, -128}"]
    text = cmsis_nn_ops.header(image, layers)
    assert "#define CMSIS_NN_FLASH_WEIGHT_BYTES 1280000u" in text
    assert int(text.split("CMSIS_NN_ARENA_BYTES ")[1].split("u")[0]) >= 64 * 64 * (8 + 48)
    fake = {"mps2-an500": {"core": "M7", "regions": {o: 100.0 * (o + 1) for o in rows}}}
    _, lines = cmsis_nn_ops.table(fake, image, layers)
    pair = [line for line in lines if line[0] == int8_zoo.STREAMED]
    assert len(lines) == 14 and len(pair) == 1
    work = 64 * 64 * 8 * 48 + (31 * 3 + 2) ** 2 * 48
    assert pair[0][3] == "%.2f" % ((400.0 + 500.0) / work)  # ops 3 and 4, summed
