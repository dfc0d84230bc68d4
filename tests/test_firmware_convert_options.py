"""`microtrain firmware` on an imported int8 model: --train-from, --new-head, --int8-after,
--int8-train (with --int8-master-weights), --int8-head and
--int8-input convert the file as ``microtrain.convert`` does with the options of the same
names, and int8 input rows of any length (MLPerf Tiny's keyword spotter: 49 x 10 x 1 = 490
bytes) are packed back to back into the C sources (--sources-only: no toolchain). The same
firmware built and run under QEMU: tests/boards/test_board_int8.py.
"""

import json
import os
import re

import numpy as np
import pytest

import microtrain
from microtrain.tools import firmware

pytest.importorskip("tflite", reason="converting .tflite needs microtrain[convert]")

HERE = os.path.dirname(os.path.abspath(__file__))
KWS = os.path.join(os.path.dirname(HERE), "examples", "models", "mlperf_tiny",
                   "kws_ref_model.tflite")


def keyword_rows(folder, rows=6, classes=5, seed=0):
    """int8 rows of KWS's input (49 x 10 x 1 MFCC frames, 490 bytes) and one-hot targets."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (rows, 49, 10, 1)).astype(np.int8)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, rows)]
    path = os.path.join(str(folder), "keywords.npz")
    np.savez(path, x=x, y=y)
    return path, x


def c_array(source, name, kind):
    """The values of ``const <kind> <name>[...] = {...};`` in a generated source."""
    body = source.split("const %s %s[" % (kind, name))[1].split("{", 1)[1].split("};")[0]
    return [int(v, 16) for v in re.findall(r"0x([0-9a-f]+)", body)]


def sources_only(tmp_path, data, *options):
    out = str(tmp_path / "fw")
    status = firmware.main(["--sources-only", "--model", KWS, "--data", data, "--out", out,
                            "--epochs", "1", "--batch-size", "4", "--loss", "cce",
                            "--optimizer", "adam"] + list(options))
    return status, out


@pytest.mark.parametrize("options,convert_options", [
    (["--new-head", "5"], {"new_head": 5}),
    (["--train-from", "dense", "--new-head", "5"], {"train_from": "dense", "new_head": 5}),
    (["--train-from", "6", "--int8-after"], {"train_from": 6, "int8_after": True}),
    (["--train-from", "conv2d_4", "--int8-train", "--int8-master-weights", "--optimizer", "sgd"],
     {"train_from": "conv2d_4", "int8_train": True, "int8_master_weights": True}),
    (["--new-head", "5", "--int8-head", "--optimizer", "sgd"], {"new_head": 5, "int8_head": True}),
])
def test_int8_model_options_and_490_byte_rows(tmp_path, options, convert_options):
    data, x = keyword_rows(tmp_path, classes=convert_options.get("new_head", 12))
    status, out = sources_only(tmp_path, data, *options)
    assert status == 0
    with open(os.path.join(out, "firmware.json")) as handle:
        record = json.load(handle)
    assert record["conversion"] == convert_options
    with open(os.path.join(out, "data", "mt_firmware_data.c")) as handle:
        source = handle.read()
    with open(os.path.join(out, "data", "mt_firmware_data.h")) as handle:
        header = handle.read()
    # the image the C sources hold is microtrain.convert's with the same options
    expected = microtrain.convert(KWS, **convert_options).to_bytes()
    assert bytes(c_array(source, "mt_fw_model", "uint8_t")) == expected
    # 6 rows of 490 bytes back to back: 735 words, row r at byte 490 r
    assert "#define MT_FW_INPUT_ROW_BYTES 490 " in header
    assert "#define MT_FW_INPUT_INT8 1 " in header
    assert "#define MT_FW_TRAIN_X_WORDS 735 " in header
    words = np.array(c_array(source, "mt_fw_train_x", "uint32_t"), dtype="<u4")
    assert words.tobytes() == x.tobytes()
    assert record["host_reference"]["epochs"][0]["total"] == len(x)


def test_int8_rows_pad_the_last_word(tmp_path):
    """5 rows of 490 bytes end mid-word: the last word is completed with zero bytes."""
    data, x = keyword_rows(tmp_path, rows=5, classes=3)
    status, out = sources_only(tmp_path, data, "--new-head", "3")
    assert status == 0
    with open(os.path.join(out, "data", "mt_firmware_data.c")) as handle:
        words = np.array(c_array(handle.read(), "mt_fw_train_x", "uint32_t"), dtype="<u4")
    assert len(words) == 613 and words.tobytes() == x.tobytes() + bytes(2)


def test_train_from_takes_a_name_or_an_op_index(tmp_path, monkeypatch):
    """A number is an op index (passed on as an int), anything else a layer name."""
    seen = []
    real = microtrain.convert.convert

    def spy(path, **options):
        seen.append(options)
        return real(path, new_head=options.get("new_head"))
    monkeypatch.setattr(microtrain.convert, "convert", spy)
    data, _ = keyword_rows(tmp_path)
    for value, expected in (("12", 12), ("-2", -2), ("dense", "dense"), ("block_15", "block_15")):
        assert sources_only(tmp_path, data, "--train-from", value, "--new-head", "5")[0] == 0
        assert seen[-1] == {"train_from": expected, "new_head": 5}


def test_conversion_options_refusals_are_one_line(tmp_path, capsys):
    data, _ = keyword_rows(tmp_path)
    status, _ = sources_only(tmp_path, data, "--train-from", "no_such_layer")
    assert status == 2
    err = capsys.readouterr().err
    assert "no operator is named 'no_such_layer'" in err and \
        len(err.strip().splitlines()) == 1
    image = str(tmp_path / "kws.mtm")
    microtrain.convert(KWS).save(image)
    status = firmware.main(["--sources-only", "--model", image, "--data", data, "--out",
                            str(tmp_path / "o"), "--new-head", "5"])
    assert status == 2
    assert "already converted: --new-head apply when converting" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        sources_only(tmp_path, data, "--new-head", "1")
    assert caught.value.code == 2
    assert "a number of classes >= 2, got '1'" in capsys.readouterr().err
