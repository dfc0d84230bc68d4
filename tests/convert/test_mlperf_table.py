"""Every column of the MLPerf Tiny table (docs/importers.md; the README shows a summary),
per model, as benchmarks/mlperf_tiny.py measures it (the same functions): the file imports; its int8 activations are LiteRT's
reference kernels' bits on 200 inputs over the whole int8 range (float files: its outputs
within float rounding); the model's own head fine-tunes; the arena of the head and of the
last block are plans that train exactly the layers the table names; the fine-tuned model
exports to a .tflite LiteRT runs with the session's outputs. The board column is
tests/boards/test_board_mlperf.py.
"""

import os
import sys

import numpy as np
import pytest

import microtrain

pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
import mlperf_tiny as table  # noqa: E402

NAMES = table.NAMES
INT8 = [name for name in NAMES if table.kind_of(name) == "int8"]
NOT_INT8 = [name for name in NAMES if name not in INT8]
IDS = [name.split(".")[0] for name in NAMES]

def output_scale(name):
    """LiteRT's output quantization step of an int8 file (its int8 output or the tensor its
    DEQUANTIZE reads)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=table.path_of(name))
    details = interpreter.get_output_details()[0]
    scale = details["quantization"][0]
    if scale == 0:  # a float output: the DEQUANTIZE's input
        dequantize = [op for op in interpreter._get_ops_details()
                      if details["index"] in op["outputs"]][0]
        scale = interpreter.get_tensor_details()[dequantize["inputs"][0]]["quantization"][0]
    return scale


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_imports(name):
    """Column "imports": the file converts, with LiteRT's input and output shapes, and
    says what it did with an int8 or dynamic-range file."""
    from ai_edge_litert.interpreter import Interpreter
    result = table.imports(name)
    assert result["ok"], result
    interpreter = Interpreter(model_path=table.path_of(name))
    assert [tuple(d["shape"][1:]) for d in interpreter.get_input_details()] == \
        [tuple(s) for s in result["inputs"]]
    assert [tuple(d["shape"][1:]) for d in interpreter.get_output_details()] == \
        [tuple(s) for s in result["outputs"]]
    notes = " ".join(result["notes"])
    kind = table.kind_of(name)
    assert ("int8 model:" in notes) == (kind == "int8")
    assert ("dynamic-range quantized" in notes) == (kind == "hybrid")


@pytest.mark.parametrize("name", INT8, ids=[n.split(".")[0] for n in INT8])
def test_int8_activations_equal_litert_reference_kernels(name):
    """Column "LiteRT", int8 files: on 200 inputs spanning the int8 range every int8
    activation the core computes (all but the classifiers' int8 SOFTMAX, which runs in
    float) is BUILTIN_REF's, bit for bit, and the float output is within one step of
    LiteRT's int8 output (exact where no op runs in float)."""
    result = table.litert_difference(name, inputs=200)
    assert result["activations"] >= 10 and result["values"] > 200 * 10
    assert result["float_from"] in (None, "SOFTMAX")
    assert result["differing_ops"] == [], result["differing_ops"]
    assert result["differing"] == 0
    if result["float_from"] is None:
        assert result["output_max_abs"] == 0
    else:
        assert result["output_max_abs"] <= output_scale(name) * (1 + 1e-6)


@pytest.mark.parametrize("name", NOT_INT8, ids=[n.split(".")[0] for n in NOT_INT8])
def test_float_outputs_are_litert_s_within_float_rounding(name):
    """Column "LiteRT", float files: the outputs within 1e-5 of the largest of
    BUILTIN_REF's; dynamic-range files: the float32 file of the dequantized weights
    likewise, and LiteRT's own hybrid kernels near (they quantize every activation on the
    fly), a classifier's top class the same."""
    result = table.litert_difference(name)
    if result["kind"] == "float":
        assert result["max_relative"] <= table.FLOAT_TOLERANCE, result
        return
    assert result["dequantized_max_relative"] <= table.FLOAT_TOLERANCE, result
    assert result["hybrid_max_abs"] > 0  # not the same arithmetic: a documented distance
    if "same_top_class" in result:
        assert result["same_top_class"] == result["inputs"]


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_the_head_fine_tunes(name):
    """Column "head fine-tunes": the model's own last layer with weights, alone, lowers
    the loss at every step of the synthetic task."""
    result = table.fine_tune(name)
    head = table.operators(name)[table.head_index(name)]["name"]
    assert result["layers"] == [head]
    losses = result["losses"]
    assert np.all(np.isfinite(losses)) and all(b < a for a, b in zip(losses, losses[1:]))


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_arena_of_the_head_and_of_the_last_block(name):
    """Columns "arena": the plans at batch 1 train exactly the layers the table names (the
    head; the last block from its first layer to the head), the block's more bytes than the
    head's, and a session steps at batch 1 in each."""
    result = table.arena(name)
    head = table.operators(name)[table.head_index(name)]["name"]
    assert result["head"]["layers"] == [head]
    block = result["block"]["layers"]
    assert block[0] == table.block_start(name) and block[-1] == head and len(block) >= 2
    assert 0 < result["head"]["bytes"] < result["block"]["bytes"]
    assert (result["head"]["int8_bytes"] > 0) == (table.kind_of(name) == "int8")
    for part, model in (("head", table.head_model(name)), ("block", table.block_model(name))):
        x = table.task_rows(name, 1, seed=4)
        with microtrain.TrainSession(model) as session:
            table.compiled(session, name, 1)
            assert session.memory_plan()["total_bytes"] == result[part]["bytes"]
            loss = session.train_step(x, table.task_targets(name, model, x))["loss"][0]
        assert np.isfinite(loss)


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_export_round_trip(name, tmp_path):
    """Column "export round trip": the fine-tuned head exported to .tflite, BUILTIN_REF
    gives the session's outputs within 1e-6 of the largest; an int8 file's int8 operators
    are the file's, byte for byte."""
    result = table.export_round_trip(name, str(tmp_path))
    assert result["trained"]
    assert result["max_relative"] <= table.EXPORT_TOLERANCE, result
    assert table.export_cell(result).startswith("yes: ")
    if table.kind_of(name) == "int8":
        assert result["int8_ops_kept"] > 0 and result["int8_ops_equal"]


def test_the_table_block_is_replaced_whole_and_only_between_its_markers():
    text = "intro\n%s\nold | table\n%s\nafter\n" % (table.BEGIN, table.END)
    assert table.replace_block(text, "| new |", "README.md") == \
        "intro\n%s\n| new |\n%s\nafter\n" % (table.BEGIN, table.END)
    for broken in ("no markers", table.END + table.BEGIN, table.BEGIN * 2 + table.END):
        with pytest.raises(ValueError, match="needs one"):
            table.replace_block(broken, "| new |", "README.md")
    with open(table.IMPORTERS_DOC) as handle:  # the committed page has them
        table.replace_block(handle.read(), "", table.IMPORTERS_DOC)
