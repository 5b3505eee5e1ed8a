"""The Ray Serve example (examples/serve/) end to end: Ray started locally, one CPU replica,
requests over loopback HTTP, every answer checked against a direct Session.run."""
import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

import minfer

if os.environ.get("MINFER_REQUIRE_SERVE") != "1":  # scripts/test.sh requires it
    pytest.importorskip("ray.serve")
import ray  # noqa: E402
from ray import serve  # noqa: E402

SERVE_DIR = str(Path(__file__).resolve().parents[2] / "examples" / "serve")
sys.path.insert(0, SERVE_DIR)
import load  # noqa: E402
import minfer_serve  # noqa: E402

MODEL = "cifar-resnet20"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    # Ray's workers import the deployment's module by name: they need its folder on their path.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [SERVE_DIR, os.environ.get("PYTHONPATH", "")] if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(minfer_serve.build_app(MODEL, replicas=1, threads=1, max_batch_size=8,
                                         batch_wait_s=0.01), route_prefix="/")
        yield f"http://127.0.0.1:{port}/"
    finally:
        serve.shutdown()
        ray.shutdown()


def test_every_answer_matches_a_direct_run(server):
    rng = np.random.default_rng(7)
    images = [rng.standard_normal((3, 32, 32), dtype=np.float32) for _ in range(48)]
    answers, seconds, _ = load.run_load(server, images, concurrency=16)
    direct = minfer.Session(MODEL, threads=1)
    for image, answer in zip(images, answers):
        want = direct.run({"input": image[None]})["logits"][0]
        got = np.array(answer["logits"], dtype=np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert answer["class"] == int(np.argmax(want))
    assert seconds < 120
    # dynamic batching: with 16 requests in flight, some ran together
    assert max(a["batch"] for a in answers) > 1


def test_bad_request_is_refused(server):
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as e:
        load.post(server, np.zeros((3, 8, 8), dtype=np.float32))
    assert e.value.code == 400
    assert "expected 12288 bytes" in e.value.read().decode()
