"""The ``microtrain`` command, run as a user runs it (a subprocess): onert_train's flags
and layout, checkpoints and export, info tables, and one-line errors without tracebacks."""

import os
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import microtrain
import microtrain.tools
from microtrain import layers
from microtrain.tools import cli
from small_models import saved_classifier

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(microtrain.__file__)))


def run(*arguments, cwd=None):
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (PACKAGE_PARENT, environment.get("PYTHONPATH")) if p)
    environment.pop("MICROTRAIN_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "microtrain"] + [str(a) for a in arguments],
                          env=environment, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 8 -> 16 -> 3 softmax classifier and 50 raw samples of three clusters."""
    directory = tmp_path_factory.mktemp("cli")
    saved_classifier(directory / "model.mtm", 16)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 50)
    x = (np.eye(3, 8)[labels] * 2 + 0.5 * rng.standard_normal((50, 8))).astype("<f4")
    x.tofile(directory / "x.bin")
    np.eye(3, dtype="<f4")[labels].tofile(directory / "y.bin")
    labels.astype("<i4").tofile(directory / "labels.bin")
    return directory


def assert_one_line_error(result, *fragments):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("microtrain")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


EPOCH_LINE = re.compile(r"^Epoch (\d+)/(\d+) - time: [\d.]+ms/step - loss: \[0\] ([\d.]+) - "
                        r"categorical_accuracy: \[0\] ([\d.]+) - val_loss: \[0\] [\d.]+ - "
                        r"val_categorical_accuracy: \[0\] ([\d.]+)$", re.MULTILINE)


def test_train_with_onert_flags_checkpoint_and_export(files):
    result = run("train", files / "model.mtm", "--load-input:raw", files / "x.bin",
                 "--load-expected:raw", files / "y.bin", "--epochs", 5, "--batch-size", 10,
                 "--optimizer", "adam", "--loss", "cce", "--learning-rate", 0.01,
                 "--validation-split", 0.2, "--metric", "categorical_accuracy",
                 "--num-of-trainable-ops", -1, "--checkpoint", files / "ck.bin",
                 "--export", files / "out.mtm")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "== training parameter ==" in out
    assert "- learning_rate        = 0.01" in out
    assert "- batch_size           = 10" in out
    assert "- optimizer            = adam" in out
    assert "loss = categorical_crossentropy, reduction = mean" in out
    epochs = EPOCH_LINE.findall(out)
    assert [e[:2] for e in epochs] == [(str(i), "5") for i in range(1, 6)]
    assert float(epochs[-1][2]) < float(epochs[0][2])
    assert float(epochs[-1][4]) > 0.5
    for phase in ("MODEL_LOAD", "PREPARE", "EXECUTE"):
        assert re.search(r"^%s +takes [\d.]+ ms$" % phase, out, re.MULTILINE), phase
    assert len(re.findall(r"^- Epoch \d+ +takes [\d.]+ ms$", out, re.MULTILINE)) == 5
    assert os.path.getsize(files / "ck.bin") > 80
    assert os.path.getsize(files / "out.mtm") == os.path.getsize(files / "model.mtm")

    session = microtrain.TrainSession(str(files / "out.mtm"))
    session.compile("adam", "categorical_crossentropy", batch_size=10)
    resumed = microtrain.TrainSession(str(files / "model.mtm"))
    resumed.compile("adam", "categorical_crossentropy", batch_size=10)
    resumed.load_checkpoint(str(files / "ck.bin"))
    assert resumed.get_counters() == {"step": 20, "epoch": 5}
    for a, b in zip(session.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_onert_spellings_and_numeric_codes(files):
    result = run("train", "--modelfile", files / "model.mtm", "--load_input:raw",
                 files / "x.bin", "--load_expected:raw", files / "y.bin", "--epoch", 2,
                 "--batch_size", 16, "--optimizer", 2, "--loss", 2, "--learning_rate", 0.01,
                 "--validation_split", 0.2, "--metric", 0, "--num_of_trainable_ops", 2,
                 "--loss_reduction_type", 1, "--verbose_level", 2)
    assert result.returncode == 0, result.stderr
    assert len(EPOCH_LINE.findall(result.stdout)) == 2
    assert "- optimizer            = adam" in result.stdout
    assert "- num_of_trainable_ops = last 2 ops" in result.stdout


def test_friendly_spellings_sparse_labels_and_resume(files):
    result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y",
                 files / "labels.bin", "--loss", "scce", "--epochs", 2, "--batch-size", 8,
                 "--metric", "sparse_categorical_accuracy", "--checkpoint", files / "s.bin",
                 "--shuffle", "--seed", 3, "--trainable", "bias", "--optimizer", "sgd")
    assert result.returncode == 0, result.stderr
    assert "Epoch 2/2" in result.stdout and "sparse_categorical_accuracy: [0]" in result.stdout
    result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y",
                 files / "labels.bin", "--loss", "scce", "--epochs", 1, "--batch-size", 8,
                 "--load-checkpoint", files / "s.bin", "--trainable", "bias",
                 "--optimizer", "sgd")
    assert result.returncode == 0, result.stderr
    assert "Epoch 3/3" in result.stdout


def test_eval_reports_loss_and_metrics(files):
    result = run("eval", files / "model.mtm", "--load-input:raw", files / "x.bin",
                 "--load-expected:raw", files / "y.bin", "--loss", "cce", "--metric", "acc",
                 "--metric", "mse", "--batch-size", 7)
    assert result.returncode == 0, result.stderr
    # "acc" is the loss's accuracy (categorical for cce), named as given
    match = re.search(r"^Evaluate 50 samples - loss: \[0\] ([\d.]+) - acc: "
                      r"\[0\] ([\d.]+) - mse: \[0\] ([\d.]+)$", result.stdout, re.MULTILINE)
    assert match, result.stdout
    session = microtrain.TrainSession(str(files / "model.mtm"))
    session.compile("sgd", "categorical_crossentropy", metrics=["categorical_accuracy"],
                    batch_size=7)
    x = np.fromfile(files / "x.bin", dtype="<f4").reshape(50, 8)
    y = np.fromfile(files / "y.bin", dtype="<f4").reshape(50, 3)
    logs = session.evaluate((x, y))
    assert float(match.group(1)) == pytest.approx(logs["loss"], abs=1e-4)
    assert float(match.group(2)) == pytest.approx(logs["categorical_accuracy"], abs=1e-4)


def test_info_prints_tensors_ops_and_the_memory_plan(files):
    result = run("info", files / "model.mtm", "--batch-size", 16, "--optimizer", "adam",
                 "--loss", "cce", "--trainable", 1)  # the last layer with weights
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "9 tensors, 4 ops" in out
    assert re.search(r"^index +dtype +shape +elements +flags +producer +trained$", out,
                     re.MULTILINE)
    assert re.search(r"^1 +f32 +16x8 +128 +const,trainable +- +-$", out, re.MULTILINE)
    assert re.search(r"^5 +f32 +3x16 +48 +const,trainable +- +yes$", out, re.MULTILINE)
    assert re.search(r"^2 +1 +Dense +4,5,6 +7 +5,6$", out, re.MULTILINE), out  # op 2 in layer 1
    assert "trainable: last 2 ops: layers with weights 1)" in out
    total = int(re.search(r"^total +(\d+)$", out, re.MULTILINE).group(1))
    roles = re.findall(r"^(metadata|trained weights|gradients|optimizer state|activations|"
                       r"activation gradients|targets|scratch|shared lifetimes) +(-?\d+)$",
                       out, re.MULTILINE)
    assert len(roles) == 9 and sum(int(v) for _, v in roles) == total
    session = microtrain.TrainSession(str(files / "model.mtm"))
    session.compile("adam", "categorical_crossentropy", batch_size=16, trainable=1)
    assert total == session.memory_plan()["total_bytes"]
    gradients = int(re.search(r"^gradients +(\d+)$", out, re.MULTILINE).group(1))
    everything = run("info", files / "model.mtm", "--batch-size", 16, "--optimizer", "adam",
                     "--loss", "cce")
    assert gradients < int(re.search(r"^gradients +(\d+)$", everything.stdout,
                                     re.MULTILINE).group(1))


def test_info_plans_the_proximal_reference_and_train_takes_the_term(files, tmp_path):
    """--proximal-mu: info plans FedProx's reference copy of the trained weights (as
    compile(proximal_mu=...) does); train pulls towards the model's own weights."""
    result = run("info", files / "model.mtm", "--proximal-mu", 0.01, "--trainable", 2)
    assert result.returncode == 0, result.stderr
    reference = int(re.search(r"^proximal reference +(\d+)$", result.stdout, re.MULTILINE).group(1))
    weights = int(re.search(r"^trained weights +(\d+)$", result.stdout, re.MULTILINE).group(1))
    assert reference == weights > 0
    assert "proximal reference" not in run("info", files / "model.mtm").stdout
    finals = []
    for mu in (0.0, 50.0):
        out = tmp_path / ("mu%g.mtm" % mu)
        trained = run("train", files / "model.mtm", "--x", files / "x.bin", "--y", files / "y.bin",
                      "--epochs", 3, "--optimizer", "sgd", "--learning-rate", 0.01,
                      "--proximal-mu", mu, "--export", out, "-v", 0)
        assert trained.returncode == 0, trained.stderr
        finals.append(microtrain.TrainSession(str(out)).get_weights())
    start = microtrain.TrainSession(str(files / "model.mtm")).get_weights()
    moved = [sum(float(np.abs(w - s).sum()) for w, s in zip(f, start)) for f in finals]
    assert 0 < moved[1] < moved[0]  # the term holds the weights nearer the model's
    for bad in ("-1", "nan", "inf", "x"):
        assert_one_line_error(run("info", files / "model.mtm", "--proximal-mu", bad),
                              "--proximal-mu")


