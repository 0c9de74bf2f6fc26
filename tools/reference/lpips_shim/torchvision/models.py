"""torchvision.models.alexnet as torchvision 0.26 defines it (torchvision/models/alexnet.py), for lpips.

Only what lpips 0.1.4 reads: `alexnet(pretrained=..., weights=...).features`, an nn.Sequential whose indices
0..12 the package slices (relu1 = [0:2], relu2 = [2:5], relu3 = [5:8], relu4 = [8:10], relu5 = [10:12]). Its
modules are created in torchvision's order, so that torch.manual_seed gives the same random weights as
torchvision's AlexNet (the classifier, which lpips does not use, is built after them as in torchvision).
Checked against torchvision 0.26.0: the same repr, and the same state_dict after the same seed.
"""
import torch.nn as nn


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )


def alexnet(pretrained=False, weights=None, progress=True, **kwargs):
    if pretrained or weights is not None:
        raise RuntimeError("the torchvision stand-in has no pretrained weights: give convert_weights.py --alexnet "
                           "FILE (a torchvision AlexNet state dict), or install torchvision")
    return AlexNet(**kwargs)
