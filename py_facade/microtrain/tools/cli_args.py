"""The ``microtrain`` command line: its subcommands, flags and flag values (see cli.py).

Flags follow onert_train and accept friendlier spellings; every value is checked here, so a
bad flag is one line on stderr and exit status 2 (``UsageError``).
"""

import argparse

from .. import _arguments, config as _config, losses as _losses, metrics as _metrics
from .. import optimizers as _optimizers

PROG = "microtrain"

# nnfw's enums as onert_train takes them on its command line
_ONERT_LOSSES = {"1": "mse", "2": "categorical_crossentropy"}
_ONERT_OPTIMIZERS = {"1": "sgd", "2": "adam"}
_ONERT_REDUCTIONS = {"1": "mean", "2": "sum"}  # sum_over_batch_size, sum
_ONERT_METRICS = {"0": "categorical_accuracy", "-1": None}


class UsageError(Exception):
    """A bad command line: exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError("%s: %s (see %s --help)" % (self.prog, message, self.prog))


# ---------------------------------------------------------------- argument values


def _loss_name(text):
    name = text.strip().lower()
    name = _ONERT_LOSSES.get(name, name)
    if name not in _losses.ALIASES:
        raise argparse.ArgumentTypeError(
            "unknown loss %r (mse, mae, cce, scce, bce, a full name, or onert's 1/2)" % text)
    return _losses.get(name).name


def _optimizer_name(text):
    name = _ONERT_OPTIMIZERS.get(text.strip().lower(), text.strip().lower())
    if name not in _optimizers.ALIASES:
        raise argparse.ArgumentTypeError("unknown optimizer %r (sgd, adam, adamw, or onert's "
                                         "1/2)" % text)
    return name


def _reduction_name(text):
    name = _ONERT_REDUCTIONS.get(text.strip().lower(), text.strip().lower())
    if name in ("sum_over_batch_size",):
        name = "mean"
    if name not in _losses.REDUCTIONS:
        raise argparse.ArgumentTypeError("unknown reduction %r (mean, sum, or onert's 1/2)"
                                         % text)
    return name


def _metric_name(text):
    key = text.strip().lower()
    if key in _ONERT_METRICS:
        return _ONERT_METRICS[key]
    if key not in _metrics.ALIASES and key not in _metrics.LOSS_DEPENDENT:
        raise argparse.ArgumentTypeError(
            "unknown metric %r (%s, or onert's 0)"
            % (text, ", ".join(sorted(list(_metrics.ALIASES) + list(_metrics.LOSS_DEPENDENT)))))
    return key  # "accuracy" is resolved from the loss by compile(), as in Keras


# Numbers in ranges: the command lines' one set (microtrain._arguments).
_positive_int = _arguments.positive_int
_non_negative_int = _arguments.non_negative_int
_fraction = _arguments.fraction
_positive_float = _arguments.positive_float
_non_negative_float = _arguments.non_negative_float


def _add_proximal(parser, what):
    parser.add_argument("--proximal-mu", "--proximal_mu", dest="proximal_mu",
                        type=_non_negative_float, default=0.0,
                        help="FedProx's proximal term mu/2 |w - w_ref|^2 (0: none); " + what)


# ---------------------------------------------------------------- parser


def _add_model(parser):
    parser.add_argument("model", nargs="?", metavar="MODEL",
                        help="the model: an .mtm image, or a .tflite/.circle/.onnx file "
                        "(converted as it is read)")
    parser.add_argument("--modelfile", "--model", dest="modelfile", metavar="MODEL",
                        help="the model, as onert_train's --modelfile")


def _add_compile(parser, default_loss):
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=_positive_int,
                        default=_config.DEFAULT_BATCH_SIZE,
                        help="rows per step (default %d, as compile())" % _config.DEFAULT_BATCH_SIZE)
    parser.add_argument("--optimizer", type=_optimizer_name, default=None,
                        help="sgd, adam, adamw (onert: 1 = sgd, 2 = adam); default %s (eval "
                        "with --load-checkpoint: the checkpoint's)" % _config.DEFAULT_OPTIMIZER)
    parser.add_argument("--learning-rate", "--learning_rate", "--lr", dest="learning_rate",
                        type=_positive_float, default=None,
                        help="default: the optimizer's (sgd 0.01, adam 0.001)")
    parser.add_argument("--loss", type=_loss_name, default=default_loss,
                        help="mse, mae, cce, scce, bce (onert: 1 = mse, 2 = cce); default %s"
                        % default_loss)
    parser.add_argument("--loss-reduction-type", "--loss_reduction_type", "--reduction",
                        dest="reduction", type=_reduction_name, default="mean",
                        help="mean or sum (onert: 1 = sum over batch size, 2 = sum)")
    _arguments.add_trainable(parser)
    parser.add_argument("--biases-only", "--biases_only", dest="biases_only",
                        action="store_true", help="train only the biases of the trained ops")


def _add_data(parser, required):
    parser.add_argument("--load-input:raw", "--load_input:raw", "--load-input", "--x",
                        dest="inputs", action="append", required=required, metavar="FILE",
                        help="raw little-endian float32 samples (or .npy); once per input")
    parser.add_argument("--load-expected:raw", "--load_expected:raw", "--load-expected", "--y",
                        dest="expected", required=required, metavar="FILE",
                        help="raw expected outputs: float32 rows, or int32 labels for scce")
    parser.add_argument("--data-length", "--data_length", dest="data_length",
                        type=_positive_int, default=None, help="use the first N samples")
    parser.add_argument("--metric", dest="metrics", action="append", type=_metric_name,
                        default=None, help="accuracy (the loss's, as in Keras), categorical_accuracy, "
                        "sparse_categorical_accuracy, binary_accuracy, mse, mae (onert: 0); "
                        "repeatable")
    parser.add_argument("--load-checkpoint", "--load_checkpoint", dest="load_checkpoint",
                        metavar="CK", help="start from this checkpoint")


def build_parser():
    parser = _Parser(prog=PROG, description="Train, evaluate and inspect microtrain models "
                     "on the host with the same C core as the device.", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    train = commands.add_parser("train", help="train a model on raw data files",
                                allow_abbrev=False)
    _add_model(train)
    _add_data(train, required=True)
    _add_compile(train, _config.DEFAULT_LOSS)
    _add_proximal(train, "w_ref is the model's own weights, so training stays near them")
    train.add_argument("--epochs", "--epoch", dest="epochs", type=_non_negative_int, default=5,
                       help="epochs (default 5)")
    train.add_argument("--validation-split", "--validation_split", dest="validation_split",
                       type=_fraction, default=0.0, help="fraction held out for validation")
    train.add_argument("--shuffle", action="store_true", help="shuffle every epoch")
    train.add_argument("--seed", type=_non_negative_int, default=0,
                       help="seed of the shuffles and the split (default 0)")
    train.add_argument("--checkpoint", "--export-checkpoint", "--export_checkpoint",
                       dest="checkpoint", metavar="CK", help="save a checkpoint every epoch")
    train.add_argument("--export", "--export-model", "--export_model", dest="export",
                       metavar="OUT.mtm", help="write the trained model for inference")
    train.add_argument("--verbose-level", "--verbose_level", "-v", dest="verbose", type=int,
                       default=1, help="0 quiet, 1 progress and epochs (default), 2 epochs")

    evaluate = commands.add_parser("eval", help="evaluate a model on raw data files",
                                   allow_abbrev=False)
    _add_model(evaluate)
    _add_data(evaluate, required=True)
    _add_compile(evaluate, _config.DEFAULT_LOSS)

    info = commands.add_parser("info", help="tensors, ops and the memory plan of a model",
                               allow_abbrev=False)
    _add_model(info)
    _add_compile(info, _config.DEFAULT_LOSS)
    info.add_argument("--accumulate-gradients", "--accumulate_gradients",
                      dest="accumulate_gradients", action="store_true",
                      help="plan gradients kept for accumulation instead of fused updates")
    _add_proximal(info, "plans its reference copy of the trained weights")
    _arguments.add_sparse_update(info)
    info.add_argument("--plot", metavar="OUT.png",
                      help="draw the arena over the train step's schedule (needs matplotlib)")

    predict = commands.add_parser("predict", help="run a model on raw input files (no "
                                  "training set-up needed)", allow_abbrev=False)
    _add_model(predict)
    predict.add_argument("--load-input:raw", "--load_input:raw", "--load-input", "--x",
                         dest="inputs", action="append", required=True, metavar="FILE",
                         help="raw little-endian float32 samples (or .npy); once per input")
    predict.add_argument("--batch-size", "--batch_size", dest="batch_size",
                         type=_positive_int, default=_config.DEFAULT_BATCH_SIZE,
                         help="rows per core call (default %d)" % _config.DEFAULT_BATCH_SIZE)
    predict.add_argument("--output", "-o", metavar="OUT",
                         help="write output 0 there (.npy, else raw little-endian float32) "
                         "instead of printing it")

    commands.add_parser("firmware", help="board support (see microtrain firmware --help)",
                        add_help=False)
    commands.add_parser("convert", help="import a .tflite/.circle/.onnx model as .mtm (see "
                        "microtrain convert --help)", add_help=False)
    commands.add_parser("micropython", add_help=False,
                        help="run a script on MicroPython (see microtrain micropython --help)")
    commands.add_parser("fleet", add_help=False,
                        help="simulate a fleet of devices learning together with Flower, or "
                        "deploy it here (see microtrain fleet --help; the federated extra)")
    return parser