def test_bad_arguments_and_files_give_one_line(files, tmp_path):
    model, x, y = files / "model.mtm", files / "x.bin", files / "y.bin"
    (tmp_path / "short.bin").write_bytes(b"\0" * 30)
    (tmp_path / "junk.mtm").write_bytes(b"not a model at all, sorry" * 4)
    (tmp_path / "junk.ck").write_bytes(b"\0" * 100)
    np.zeros((49, 3), dtype="<f4").tofile(tmp_path / "y49.bin")
    cases = [
        (("train",), ["required"]),
        (("info",), ["MODEL is required"]),
        (("train", model), ["required"]),
        (("train", tmp_path / "missing.mtm", "--x", x, "--y", y), ["not found", "missing.mtm"]),
        (("train", model, "--x", tmp_path / "nox.bin", "--y", y), ["not found", "nox.bin"]),
        (("train", model, "--x", x, "--y", y, "--loss", "hinge"), ["unknown loss", "hinge"]),
        (("train", model, "--x", x, "--y", y, "--optimizer", "rmsprop"), ["unknown optimizer"]),
        (("train", model, "--x", x, "--y", y, "--epochs", "many"), ["--epochs"]),
        (("train", model, "--x", x, "--y", y, "--batch-size", 0), ["positive integer"]),
        (("train", model, "--x", x, "--y", y, "--validation-split", 2), ["[0, 1)"]),
        (("train", model, "--x", tmp_path / "short.bin", "--y", y), ["not a positive multiple"]),
        (("train", model, "--x", x, "--y", files / "labels.bin"), ["multiple of one sample"]),
        (("train", model, "--x", x, "--y", files / "labels.bin", "--data-length", 10),
         ["multiple of one sample"]),
        (("train", tmp_path / "junk.mtm", "--x", x, "--y", y), ["mt_model_check"]),
        (("train", model, "--x", x, "--y", tmp_path / "y49.bin"), ["50 samples", "49"]),
        (("train", model, "--x", x, "--y", y, "--load-checkpoint", tmp_path / "junk.ck"),
         ["mt_checkpoint_load", "MT_ERR_BAD_CHECKPOINT"]),
        (("train", model, "--x", x, "--y", y, "--trainable", "x,y"), ["--trainable"]),
        (("train", model, "--x", x, "--y", y, "--trainable", 2, "--num-of-trainable-ops", 1),
         ["not both"]),
        (("train", model, "--x", x, "--y", y, "--data-length", 500), ["exceeds"]),
        (("train", model, "--x", x, "--x", x, "--y", y), ["1 input(s), got 2"]),
        (("info", model, "--trainable", 9), []),
        (("frobnicate",), ["invalid choice"]),
        (("train", model, "--x", x, "--y", y, "--no-such-flag"), ["unrecognized"]),
    ]
    for arguments, fragments in cases:
        result = run(*arguments)
        if arguments[:3] == ("info", model, "--trainable"):
            assert result.returncode == 0, result.stderr  # more than num_ops: all ops train
            continue
        assert_one_line_error(result, *fragments)
    assert run("train", model, "--x", x, "--y", y, "--loss", "hinge").returncode == 2
    assert run("train", tmp_path / "missing.mtm", "--x", x, "--y", y).returncode == 1
    result = run()
    assert result.returncode == 2 and "usage" in result.stderr
    result = run("--help")
    assert result.returncode == 0 and "train" in result.stdout


