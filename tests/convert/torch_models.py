"""PyTorch modules behind the ONNX fixtures and the real-world-style graphs.

Small on purpose (8x8 or 9x9 images, a few channels): the graphs have the shapes of
SqueezeNet (Fire modules: squeeze 1x1, expand 1x1 and 3x3 joined on channels, max
pooling with ceil_mode), ResNet (3x3 convs with BatchNorm, identity and 1x1-strided
shortcuts, global pooling) and VGG (3x3 conv stacks, 2x2 max pooling, flatten into a
classifier), not their sizes. torchvision is not usable here, so they are defined here.
"""

import torch
from torch import nn


def _randomise(module, seed):
    """Weights from a fixed seed; BatchNorm statistics away from identity."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, (nn.BatchNorm1d, nn.BatchNorm2d)):
                n = sub.num_features
                sub.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                sub.bias.copy_(torch.rand(n, generator=generator) * 0.6 - 0.3)
                sub.running_mean.copy_(torch.rand(n, generator=generator) * 0.4 - 0.2)
                sub.running_var.copy_(torch.rand(n, generator=generator) * 1.5 + 0.5)
            elif isinstance(sub, (nn.Linear, nn.Conv2d)):
                fan_in = sub.weight[0].numel()
                bound = 1.0 / fan_in ** 0.5
                sub.weight.copy_((torch.rand(sub.weight.shape, generator=generator) * 2 - 1)
                                 * bound)
                if sub.bias is not None:
                    sub.bias.copy_((torch.rand(sub.bias.shape, generator=generator) * 2 - 1)
                                   * bound)
    return module.eval()


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Dropout(0.25),
                                  nn.Linear(12, 8), nn.BatchNorm1d(8), nn.Tanh(),
                                  nn.Linear(8, 6), nn.LeakyReLU(0.1), nn.Linear(6, 4),
                                  nn.Sigmoid(), nn.Linear(4, 3), nn.Softmax(dim=1))

    def forward(self, x):
        return self.body(x)


class CnnBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3), nn.ReLU6(), nn.Dropout(0.3))
        self.classifier = nn.Linear(6 * 2 * 2, 5)

    def forward(self, x):
        return torch.softmax(self.classifier(torch.flatten(self.features(x), 1)), dim=1)


class DepthwiseResidual(nn.Module):
    def __init__(self):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(4, 8, 1), nn.ReLU6())
        self.depthwise = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),
                                       nn.BatchNorm2d(8), nn.ReLU6())
        self.project = nn.Conv2d(8, 4, 1)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.project(self.depthwise(self.expand(x))) + x
        h = self.pool(h).mean(dim=(2, 3))
        return self.head(h)


class GapConcat(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 3, 3, padding=1)
        self.b = nn.Conv2d(2, 5, 1)
        self.c = nn.Conv2d(8, 6, 3, stride=2, padding=1, bias=False)
        self.head = nn.Linear(6, 4)

    def forward(self, x):
        h = torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], dim=1)
        h = nn.functional.max_pool2d(h, 2, stride=1)  # 7x7: pads=1 equal SAME below
        h = torch.relu(self.c(h))
        h = nn.functional.adaptive_avg_pool2d(h, 1).flatten(1)
        return torch.softmax(self.head(h), dim=1)


class Fire(nn.Module):
    def __init__(self, channels, squeeze, expand):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(channels, squeeze, 1), nn.ReLU(inplace=True))
        self.expand1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU(inplace=True))
        self.expand3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1),
                                     nn.ReLU(inplace=True))

    def forward(self, x):
        h = self.squeeze(x)
        return torch.cat([self.expand1(h), self.expand3(h)], 1)


class SqueezeNetStyle(nn.Module):
    """torchvision's SqueezeNet 1.1 in small: stem, ceil-mode max pools, Fire modules, a
    1x1 conv classifier and global average pooling."""

    def __init__(self, classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=1, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            Fire(8, 4, 6), Fire(12, 4, 6),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            Fire(12, 6, 8))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(16, classes, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


class BasicBlock(nn.Module):
    def __init__(self, channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.down = None
        if stride != 1 or channels != out_channels:
            self.down = nn.Sequential(nn.Conv2d(channels, out_channels, 1, stride, bias=False),
                                      nn.BatchNorm2d(out_channels))

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return torch.relu(h + (x if self.down is None else self.down(x)))


class ResNetStyle(nn.Module):
    """torchvision's ResNet-18 in small: conv-BN-ReLU stem, basic blocks with identity
    and strided 1x1 shortcuts, global average pooling, a linear classifier."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 12, 2)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(12, classes)

    def forward(self, x):
        h = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(h), 1))


