"""CMSIS-NN's and TinyEngine's published int8 figures beside microtrain's per-op table
(benchmarks/arm_int8_ops.py), in cycles per MAC, with the MACs counted as op_work.py does.

Units. The table counts instructions (QEMU models no cycles); the sources give cycles or
milliseconds on silicon. A cycle is an instruction only at one instruction per cycle (IPC 1),
which no source states, so both units stand side by side and the cycles are not turned into
instructions. How far apart they can be, from the cores' documented pipelines: the Cortex-M4
issues one instruction a cycle at most (a load takes 2 unless it follows another, a taken
branch 2-4), so on it instructions <= cycles and a published cycles/MAC bounds the
instructions/MAC from above; the Cortex-M7 issues up to two a cycle, so its instructions/MAC
lie between about half (stalled on flash or cache) and twice its cycles/MAC; the Cortex-M55's
Helium datapath is 64 bits wide, a 128-bit vector instruction two beats, overlapped with the
next: about one vector instruction a cycle at best, so its cycles/MAC also bound its vector
code's instructions/MAC from above, give or take its scalar instructions. Milliseconds become
cycles at the clock the source names (or, where it names none, the part's maximum, said
below). Every source measured a whole layer or network on a real board: memory wait states,
the interpreter and the data movement between layers are in its cycles.

Sources:
  [executorch-17651] github.com/pytorch/executorch/issues/17651 (comment of 2026-03-03):
      torchvision's MobileNetV2 (width 1.0) on an Alif E8's high-performance Cortex-M55,
      CMSIS-NN through ExecuTorch's Cortex-M backend, cycles per operator. The thread names
      each op (quantized_conv2d, quantized_depthwise_conv2d) and its cycles; the shapes below
      are torchvision's MobileNetV2 layers in that order at its 224x224 input (an assumption:
      the comment does not print them), padding 1 on both sides, which for these sizes has
      as many in-bounds taps as TFLite's SAME.
  [tinyengine] github.com/mit-han-lab/tinyengine README, "Measured Results" (commit 47bb283):
      latency of whole int8 models on an STM32H743 (Cortex-M7) with TF-Lite Micro + CMSIS-NN
      (CMSIS-NN @ 011bf32) and with TinyEngine; the models' MACs from the model zoo of
      github.com/mit-han-lab/mcunet (README). The README names no clock: the H743's 480 MHz
      maximum is assumed (at 400 MHz every cycles/MAC below is 0.83x).
  [cmsis-nn-paper] Lai, Suda, Chandra, "CMSIS-NN: Efficient Neural Network Kernels for Arm
      Cortex-M CPUs", arXiv:1801.06601 (2018): its CIFAR-10 CNN on a Cortex-M7 (STM32F746,
      216 MHz) at about 1.7 cycles a MAC for the whole network, as issue 41 reads it (the
      paper's table could not be re-read from here).
"""

import int8_zoo
import op_work
from microtrain.nn import image as _image

# [executorch-17651]: (torchvision layer, the zoo kind it is, (H, W, C), kernel, stride,
# output channels, depthwise, cycles)
EXECUTORCH_M55 = (
    ("features.0 (stem)", int8_zoo.STEM, (224, 224, 3), 3, 2, 32, False, 13754047),
    ("features.1 depthwise", int8_zoo.DEPTHWISE_1, (112, 112, 32), 3, 1, 32, True, 13715766),
    ("features.1 project", int8_zoo.POINTWISE_PROJECT, (112, 112, 32), 1, 1, 16, False, 4915937),
    ("features.2 expand", int8_zoo.POINTWISE_EXPAND, (112, 112, 16), 1, 1, 96, False, 24249462),
    ("features.2 depthwise", int8_zoo.DEPTHWISE_2, (112, 112, 96), 3, 2, 96, True, 10286711),
    ("features.2 project", int8_zoo.POINTWISE_PROJECT, (56, 56, 96), 1, 1, 24, False, 2791555),
    ("features.3 expand", int8_zoo.POINTWISE_EXPAND, (56, 56, 24), 1, 1, 144, False, 10329014),
    ("features.3 depthwise", int8_zoo.DEPTHWISE_1, (56, 56, 144), 3, 1, 144, True, 15319785),
)

