"""SqueezeNet 1.1 and ResNet-50 at their real sizes, in plain PyTorch (torchvision does not
import with this torch): the ONNX model zoo's classics, whose exports hold what
test_onnx_classics.py converts: ResNet's stem MaxPool (3x3, stride 2, pads 1 on 112x112:
neither SAME nor VALID), its stride-2 3x3 convolutions with pads 1 on even sizes,
SqueezeNet's ceil_mode max pools and its softmax over the channels of [N, C, 1, 1].

The architectures are torchvision's (SqueezeNet 1.1: the 3x3 stride-2 stem and the pools
after Fire modules 1, 3 and 5; ResNet-50 v1.5: the stride on the bottleneck's 3x3), with
weights from a fixed seed (torch_models._randomise: BatchNorm statistics away from
identity) and in eval mode.
"""

import torch
from torch import nn

from torch_models import Fire, _randomise


class SqueezeNet11(nn.Module):
    """SqueezeNet 1.1 with the model zoo's ending: the class scores as [N, C, 1, 1] and a
    softmax over their channels."""

    def __init__(self, classes=1000):
        super().__init__()
        pool = dict(kernel_size=3, stride=2, ceil_mode=True)
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True), nn.MaxPool2d(**pool),
            Fire(64, 16, 64), Fire(128, 16, 64), nn.MaxPool2d(**pool),
            Fire(128, 32, 128), Fire(256, 32, 128), nn.MaxPool2d(**pool),
            Fire(256, 48, 192), Fire(384, 48, 192), Fire(384, 64, 256), Fire(512, 64, 256))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, classes, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.softmax(self.classifier(self.features(x)), dim=1)


class Bottleneck(nn.Module):
    def __init__(self, channels, width, stride):
        super().__init__()
        out = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out))
        self.down = None
        if stride != 1 or channels != out:
            self.down = nn.Sequential(nn.Conv2d(channels, out, 1, stride, bias=False),
                                      nn.BatchNorm2d(out))

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        blocks, channels = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for index in range(count):
                blocks.append(Bottleneck(channels, width, stride if index == 0 else 1))
                channels = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def classic_models():
    """name -> (module in eval mode, example input [1, 3, 224, 224])."""
    example = torch.zeros(1, 3, 224, 224)
    return {"squeezenet1_1": (_randomise(SqueezeNet11(), 40), example),
            "resnet50": (_randomise(ResNet50(), 41), example)}
