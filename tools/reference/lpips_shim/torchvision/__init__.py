"""A stand-in for torchvision, for the lpips package in the reference environment (lpips_reference.py).

lpips imports `torchvision.models` only to build AlexNet's `features` (pretrained_networks.alexnet). The real
torchvision cannot be installed beside the pinned transformers: its presence switches transformers to its
"fast" (torchvision) image processors, which changes the CLIP cases' pixels and so every recorded reference.
This package is put first on sys.path by lpips_reference.py and convert_weights.py only when torchvision is not
installed; its AlexNet is torchvision 0.26's, layer for layer (checked against it: models.py).
"""
from . import models  # noqa: F401
