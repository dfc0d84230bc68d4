"""A session opens a .tflite / .circle / .onnx file directly and exports the trained model
back to the same kinds of file, which the peers run with the session's own outputs."""

import os
import sys

import numpy as np
import pytest

import microtrain

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")


def fine_tuned(path, seed=0, steps=5):
    session = microtrain.TrainSession(path)
    shape = session.get_inputs_tensorinfo()[0]["shape"][1:]
    classes = session.get_outputs_tensorinfo()[0]["shape"][1:]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4,) + shape).astype(np.float32)
    y = rng.standard_normal((4,) + classes).astype(np.float32)
    session.compile("sgd", "mse", batch_size=4)
    before = session.infer(x)[0]
    for _ in range(steps):
        session.train_step(x, y)
    after = session.infer(x)[0]
    assert not np.array_equal(before, after)
    return session, x, after


def test_a_tflite_file_trains_and_exports_back_for_litert(tmp_path):
    session, x, outputs = fine_tuned(peers.fixture("tf_mlp.tflite"))
    for name in ("trained.tflite", "trained.circle"):
        session.export_model_for_inference(str(tmp_path / name))
    exported = peers.run_litert(str(tmp_path / "trained.tflite"), x)
    np.testing.assert_allclose(exported, outputs, rtol=peers.RTOL, atol=peers.ATOL)
    again = microtrain.TrainSession(str(tmp_path / "trained.circle"))  # and reads its own
    np.testing.assert_allclose(again.infer(x)[0], outputs, rtol=peers.RTOL, atol=peers.ATOL)
    assert [n for n in os.listdir(tmp_path) if n.endswith(".mt-tmp")] == []


def test_an_onnx_file_trains_and_exports_back_for_onnxruntime(tmp_path):
    session, x, outputs = fine_tuned(peers.fixture("torch_mlp.onnx"))
    session.export_model_for_inference(str(tmp_path / "trained.onnx"))
    exported = peers.run_onnxruntime(str(tmp_path / "trained.onnx"), x)
    np.testing.assert_allclose(exported, outputs, rtol=peers.RTOL, atol=peers.ATOL)
    session.export_model_for_inference(str(tmp_path / "trained.mtm"))  # .mtm as before
    assert microtrain.TrainSession(str(tmp_path / "trained.mtm")).infer(x)[0].shape == \
        outputs.shape


def test_a_foreign_file_reads_like_its_bytes_and_a_bad_one_is_refused(tmp_path):
    data, _, _ = peers.sessions_of_path_and_bytes("tf_mlp.tflite")
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(data[:100])
    with pytest.raises(ValueError):
        microtrain.TrainSession(str(broken))


@pytest.mark.parametrize("name", ["tf_mlp.tflite", "tf_cnn_bn.tflite", "torch_cnn_bn.onnx",
                                  "keras/har_flatten_int8.tflite",
                                  "keras/har_conv1d_hybrid.tflite"])
def test_corrupt_foreign_files_raise_value_error_never_anything_else(name):
    with open(peers.fixture(name), "rb") as handle:
        data = handle.read()
    rng = np.random.default_rng(7)
    for trial in range(60):
        broken = bytearray(data)
        if trial % 2:
            broken = broken[:int(rng.integers(8, len(data)))]
        else:
            for position in rng.integers(8, len(data), 4):
                broken[position] ^= 1 << int(rng.integers(0, 8))
        try:
            microtrain.convert(bytes(broken), format=name.rsplit(".", 1)[1])
        except ValueError:
            pass  # ConversionError, or the core refusing the image


def test_firmware_sources_hold_the_converted_image(tmp_path, capsys):
    """`microtrain firmware --sources-only --model model.tflite` reads the file as a session
    does; the C sources hold the converted .mtm (tests/boards/test_board_imported.py runs
    such a firmware under QEMU against the host)."""
    import re
    from microtrain.tools import firmware
    path = peers.fixture("tf_mlp.tflite")
    rng = np.random.default_rng(1)
    np.savez(str(tmp_path / "d.npz"), x=rng.standard_normal((20, 16)).astype(np.float32),
             y=np.eye(4, dtype=np.float32)[rng.integers(0, 4, 20)])
    assert firmware.main(["--sources-only", "--model", path, "--data", str(tmp_path / "d.npz"),
                          "--out", str(tmp_path / "fw")]) == 0
    with open(str(tmp_path / "fw" / "data" / "mt_firmware_data.c")) as handle:
        body = handle.read().split("= {", 1)[1].split("};", 1)[0]
    written = bytes(int(b, 16) for b in re.findall(r"0x([0-9a-f]{2}),", body))
    assert written == microtrain.convert(path).to_bytes()
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(open(path, "rb").read()[:100])
    assert firmware.main(["--sources-only", "--model", str(broken), "--data",
                          str(tmp_path / "d.npz"), "--out", str(tmp_path / "fw2")]) == 2
    assert "microtrain firmware: error:" in capsys.readouterr().err
