"""minfer: a small, fast deep-learning inference runtime (C++20), from Python.

    import minfer, numpy as np
    s = minfer.Session("resnet18")                      # a built-in model, or "model.onnx"
    x = np.random.rand(1, 3, 224, 224).astype(np.float32)
    logits = s.run({"input": x})["logits"]              # {output name: numpy.ndarray}

Errors are minfer.Error with `.code` ("InvalidArgument", "InvalidModel", "Unsupported",
"OutOfMemory", "Device", "Internal") and `.message`.
"""

from ._minfer import (Error, Session, cifar10_classes, cuda_available, export, load_image, models,
                      quantize)

__all__ = ["Error", "Session", "cifar10_classes", "cuda_available", "export", "load_image",
           "models", "quantize"]
__version__ = "0.1.0"