class VggStyle(nn.Module):
    """torchvision's VGG in small: 3x3 conv stacks with BatchNorm, 2x2 max pooling, and a
    flattened feature map into a Linear-ReLU-Dropout classifier."""

    def __init__(self, classes=5):
        super().__init__()

        def block(channels, out_channels):
            return [nn.Conv2d(channels, out_channels, 3, padding=1),
                    nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*block(3, 6), *block(6, 6), nn.MaxPool2d(2, 2),
                                      *block(6, 8), nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(nn.Linear(8 * 2 * 2, 16), nn.ReLU(True),
                                        nn.Dropout(), nn.Linear(16, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def fixture_models():
    """name -> (module in eval mode, example input) of the committed ONNX fixtures."""
    return {
        "torch_mlp": (_randomise(Mlp(), 10), torch.zeros(1, 16)),
        "torch_cnn_bn": (_randomise(CnnBn(), 11), torch.zeros(1, 3, 8, 8)),
        "torch_depthwise_residual": (_randomise(DepthwiseResidual(), 12),
                                     torch.zeros(1, 4, 8, 8)),
        "torch_gap_concat": (_randomise(GapConcat(), 13), torch.zeros(1, 2, 8, 8)),
    }


def real_world_models():
    """name -> (module, example input): the SqueezeNet-, ResNet- and VGG-style graphs,
    ResNet at two sizes (9x9: its strided pads=1 convs equal SAME; 8x8: they do not)."""
    return {
        "squeezenet_style": (_randomise(SqueezeNetStyle(), 20), torch.zeros(1, 3, 9, 9)),
        "resnet_style_9x9": (_randomise(ResNetStyle(), 21), torch.zeros(1, 3, 9, 9)),
        "resnet_style_8x8": (_randomise(ResNetStyle(), 21), torch.zeros(1, 3, 8, 8)),
        "vgg_style": (_randomise(VggStyle(), 22), torch.zeros(1, 3, 8, 8)),
    }


def skip_torch_export_under_asan():
    """torch.onnx.export aborts inside PyTorch when tools/run_sanitizers.sh preloads the
    ASan runtime (an ASan report in torch's own code, measured with torch 2.13; microtrain's
    code is not involved): tests that export skip there, the plain run covers them."""
    import os
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        import pytest
        pytest.skip("torch.onnx.export aborts inside PyTorch under a preloaded ASan runtime; "
                    "the plain test run exports")


def export_onnx(module, example, path, dynamo=False):
    """torch.onnx.export with a dynamic batch dimension (as users export)."""
    skip_torch_export_under_asan()
    module.eval()
    names = {"input_names": ["input"], "output_names": ["output"]}
    with torch.no_grad():
        if dynamo:
            batch = torch.export.Dim("batch", min=1, max=1024)
            torch.onnx.export(module, (example,), path, dynamo=True, external_data=False,
                              dynamic_shapes=({0: batch},), **names)
        else:
            torch.onnx.export(module, (example,), path, dynamo=False, opset_version=17,
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              **names)


# ---------------------------------------------------------------- graphs of the layout and
# arithmetic ops (PAD, MUL, SUB, TRANSPOSE): what converters emit around convolutions


class NormalisedSilu(nn.Module):
    """Input normalisation by constants (Sub, Div on the NCHW input), a stride-2 conv with
    pads=1 on an even size (a PAD), SiLU (Sigmoid and Mul of two activations), a scale and
    shift by scalars, 1 - x (a constant minus an activation), and the feature map itself
    as the output (NCHW, as ONNX Runtime gives it)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.1, -0.2, 0.3]).reshape(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.9, 1.1, 1.3]).reshape(1, 3, 1, 1))
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(4, 5, 1)

    def forward(self, x):
        h = self.conv((x - self.mean) / self.std)
        h = h * torch.sigmoid(h)
        h = torch.relu(self.conv2(h)) * 0.5 - 0.25
        return 1.0 - h


class ChannelsLastHead(nn.Module):
    """A permute to NHWC and a mean over H, W (tf2onnx's shape of global pooling), then a
    classifier; and a zero-padded average pool that counts the padding."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 6, 3)
        self.pool = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=True)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        h = self.pool(torch.relu(self.conv(nn.functional.pad(x, (1, 2, 0, 1)))))
        return torch.softmax(self.head(h.permute(0, 2, 3, 1).mean(dim=(1, 2))), dim=1)


class FlattenedSoftmax(nn.Module):
    """A softmax over a flattened NCHW feature map, a permute the core must do (not a
    relabelling), and the difference of two branches."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 2, 3, padding=1)
        self.b = nn.Conv2d(3, 2, 1)

    def forward(self, x):
        h = self.a(x) - self.b(x)
        swapped = h.permute(0, 1, 3, 2).flatten(1)
        return torch.softmax(h.flatten(1), dim=1) + swapped


def layout_models():
    """name -> (module, example input) of graphs that use PAD, MUL, SUB and TRANSPOSE."""
    return {
        "normalised_silu": (_randomise(NormalisedSilu(), 30), torch.zeros(1, 3, 8, 8)),
        "channels_last_head": (_randomise(ChannelsLastHead(), 31), torch.zeros(1, 2, 7, 7)),
        "flattened_softmax": (_randomise(FlattenedSoftmax(), 32), torch.zeros(1, 3, 4, 5)),
    }
