"""``microtrain convert IN -o OUT``: import a .tflite/.circle/.onnx model as a .mtm image,
or export an image (or a converted model) as .tflite/.circle/.onnx.

    microtrain convert model.tflite -o model.mtm        # import
    microtrain convert model.onnx -o model.mtm --print-ops
    microtrain convert trained.mtm -o trained.tflite    # export any image (NHWC inputs)

Errors (an unsupported op, attribute or dtype) go to microtrain's usual one-line error
and exit status 1 (tools/cli.py).
"""

import argparse
import os

from .. import _files
from .. import ops as _ops
from ..nn import image as _image


def build_parser():
    parser = argparse.ArgumentParser(
        prog="microtrain convert", allow_abbrev=False,
        description="Import a .tflite/.circle/.onnx model as a .mtm image, or write "
                    "a .mtm image as .tflite/.circle/.onnx.")
    parser.add_argument("input", metavar="IN", help=".tflite, .circle, .onnx or .mtm file")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help=".mtm to import; .tflite, .circle or .onnx to export")
    parser.add_argument("--print-ops", action="store_true",
                        help="list the core ops and the source op each came from")
    return parser


def main(argv):
    args = build_parser().parse_args(argv)
    from . import convert, detect_format, exporter
    data = _files.read_file(args.input, "a model")  # a regular file: never a FIFO or device
    target = os.path.splitext(args.output)[1].lower()
    if detect_format(data, args.input) is None:          # a .mtm image: export it
        if target == ".mtm":
            raise ValueError("%s is already a .mtm image" % args.input)
        parsed = _image.read_image(data)
        weights = [parsed.tensor_data(i) for i in parsed.const_f32_tensors()]
        fmt = exporter.export(data, weights, args.output)
        print("%s: %s file from %s (%d ops)" % (args.output, fmt, args.input,
                                                len(parsed.ops)))
        return 0
    model = convert(data, format=detect_format(data, args.input), source_path=args.input)
    if target == ".mtm":
        model.save(args.output)
        written = "%d-byte .mtm image" % len(model.to_bytes())
    else:
        fmt = model.export(args.output)
        written = "%s file" % fmt
    parsed = _image.read_image(model.to_bytes())
    print("%s: %s from %s (%s: %d ops -> %d core ops, %d weights, %d folded)"
          % (args.output, written, args.input, model.format,
             len(set(model.source.op_sources)), len(parsed.ops),
             len(model.source.origins), len(model.source.folds)))
    for note in model.source.notes:
        print("note: %s" % note)
    for name, layout in zip(model.input_names, model.input_layouts):
        note = " (fed as NHWC: transpose %r)" % (layout["transpose"],) \
            if layout["transpose"] else ""
        print("input %s: %r%s" % (name, tuple(layout["core_shape"]), note))
    for name, layout in zip(model.output_names, model.output_layouts):
        print("output %s: %r" % (name, tuple(layout["core_shape"])))
    if args.print_ops:
        for index, (op, source) in enumerate(zip(parsed.ops, model.source.op_sources)):
            print("op %d %s <- %s" % (index, _ops.display_name(op.op_type), source))
    return 0