# [tinyengine]: (model, MACs (mcunet's zoo), ms with TF-Lite Micro + CMSIS-NN, ms with
# TinyEngine), STM32H743
TINYENGINE_H743 = (
    ("mcunet-vww0", 6.0e6, 53, 27),
    ("mcunet-vww1", 11.6e6, 97, 51),
    ("mcunet-vww2", 55.8e6, 478, 234),
    ("mcunet-in0", 6.4e6, 51, 25),
    ("mcunet-in1", 12.8e6, 103, 56),
    ("mcunet-in2", 67.3e6, 642, 280),
    ("mcunet-in3", 81.8e6, 770, 336),
)
H743_HZ = 480e6


def layer_macs(shape, kernel, stride, out_channels, depthwise):
    """MACs of one layer as op_work counts them (taps in the SAME padding are none)"""
    h, w, c = shape
    taps = op_work.conv_taps(h, w, kernel, kernel, (stride, stride), _image.PADDING_SAME)
    return taps * c * (1 if depthwise else out_channels)


def executorch_rows():
    """[(layer, kind, shape text, MACs, cycles, cycles/MAC)]"""
    rows = []
    for name, kind, shape, kernel, stride, oc, depthwise, cycles in EXECUTORCH_M55:
        macs = layer_macs(shape, kernel, stride, oc, depthwise)
        text = "%d×%d×%d, %s" % (shape + ("depthwise %d×%d stride %d" % (kernel, kernel, stride)
                                          if depthwise else "%d×%d stride %d → %d" % (kernel, kernel, stride, oc),))
        rows.append((name, kind, text, macs, cycles, cycles / float(macs)))
    return rows


def tinyengine_rows():
    """[(model, MACs, CMSIS-NN cycles/MAC, TinyEngine cycles/MAC, speed-up)]"""
    return [(model, macs, ms_cmsis * 1e-3 * H743_HZ / macs, ms_te * 1e-3 * H743_HZ / macs,
             ms_cmsis / float(ms_te)) for model, macs, ms_cmsis, ms_te in TINYENGINE_H743]


def _ours(results, core, kind):
    """microtrain's instructions/MAC on ``core`` for the zoo layers of ``kind``, 'a-b' when
    several"""
    for board, result in results.items():
        if result["core"] != core:
            continue
        values = sorted(r["forward"] / float(r["work"]) for r in result["rows"]
                        if r["kind"] == kind)
        if values:
            return "%.2f" % values[0] if len(values) == 1 else "%.2f-%.2f" % (values[0], values[-1])
    return "-"


def markdown(results):
    """The published figures as Markdown, beside ``results`` (arm_int8_ops.measure's) where a
    zoo layer is of the same kind"""
    lines = ["CMSIS-NN on a Cortex-M55, per layer [executorch-17651], beside microtrain's M55",
             "(instructions: the zoo's layers of the same kind, at MobileNetV2-w0.35 128×128's",
             "smaller shapes); cycles and instructions are not the same unit (`benchmarks/"
             "int8_published.py`):", "",
             "| torchvision MobileNetV2 layer | shape | MACs | CMSIS-NN cycles | cycles/MAC | "
             "microtrain M55 instr./MAC (same kind) |",
             "|---|---|---:|---:|---:|---:|"]
    for name, kind, text, macs, cycles, per in executorch_rows():
        lines.append("| %s | %s | %d | %d | %.2f | %s |" % (name, text, macs, cycles, per,
                                                           _ours(results, "M55", kind)))
    lines += ["", "Whole models on an STM32H743 (Cortex-M7) [tinyengine], cycles per MAC at "
              "480 MHz:", "",
              "| model | MACs | TF-Lite Micro + CMSIS-NN | TinyEngine | TinyEngine's speed-up |",
              "|---|---:|---:|---:|---:|"]
    for model, macs, cmsis, te, speedup in tinyengine_rows():
        lines.append("| %s | %.1fM | %.2f | %.2f | %.2f× |" % (model, macs / 1e6, cmsis, te,
                                                             speedup))
    return "\n".join(lines)
