# Type stubs of the minfer package (its C++ extension, minfer._minfer).
import os
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

_Path = Union[str, "os.PathLike[str]"]

class Error(RuntimeError):
    """An error from minfer; `code` names its kind, `message` what went wrong."""
    code: str  # InvalidArgument, InvalidModel, Unsupported, OutOfMemory, Device, Internal
    message: str

class Session:
    """A model loaded, optimized and planned for one device; runs release the GIL."""
    def __init__(
        self,
        model: _Path,
        *,
        device: str = "cpu",
        precision: str = "fp32",
        threads: int = 0,
        opt_level: int = 2,
        weights: str = "",
        disabled_passes: Sequence[str] = (),
        cuda_graphs: bool = True,
    ) -> None: ...
    def run(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """{input name: array (NumPy or DLPack), C-contiguous} -> {output name: ndarray}."""
    def run_into(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        """Writes each output into the writable array (NumPy or DLPack) given for it."""
    def profile(
        self, inputs: Mapping[str, Any], *, runs: int = 10, warmup: int = 2
    ) -> dict[str, Any]:
        """Per-step times, FLOPs, bytes and roofline percentages (see minfer bench --profile)."""
    def close(self) -> None: ...
    def __enter__(self) -> "Session": ...
    def __exit__(self, *args: Any) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def model(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def input_names(self) -> list[str]: ...
    @property
    def output_names(self) -> list[str]: ...
    @property
    def inputs(self) -> dict[str, Tuple[str, Tuple[Optional[int], ...]]]: ...

def models() -> list[dict[str, Any]]:
    """The built-in models (name, dataset, num_classes, description, input_size, mean, std)."""

def export(model: _Path, output: _Path, *, opt_level: int = 0, weights: str = "") -> str:
    """Writes `model` as ONNX (opt_level 0: standard ops only); returns the path."""

def quantize(
    model: _Path,
    output: _Path,
    *,
    calibration: Sequence[Any],
    method: str = "percentile",
    percentile: float = 99.99,
    weights: str = "",
    threads: int = 0,
    exclude_nodes: Sequence[str] = (),
) -> str:
    """Calibrates on `calibration` (arrays or image/.npy paths), writes a QDQ int8 ONNX model."""

def load_image(path: _Path, model: str = "") -> np.ndarray:
    """An image as [1,3,H,W] float32, preprocessed as built-in `model` expects."""

def cifar10_classes() -> list[str]: ...
def cuda_available() -> bool: ...
