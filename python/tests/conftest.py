"""Shared fixtures of the minfer Python tests."""
import numpy as np
import pytest

import minfer


@pytest.fixture(scope="session")
def resnet20():
    """A small built-in model (CIFAR ResNet-20, seeded weights): [N,3,32,32] -> [N,10]."""
    with minfer.Session("cifar-resnet20", threads=2) as s:
        yield s


@pytest.fixture
def cifar_batch():
    return np.random.default_rng(0).standard_normal((2, 3, 32, 32), dtype=np.float32)
