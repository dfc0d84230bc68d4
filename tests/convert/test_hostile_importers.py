"""Hostile and careless model files against the importers (issue 45, the importers' part;
docs/hostile_importers.md says what each surface promises). Every case of hostile_cases.py
is converted in a child process with a 4 GiB address-space cap and a timeout: each must be
refused by a ConversionError whose message names the node, operator or part of the file
at fault, and the whole run must stay under 1 GiB. Valid files that were refused or
written as images the core rejected must give what their runtime computes."""

import json
import os
import resource
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError
from microtrain.convert import ConversionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_cases  # noqa: E402
import peers  # noqa: E402

pytest.importorskip("onnx")
pytest.importorskip("tflite")

ADDRESS_SPACE = 4 << 30
PEAK_RSS = 1 << 30
HERE = os.path.dirname(os.path.abspath(__file__))


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _child(script, *args, timeout=300):
    """Run ``script`` in a child (address space capped); its stdout's JSON lines."""
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(script)] + list(args),
                           capture_output=True, text=True, timeout=timeout,
                           preexec_fn=_limited, cwd=HERE)
    assert child.returncode == 0, child.stderr[-3000:]
    return [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]


CONVERT_EACH = """
    import json, re, resource, sys, time
    import hostile_cases, microtrain
    from microtrain.convert import ConversionError
    directory = sys.argv[1]
    for name, (file_name, make, expected) in sorted(hostile_cases.CASES.items()):
        path = directory + "/" + file_name
        with open(path, "wb") as handle:
            handle.write(make())
        start = time.time()
        try:
            microtrain.convert(path)
            outcome, text = "converted", ""
        except ConversionError as error:
            outcome, text = "refused", str(error)
        except BaseException as error:
            outcome, text = type(error).__name__, str(error)
        print(json.dumps({"name": name, "outcome": outcome, "message": text,
                          "expected": expected, "seconds": time.time() - start}), flush=True)
    print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def test_hostile_files_are_refused_by_name_within_a_memory_and_time_budget(tmp_path):
    """Constant folding that would fill gigabytes, a Loop of 10^12 iterations, a graph
    that is not SSA, corrupt quantization, indices out of range, a flatbuffer that names
    one vector from every tensor: each a ConversionError naming the part, in one process
    that never passes 1 GiB (before the budgets, single cases took 1.6 to 2.4 GiB, and
    the Loop ran for ever)."""
    results = _child(CONVERT_EACH, str(tmp_path))
    peak = results.pop()["peak_kib"] * 1024
    import re
    assert sorted(r["name"] for r in results) == sorted(hostile_cases.CASES)
    for result in results:
        assert result["outcome"] == "refused", result
        assert re.search(result["expected"], result["message"]), result
    assert peak < PEAK_RSS, "the run reached %d MiB" % (peak >> 20)


def test_a_truncated_int8_file_is_a_conversion_error_for_a_session(tmp_path):
    path = tmp_path / "truncated.tflite"
    path.write_bytes(hostile_cases.tflite_int8_truncated())
    with pytest.raises(ConversionError, match=r"truncated or corrupt: Model\."):
        microtrain.TrainSession(str(path))
    with pytest.raises(ConversionError, match=r"truncated or corrupt: Model\."):
        microtrain.TrainSession(path.read_bytes())


def _run_peer(data, x):
    """Every output of the source runtime on ``x``: ONNX Runtime or LiteRT's reference."""
    if data[4:8] != b"TFL3":
        import onnxruntime
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        return session.run(None, {session.get_inputs()[0].name: x})
    from tflite_int8_builder import run_reference
    return run_reference(data, [x])


@pytest.mark.parametrize("name", ["onnx_output_twice", "tflite_output_twice"])
def test_an_output_listed_twice_gives_both_as_the_source_runtime_does(name):
    data = hostile_cases.VALID[name][1]()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    expected = _run_peer(data, x)
    with microtrain.TrainSession(microtrain.convert(data).to_bytes()) as session:
        session.compile("sgd", "mse", batch_size=3)
        outputs = session.infer(x)
    assert len(outputs) == len(expected) == 2
    for ours, theirs in zip(outputs, expected):
        np.testing.assert_array_equal(ours, theirs)


def test_a_fully_connected_without_options_takes_the_defaults_as_litert_does():
    data = hostile_cases.tflite_dense_without_options()
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    expected = peers.run_litert(data, x, reference=True)
    np.testing.assert_allclose(peers.microtrain_infer(microtrain.convert(data), x), expected,
                               rtol=peers.RTOL, atol=peers.ATOL)


def test_onnx_bytes_open_a_session_as_the_path_does(tmp_path):
    _, by_path, by_bytes = peers.sessions_of_path_and_bytes("torch_mlp.onnx")
    assert by_bytes.get_inputs_tensorinfo() == by_path.get_inputs_tensorinfo()
    # bytes that merely start like a protobuf are no ONNX model: the core refuses them
    for garbage in (b"\x08" + os.urandom(63), b"\x08\x07" + bytes(30)):
        with pytest.raises(MicrotrainError):
            microtrain.TrainSession(garbage)


CONVERT_COMMAND = """
    import json, sys
    from microtrain.tools import cli
    status = cli.main(["convert", sys.argv[1], "-o", sys.argv[2]])
    print(json.dumps({"status": status}))
"""


def test_the_convert_command_refuses_devices_fifos_and_hostile_files(tmp_path):
    """`microtrain convert` reads its input as the other commands do: a FIFO or a device
    is refused before a byte is read (it once read /dev/zero to 5.9 GiB); a hostile file
    is one line of error; the output file is never touched."""
    output = tmp_path / "out.mtm"
    output.write_bytes(b"kept")
    fifo = tmp_path / "model.onnx"
    os.mkfifo(str(fifo))
    hostile = tmp_path / "fill.onnx"
    hostile.write_bytes(hostile_cases.onnx_constant_of_shape())
    for source, words in (("/dev/zero", "character device"), (str(fifo), "named pipe"),
                          (str(hostile), "ConstantOfShape 'fill'")):
        child = subprocess.run([sys.executable, "-c", textwrap.dedent(CONVERT_COMMAND),
                                source, str(output)], capture_output=True, text=True,
                               timeout=300, preexec_fn=_limited, cwd=HERE)
        assert json.loads(child.stdout.splitlines()[-1])["status"] == 1, child.stderr
        assert child.stderr.startswith("microtrain: error: ") and words in child.stderr, \
            child.stderr
        assert "internal error" not in child.stderr
        assert output.read_bytes() == b"kept"
    assert stat.S_ISFIFO(os.stat(str(fifo)).st_mode)
