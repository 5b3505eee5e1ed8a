"""Writes the CI subset of the torchvision sweep: the same model builders (torchvision's classes
and the sweep's BERT-style encoder) at a tiny width and depth, random weights, exported by
torch into tests/python/tiny_models/ (checked in, ~1 MB in all, so that the test suite needs
ONNX Runtime but not torch). One opset per model, to stay small: 13 where torch writes the
decomposed LayerNorm and Gelu (ViT, BERT), 17 where it writes LayerNormalization. tiny_model_cases.py turns them into conformance
cases with ONNX Runtime's outputs.

  make_tiny_models.py [OUT]     (default: tiny_models/ next to this script)
Exit status: 0 = written, 3 = torch/torchvision missing."""
import os
import sys

try:
    import torch
    import torchvision.models as tvm
    from torchvision.models import convnext, efficientnet, swin_transformer, vision_transformer
    from torchvision.models.segmentation import lraspp
except ImportError as e:
    print(f"skipped: {e}", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_models import BertEncoder  # noqa: E402


def image(size):
    return (torch.randn(1, 3, size, size),)


class SegOut(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def random_head(vit):
    # torchvision zero-initializes a ViT's head: its logits would be 0 whatever the encoder
    # computed, and comparing them would test nothing.
    torch.nn.init.normal_(vit.heads.head.weight, std=0.5)
    torch.nn.init.normal_(vit.heads.head.bias, std=0.5)
    return vit


def models():
    """name -> (module, example inputs, opset)."""
    conf, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.1,
                                                 depth_mult=0.1)
    seg_backbone = tvm.mobilenet_v3_small(weights=None, width_mult=0.1, dilated=True)
    return {
        "efficientnet": (efficientnet.EfficientNet(conf, 0.2, num_classes=10,
                                                   last_channel=last), image(32), 13),
        "convnext": (convnext.ConvNeXt([convnext.CNBlockConfig(16, 32, 2),
                                        convnext.CNBlockConfig(32, None, 1)], num_classes=10),
                     image(32), 17),
        "vit": (random_head(vision_transformer.VisionTransformer(
                    32, 8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                    num_classes=10)), image(32), 13),
        "swin": (swin_transformer.SwinTransformer([4, 4], 8, [2, 2], [1, 2], [4, 4],
                                                  num_classes=10), image(32), 17),
        "lraspp": (SegOut(lraspp._lraspp_mobilenetv3(seg_backbone, 3)), image(40), 17),
        "bert": (BertEncoder(vocab=100, seq=16, d=32, heads=2, layers=2, ff=64),
                 (torch.randint(0, 100, (1, 16)),), 13),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "tiny_models")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, (model, args, opset) in models().items():
        model.eval()
        path = os.path.join(out, f"{name}_op{opset}.onnx")
        names = [f"input{i}" for i in range(len(args))]
        torch.onnx.export(model, args, path, opset_version=opset, input_names=names,
                          do_constant_folding=True)
        print(f"{path}: {os.path.getsize(path) // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
