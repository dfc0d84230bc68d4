"""The ``microtrain`` command and its subcommands on hostile input (issue 45, items 10-11):
each case in a process of its own under a 4 GiB address-space cap (hostile_process.py) must
end within the timeout with one clean line naming the problem (exit status 2 for a bad
argument, 1 or 2 for a bad file as each subcommand reports it), under 1 GiB, with nothing in
its folder lost, replaced or left behind.

* Named pipes: every file a command reads or writes is opened by ``microtrain._files``
  (O_NONBLOCK, fstat), so a FIFO given as ``firmware --data/--model``, ``micropython SCRIPT``
  or ``--data``, ``predict --output``, ``fleet --model/--data`` or ``convert IN`` is refused
  before it can block.
* Arguments: ranges are checked while the command line is parsed (``microtrain._arguments``),
  boards against the one board list (the source tree's presets for ``firmware``, the
  MicroPython boards for ``fleet``).
* Data sets: a file that is not an .npz, or holds Python objects, is refused by microtrain's
  words, never numpy's advice to unpickle.
"""

import os
import pickle

import numpy as np
import pytest

import microtrain
from microtrain import layers

from hostile_process import assert_clean_refusal, python, run_capped, snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with a good model, data set and rows, a FIFO, and files that are not what
    their flag wants."""
    folder = tmp_path_factory.mktemp("hostile_cli")
    microtrain.Sequential([layers.Dense(3), layers.Softmax()], input_shape=(4,),
                          seed=0).save(str(folder / "m.mtm"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 12)]
    np.savez(str(folder / "d.npz"), x=x, y=y)
    x.tofile(str(folder / "x.bin"))
    y.tofile(str(folder / "y.bin"))
    (folder / "pickled.npz").write_bytes(pickle.dumps({"x": x, "y": y}))
    np.savez(str(folder / "objects.npz"), x=np.array([1, {}], dtype=object), y=y)
    np.savez(str(folder / "misfit.npz"), x=x[:, :3], y=y)
    (folder / "script.py").write_text("print('hello')\n")
    os.mkfifo(str(folder / "pipe"))
    return folder


def microtrain_command(folder, *arguments, **options):
    """``python -m microtrain ARGUMENTS`` in ``folder``, capped; checks that the folder is
    unchanged afterwards."""
    before = snapshot(str(folder))
    environment = dict(os.environ, MICROTRAIN_SOURCE_DIR=ROOT)
    outcome = run_capped(python("-m", "microtrain") + [str(a) for a in arguments],
                         env=environment, cwd=str(folder), **options)
    assert snapshot(str(folder)) == before, "the command changed its folder: %r" % outcome
    return outcome


def refused_case(folder, case, status):
    """Runs a case of a table of refusals, (arguments, words the error names), and checks it
    was refused cleanly with ``status``; returns the outcome and its stderr lines."""
    arguments, words = case
    outcome = microtrain_command(folder, *arguments)
    return outcome, assert_clean_refusal(outcome, status, words)


FIFO_CASES = {
    "firmware --data": (["firmware", "--sources-only", "--model", "m.mtm", "--data", "pipe",
                         "--out", "out"], 2),
    "firmware --model": (["firmware", "--sources-only", "--model", "pipe", "--data", "d.npz",
                          "--out", "out"], 2),
    "micropython SCRIPT": (["micropython", "--board", "unix", "pipe"], 2),
    "micropython --data": (["micropython", "--board", "unix", "--data", "pipe=/data/x.bin",
                            "script.py"], 2),
    "predict --output": (["predict", "m.mtm", "--x", "x.bin", "--output", "pipe"], 1),
    "fleet --model": (["fleet", "--model", "pipe", "--data", "d.npz", "--clients", "2",
                       "--rounds", "1"], 1),
    "fleet --data": (["fleet", "--model", "m.mtm", "--data", "pipe", "--clients", "2",
                      "--rounds", "1"], 1),
    "convert IN": (["convert", "pipe", "-o", "out.mtm"], 1),
    "convert -o": (["convert", "m.mtm", "-o", "pipe.tflite"], 1),
    "info MODEL": (["info", "pipe"], 1),
}


@pytest.mark.parametrize("case", sorted(FIFO_CASES))
def test_a_named_pipe_is_refused_before_it_can_block(folder, case):
    arguments, status = FIFO_CASES[case]
    if case == "convert -o":  # an export: the output's extension says the format
        arguments = ["convert", "m.mtm", "-o", "pipe.tflite"]
        os.mkfifo(str(folder / "pipe.tflite"))
    try:
        outcome = microtrain_command(folder, *arguments)
    finally:
        if case == "convert -o":
            os.unlink(str(folder / "pipe.tflite"))
    assert_clean_refusal(outcome, status, "named pipe (FIFO)")


ARGUMENT_CASES = {
    "fleet --fraction 2": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--fraction", "2"],
                           "--fraction"),
    "fleet --fraction 0": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--fraction", "0"],
                           "--fraction"),
    "fleet --cpus 0": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--cpus", "0"],
                       "--cpus"),
    "fleet --client-cpus 3 of 2": (["fleet", "--model", "m.mtm", "--data", "d.npz",
                                    "--client-cpus", "3"], "client_cpus"),
    "fleet --rounds -1": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--rounds", "-1"],
                          "--rounds"),
    "fleet --arena -1": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--arena", "-1"],
                         "--arena"),
    "fleet --device-clients 9 of 2": (["fleet", "--model", "m.mtm", "--data", "d.npz",
                                       "--clients", "2", "--device-clients", "9"],
                                      "device client 9 is not a client"),
    "fleet --board bogus": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--board",
                             "bogus"], "--board"),
    "fleet --learning-rate nan": (["fleet", "--model", "m.mtm", "--data", "d.npz",
                                   "--learning-rate", "nan"], "--learning-rate"),
    "micropython --timeout -1": (["micropython", "--board", "unix", "--timeout", "-1",
                                  "script.py"], "--timeout"),
    "firmware --board bogus": (["firmware", "--board", "bogus", "--model", "m.mtm", "--data",
                                "d.npz", "--out", "out"], "unknown board 'bogus'"),
    "firmware --epochs 0": (["firmware", "--sources-only", "--model", "m.mtm", "--data",
                             "d.npz", "--out", "out", "--epochs", "0"], "--epochs"),
    "firmware --timeout inf": (["firmware", "--board", "host", "--model", "m.mtm", "--data",
                                "d.npz", "--out", "out", "--timeout", "inf"], "--timeout"),
}


@pytest.mark.parametrize("case", sorted(ARGUMENT_CASES))
def test_a_bad_argument_is_refused_while_parsing(folder, case):
    outcome, lines = refused_case(folder, ARGUMENT_CASES[case], 2)
    assert len(lines) <= 3, outcome  # argparse's usage lines at most, then the error


def test_firmware_board_names_the_presets_of_the_one_board_list(folder):
    outcome = microtrain_command(folder, "firmware", "--board", "bogus", "--model", "m.mtm",
                                 "--data", "d.npz", "--out", "out")
    assert "mps2-an385" in outcome.stderr and "host" in outcome.stderr, outcome
    assert "cannot find the microtrain source tree" not in outcome.stderr


@pytest.mark.parametrize("data, words", [("pickled.npz", "is not an .npz archive"),
                                         ("objects.npz", "holds Python objects"),
                                         ("x.bin", "is not an .npz archive")])
def test_a_data_set_that_is_not_an_npz_of_numbers_is_refused_in_our_words(folder, data, words):
    for command in (["firmware", "--sources-only", "--model", "m.mtm", "--data", data,
                     "--out", "out"],
                    ["fleet", "--model", "m.mtm", "--data", data, "--clients", "2",
                     "--rounds", "1"]):
        outcome = microtrain_command(folder, *command)
        assert_clean_refusal(outcome, 2 if command[0] == "firmware" else 1, words, data)
        assert "allow_pickle" not in outcome.stderr, outcome


OUTPUT_CASES = {
    "predict --output into no folder": (["predict", "m.mtm", "--x", "x.bin", "--output",
                                         "none/out.npy"], "no folder none"),
    "train --checkpoint onto a FIFO": (["train", "m.mtm", "--x", "x.bin", "--y", "y.bin",
                                        "--checkpoint", "pipe"], "named pipe"),
    "train --export onto a folder": (["train", "m.mtm", "--x", "x.bin", "--y", "y.bin",
                                      "--export", "."], "directory"),
    "info --plot onto a FIFO": (["info", "m.mtm", "--plot", "pipe"], "named pipe"),
    "fleet --plot onto a FIFO": (["fleet", "--model", "m.mtm", "--data", "d.npz", "--clients",
                                  "2", "--rounds", "1", "--plot", "pipe"], "named pipe"),
}


@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_an_output_that_cannot_be_written_is_refused_before_the_work(folder, case):
    """Training, a fleet or a plot is not run only to fail at its last write."""
    outcome, _ = refused_case(folder, OUTPUT_CASES[case], 1)
    assert outcome.stdout == "", outcome  # nothing ran: no epochs, tables or rounds


def test_micropython_refuses_a_script_or_data_larger_than_a_board_takes(folder):
    """A 2 MiB script (1 MiB at most: it is compiled on the board) and 17 MiB of --data (16
    MiB at most: the boards' PSRAM for them) are refused before they are read."""
    with open(str(folder / "big.py"), "wb") as handle:
        handle.truncate(2 << 20)
    with open(str(folder / "big.bin"), "wb") as handle:
        handle.truncate(17 << 20)
    try:
        for arguments, words in ((["big.py"], "more than the 1048576 allowed"),
                                 (["--data", "big.bin=/data/big.bin", "script.py"],
                                  "more than the 16 MiB")):
            outcome = microtrain_command(folder, "micropython", "--board", "unix", *arguments)
            assert_clean_refusal(outcome, 2, words)
    finally:
        os.unlink(str(folder / "big.py"))
        os.unlink(str(folder / "big.bin"))


def test_a_fleet_refuses_a_model_or_data_every_client_would_fail_on_before_ray(folder):
    """Rows of the wrong shape, a corrupt model, an arena smaller than the plan: one line
    before the simulation starts (it ran every round with every client dropped, or failed
    inside the simulation)."""
    (folder / "garbage.mtm").write_bytes(b"MTM1" + bytes(60))
    try:
        for model, data, words, more in (
                ("m.mtm", "misfit.npz", "the model takes rows of shape (4,)", []),
                ("garbage.mtm", "d.npz", "mt_model_check", []),
                ("m.mtm", "d.npz", "cannot hold a client's plan", ["--arena", "100"])):
            outcome = microtrain_command(folder, "fleet", "--model", model, "--data", data,
                                         "--clients", "2", "--rounds", "1", *more)
            assert_clean_refusal(outcome, 1, words)
            assert "fleet: 2 clients" not in outcome.stdout, outcome  # Ray never started
    finally:
        (folder / "garbage.mtm").unlink()


def test_an_npz_whose_headers_lie_is_refused_before_it_is_decompressed(folder, tmp_path):
    """A member declaring 2**40 float32 values (4 TiB) in a 200-byte archive, and an
    archive that unpacks to more than the limit: refused from their headers."""
    import io
    import zipfile
    from microtrain import _array_files
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (1 << 40,)})
    with zipfile.ZipFile(str(tmp_path / "liar.npz"), "w") as archive:
        archive.writestr("x.npy", header.getvalue() + b"\0" * 64)
        archive.writestr("y.npy", header.getvalue())
    with pytest.raises(ValueError, match="header describes"):
        _array_files.load_npz(str(tmp_path / "liar.npz"))
    with zipfile.ZipFile(str(tmp_path / "bomb.npz"), "w", zipfile.ZIP_DEFLATED) as archive:
        big = io.BytesIO()
        np.save(big, np.zeros(1 << 20, np.float32))  # 4 MiB of zeros, ~4 KiB deflated
        archive.writestr("x.npy", big.getvalue())
    with pytest.raises(ValueError, match="unpacks to"):
        _array_files.load_npz(str(tmp_path / "bomb.npz"), limit=1 << 20)
    outcome = run_capped(python("-c", "from microtrain import _array_files; "
                                "_array_files.load_npz(%r)" % str(tmp_path / "liar.npz")))
    assert outcome.status == 1 and "ValueError" in outcome.stderr, outcome
    assert outcome.peak_bytes < 1 << 30, outcome