def test_checkpoint_of_another_model_is_refused_in_one_line(files, tmp_path):
    saved_classifier(tmp_path / "other.mtm", 5)
    result = run("train", tmp_path / "other.mtm", "--x", files / "x.bin", "--y",
                 files / "y.bin", "--epochs", 1, "--checkpoint", tmp_path / "other.ck",
                 "--loss", "cce")
    assert result.returncode == 0, result.stderr
    result = run("eval", files / "model.mtm", "--x", files / "x.bin", "--y", files / "y.bin",
                 "--load-checkpoint", tmp_path / "other.ck", "--loss", "cce")
    assert_one_line_error(result, "MT_ERR_CHECKPOINT_MISMATCH")


def test_firmware_is_routed_to_microtrain_firmware(monkeypatch, capsys):
    calls = []
    fake = types.ModuleType("microtrain.tools.firmware")
    fake.main = lambda argv: calls.append(argv) or 7
    monkeypatch.setitem(sys.modules, "microtrain.tools.firmware", fake)
    monkeypatch.setattr(microtrain.tools, "firmware", fake, raising=False)
    assert cli.main(["firmware", "build", "--board", "mps2-an385"]) == 7
    assert calls == [["build", "--board", "mps2-an385"]]


def test_firmware_missing_gives_one_line_and_status_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "microtrain.tools.firmware", None)  # import raises ImportError
    monkeypatch.delattr(microtrain.tools, "firmware", raising=False)
    assert cli.main(["firmware", "run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "firmware" in err[0]


def test_console_script_is_installed():
    script = shutil.which("microtrain", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the package is not installed with its console script here")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "info" in result.stdout


def test_one_vocabulary_one_set_of_defaults_and_hints_that_say_what_to_change(files, tmp_path):
    """Every subcommand takes the same loss names and has compile()'s defaults; a label file
    given with the wrong loss, or float labels given as sparse ones, say what to change."""
    result = run("info", files / "model.mtm")
    assert result.returncode == 0, result.stderr
    assert "Memory plan (batch 16, sgd, mse" in result.stdout  # compile()'s defaults
    for loss in ("scce", "sparse_categorical_crossentropy"):
        result = run("train", files / "model.mtm", "--x", files / "x.bin",
                     "--y", files / "labels.bin", "--loss", loss, "--epochs", 1, "-v", 0)
        assert result.returncode == 0, result.stderr
    result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y",
                 files / "labels.bin", "--epochs", 1)
    assert_one_line_error(result, "one 4-byte value per input sample", "--loss scce")
    floats = tmp_path / "float_labels.bin"
    np.fromfile(files / "labels.bin", "<i4").astype("<f4").tofile(floats)
    result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y", floats,
                 "--loss", "scce", "--epochs", 1)
    assert_one_line_error(result, "holds float32 values", "int32 labels")
    result = run("predict", files / "model.mtm", "--x", files / "x.bin")
    assert result.returncode == 0, result.stderr
    rows = re.findall(r"^(\d+): class (\d) - ", result.stdout, re.MULTILINE)
    assert len(rows) == 50 and "Predict 50 samples" in result.stdout
    from microtrain.tools import firmware
    from microtrain.tools.firmware_training import TrainingSpec
    arguments = firmware._parser().parse_args(["--model", "m", "--data", "d", "--out", "o",
                                               "--loss", "scce", "--sources-only"])
    spec = TrainingSpec(arguments.epochs, arguments.optimizer, arguments.learning_rate,
                        arguments.loss, arguments.batch_size)
    assert spec.loss.name == "sparse_categorical_crossentropy"
    assert (spec.optimizer.name, spec.batch_size) == ("sgd", 16)


def test_flat_rows_for_a_multi_dimensional_input(files, tmp_path):
    """Raw files hold flat rows; a .npy of flat rows [N, 8] fits a (4, 2) input as well, in
    the CLI and in the firmware's data set."""
    model = microtrain.Sequential([layers.Flatten(), layers.Dense(3), layers.Softmax()],
                                  input_shape=(4, 2), seed=0)
    model.save(str(tmp_path / "grid.mtm"))
    flat = np.fromfile(files / "x.bin", "<f4").reshape(50, 8)
    np.save(tmp_path / "flat.npy", flat)
    np.save(tmp_path / "shaped.npy", flat.reshape(50, 4, 2))
    outputs = []
    for x in (files / "x.bin", tmp_path / "flat.npy", tmp_path / "shaped.npy"):
        result = run("train", tmp_path / "grid.mtm", "--x", x, "--y", files / "y.bin",
                     "--epochs", 1, "-v", 2, "--export", tmp_path / ("out_%s.mtm" % x.stem))
        assert result.returncode == 0, result.stderr
        outputs.append((tmp_path / ("out_%s.mtm" % x.stem)).read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    result = run("train", tmp_path / "grid.mtm", "--x", files / "labels.bin", "--y",
                 files / "y.bin", "--epochs", 1)
    assert_one_line_error(result)
    from microtrain.tools.firmware_training import Dataset
    y = np.eye(3, dtype="<f4")[np.zeros(50, int)]
    conformed = Dataset(flat, y).conform((4, 2), (3,), False)
    assert conformed.x.shape == (50, 4, 2) and np.array_equal(conformed.x.reshape(50, 8), flat)


def test_a_checkpoint_is_evaluated_without_its_training_flags_and_inspected(files, tmp_path):
    """eval --load-checkpoint takes the checkpoint's optimizer and trained set unless they
    are given; `microtrain info CK` says what a checkpoint holds; a mismatch says which
    part differs."""
    for trainable, held in (("1", "trained tensors: t5 (48 values), t6 (3)"),
                            ("bias", "trained tensors: t2 (16 values), t6 (3)")):
        ck = tmp_path / ("ck_%s.bin" % trainable)
        result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y",
                     files / "y.bin", "--loss", "cce", "--optimizer", "adam", "--trainable",
                     trainable, "--epochs", 2, "-v", 0, "--checkpoint", ck,
                     "--export", tmp_path / "trained.mtm")
        assert result.returncode == 0, result.stderr
        result = run("info", ck)
        assert result.returncode == 0, result.stderr
        assert "checkpoint, format version 2" in result.stdout and "CRC valid" in result.stdout
        assert "optimizer adam, Adam m and v" in result.stdout
        assert "step 8, epoch 2, learning rate 0.001 (base 0.001)" in result.stdout
        assert held in result.stdout, result.stdout
        evaluated = run("eval", files / "model.mtm", "--x", files / "x.bin", "--y",
                        files / "y.bin", "--loss", "cce", "--load-checkpoint", ck)
        assert evaluated.returncode == 0, evaluated.stderr
        reference = run("eval", tmp_path / "trained.mtm", "--x", files / "x.bin", "--y",
                        files / "y.bin", "--loss", "cce")
        line = re.compile(r"^Evaluate 50 samples - loss: \[0\] ([\d.]+)$", re.MULTILINE)
        assert line.search(evaluated.stdout).group(1) == line.search(reference.stdout).group(1)
    result = run("eval", files / "model.mtm", "--x", files / "x.bin", "--y", files / "y.bin",
                 "--loss", "cce", "--load-checkpoint", tmp_path / "ck_1.bin", "--optimizer",
                 "sgd")
    assert_one_line_error(result, "MT_ERR_CHECKPOINT_MISMATCH",
                          "it was saved with optimizer adam, this session has sgd")
    result = run("info", files / "x.bin")
    assert_one_line_error(result)


def run_without(modules, *arguments):
    """``microtrain ARGUMENTS`` in a Python where importing ``modules`` fails, as on a machine
    without them."""
    code = ("import sys\nfor name in %r: sys.modules[name] = None\n"
            "from microtrain.tools import cli\nsys.exit(cli.main(%r))"
            % (list(modules), [str(a) for a in arguments]))
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (PACKAGE_PARENT, environment.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, timeout=120)


def test_fleet_is_listed_and_says_what_it_needs_before_it_starts(files, tmp_path):
    """microtrain --help lists fleet; without Flower its --help works and a run says how to
    install it, on either engine; --plot without matplotlib and a bad --export fail before
    the simulation."""
    assert re.search(r"^    fleet +simulate a fleet", run("--help").stdout, re.MULTILINE)
    result = run_without(["flwr"], "fleet", "--help")
    assert result.returncode == 0 and "--strategy" in result.stdout, result.stderr
    result = run_without(["flwr"], "fleet", "--deployment", "--help")
    assert result.returncode == 0 and "--round-timeout" in result.stdout, result.stderr
    arguments = ["fleet", "--model", files / "model.mtm", "--data", files / "none.npz"]
    for engine in ([], ["--deployment"]):  # the simulation, Flower's deployment engine
        result = run_without(["flwr"], *arguments, *engine)
        assert_one_line_error(result, "microtrain fleet needs Flower",
                              "pip install '.[federated]' in microtrain's source tree")
    result = run_without(["flwr", "matplotlib"], *arguments, "--plot", tmp_path / "a.png")
    assert_one_line_error(result, "--plot needs matplotlib", "pip install '.[plot]'")
    for export, message in (("global.bin", "written as .mtm, .tflite, .circle or .onnx"),
                            ("no/such/folder/g.mtm", "no folder")):
        result = run_without(["flwr"], *arguments, "--export", tmp_path / export)
        assert_one_line_error(result, message)


def test_install_hints_name_the_extras_of_pyproject():
    """microtrain is installed from its source tree: hints say pip install '.[extra]' and
    name the packages each extra of pyproject.toml holds."""
    from microtrain import errors
    # the source tree these tests belong to (the package may be installed in site-packages)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "pyproject.toml")).read()
    section = text.split("[project.optional-dependencies]")[1].split("\n[")[0]
    for extra, packages in errors.EXTRAS.items():
        listed = re.search(r"^%s = \[(.*)\]$" % extra, section, re.MULTILINE).group(1)
        for name in re.findall(r'"([A-Za-z0-9_.-]+)', listed):
            assert name in packages, (extra, name, packages)
        assert errors.install_hint(extra).startswith("pip install '.[%s]' in " % extra)
    source = "".join(open(os.path.join(folder, name)).read()
                     for folder, _, names in os.walk(os.path.join(PACKAGE_PARENT, "microtrain"))
                     for name in names if name.endswith(".py"))
    assert "pip install 'microtrain[" not in source and "pip install microtrain[" not in source


def test_one_spelling_of_what_trains_in_every_command(files, tmp_path):
    """--trainable (all, bias, N layers with weights, layers by position or name) and onert's
    --num-of-trainable-ops in train, eval, info, firmware and fleet; the fleet's choice
    crosses to a device's script and back unchanged."""
    from microtrain.federated import fleet, local_round
    from microtrain.tools import firmware
    for parser in (cli_args_parser("train"), firmware._parser(), fleet._parser()):
        dests = {}
        for action in parser._actions:
            dests.setdefault(action.dest, []).extend(action.option_strings)
        assert dests["trainable"] == ["--trainable"]
        assert "--num-of-trainable-ops" in dests["num_trainable_ops"]
        assert "--num_of_trainable_ops" in dests["num_trainable_ops"]
    assert fleet._parser().parse_args(["--model", "m", "--data", "d", "--trainable",
                                       "dense_1,0"]).trainable == ["dense_1", 0]
    result = run_without(["flwr"], "fleet", "--model", files / "model.mtm", "--data",
                         files / "none.npz", "--trainable", 1, "--num-of-trainable-ops", 2)
    assert_one_line_error(result, "give --trainable or --num-of-trainable-ops, not both")
    for flags in (["--trainable", "-2"], ["--num-of-trainable-ops", "-2"]):
        result = run("train", files / "model.mtm", "--x", files / "x.bin", "--y",
                     files / "y.bin", *flags)
        assert result.returncode == 2 and "expected" in result.stderr, result.stderr
    for spec in ("all", "bias", 2, -1, [3], ["dense_1", 0]):
        settings = fleet.make_settings(trainable=spec)
        assert local_round.settings_from_words(local_round.settings_to_words(settings)) == \
            settings
    settings = fleet.make_settings(num_trainable_ops=2)
    assert local_round.settings_from_words(local_round.settings_to_words(settings)) == settings
    result = run("firmware", "--sources-only", "--model", files / "model.mtm", "--data",
                 tmp_path / "d.npz", "--out", tmp_path / "fw", "--trainable", "0,1")
    assert result.returncode == 2
    x = np.fromfile(files / "x.bin", "<f4").reshape(50, 8)
    np.savez(tmp_path / "d.npz", x=x, y=np.fromfile(files / "y.bin", "<f4").reshape(50, 3))
    for flags, trained in ((["--trainable", "1"], "last 2 ops: layers with weights 1"),
                           (["--num-of-trainable-ops", "2"], "last 2 ops"),
                           (["--num-trainable-ops", "2"], "last 2 ops")):  # the old spelling
        result = run("firmware", "--sources-only", "--model", files / "model.mtm", "--data",
                     tmp_path / "d.npz", "--out", tmp_path / "fw", *flags)
        assert result.returncode == 0, result.stderr
        record = (tmp_path / "fw" / "firmware.json").read_text()
        assert '"num_trainable_ops": 2' in record and trained in record, record
    result = run("firmware", "--sources-only", "--model", files / "model.mtm", "--data",
                 tmp_path / "d.npz", "--out", tmp_path / "fw", "--trainable", "1")
    assert result.returncode == 0, result.stderr  # a list of layers: the firmware's op mask
    source = (tmp_path / "fw" / "data" / "mt_firmware_data.c").read_text()
    assert "cfg->trainable_op_mask = mask;" not in source
    result = run("firmware", "--sources-only", "--model", files / "model.mtm", "--data",
                 tmp_path / "d.npz", "--out", tmp_path / "fw", "--trainable", "[1]")
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "fw" / "data" / "mt_firmware_data.c").read_text()
    assert "static const uint8_t mask[4] = {0, 0, 1, 0};" in source
    assert "cfg->trainable_op_mask = mask;" in source


def cli_args_parser(command):
    from microtrain.tools.cli_args import build_parser
    parser = build_parser()
    return [a for a in parser._actions if a.dest == "command"][0].choices[command]


def test_help_says_which_model_files_work():
    for command in ("train", "eval", "info", "predict"):
        text = " ".join(run(command, "--help").stdout.split())
        assert "an .mtm image, or a .tflite/.circle/.onnx file" in text, (command, text)
