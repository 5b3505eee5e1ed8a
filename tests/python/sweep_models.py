"""The models of the torchvision sweep (torchvision_sweep.py): how to build each with random
weights and what to feed it. Inputs are as small as the model allows (224 where an adaptive
pool or a fixed patch grid needs it), so that the sweep stays quick on two cores."""
import torch
import torchvision.models as tvm
import torchvision.models.segmentation as seg


def image(size):
    return lambda: [torch.randn(1, 3, size, size)]


def classifier(fn, size, **kwargs):
    return {"build": lambda: fn(weights=None, **kwargs), "inputs": image(size)}


def random_head(vit):
    # torchvision zero-initializes a ViT's head: its logits would be 0 whatever the encoder
    # computed, and comparing them would test nothing.
    torch.nn.init.normal_(vit.heads.head.weight, std=0.02)
    torch.nn.init.normal_(vit.heads.head.bias, std=0.02)
    return vit


def segmenter(fn, size, **kwargs):
    # weights_backbone=None: nothing is downloaded; the output is a dict, keep "out".
    class Out(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = fn(weights=None, weights_backbone=None, **kwargs)

        def forward(self, x):
            return self.m(x)["out"]

    return {"build": Out, "inputs": image(size)}


class BertEncoder(torch.nn.Module):
    """A BERT-style encoder, small: token + position embeddings, LayerNorm, post-norm
    transformer layers with GELU, a tanh pooler on the first token."""

    def __init__(self, vocab=1000, seq=32, d=128, heads=4, layers=2, ff=512):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        self.norm = torch.nn.LayerNorm(d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                                 batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pool = torch.nn.Linear(d, d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.enc(self.norm(self.tok(ids) + self.pos(pos)))
        return h, torch.tanh(self.pool(h[:, 0]))


def bert_inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 1000, (1, 32), generator=g)]


MODELS = {
    "resnet18": classifier(tvm.resnet18, 64),
    "resnet50": classifier(tvm.resnet50, 64),
    "resnext50_32x4d": classifier(tvm.resnext50_32x4d, 64),
    "wide_resnet50_2": classifier(tvm.wide_resnet50_2, 64),
    "vgg11_bn": classifier(tvm.vgg11_bn, 224),
    "alexnet": classifier(tvm.alexnet, 224),
    "squeezenet1_1": classifier(tvm.squeezenet1_1, 64),
    "densenet121": classifier(tvm.densenet121, 64),
    "inception_v3": classifier(tvm.inception_v3, 96, aux_logits=False, init_weights=True),
    "googlenet": classifier(tvm.googlenet, 64, aux_logits=False, init_weights=True),
    "shufflenet_v2_x1_0": classifier(tvm.shufflenet_v2_x1_0, 64),
    "mobilenet_v2": classifier(tvm.mobilenet_v2, 224),
    "mobilenet_v3_small": classifier(tvm.mobilenet_v3_small, 64),
    "mobilenet_v3_large": classifier(tvm.mobilenet_v3_large, 64),
    "mnasnet1_0": classifier(tvm.mnasnet1_0, 64),
    "efficientnet_b0": classifier(tvm.efficientnet_b0, 224),
    "efficientnet_v2_s": classifier(tvm.efficientnet_v2_s, 64),
    "regnet_y_400mf": classifier(tvm.regnet_y_400mf, 64),
    "convnext_tiny": classifier(tvm.convnext_tiny, 64),
    "vit_b_16": {"build": lambda: random_head(tvm.vit_b_16(weights=None)), "inputs": image(224)},
    "swin_t": classifier(tvm.swin_t, 64),
    "fcn_resnet50": segmenter(seg.fcn_resnet50, 64, aux_loss=False),
    "deeplabv3_mobilenet_v3_large": segmenter(seg.deeplabv3_mobilenet_v3_large, 64,
                                              aux_loss=False),
    "lraspp_mobilenet_v3_large": segmenter(seg.lraspp_mobilenet_v3_large, 64),
    "bert_encoder": {"build": BertEncoder, "inputs": bert_inputs},
}
