"""Device resolution and the runtime record (the CUDA paths run on CPU-only machines too)."""

import pytest
import torch

from autogcl.devices import resolve_device, runtime_info
from autogcl.errors import ConfigError


def test_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(None) == resolve_device("auto")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_cuda_without_a_gpu_is_an_error():
    for spec in ("cuda", "cuda:0", "CUDA:1"):
        with pytest.raises(ConfigError, match="sees no CUDA GPU"):
            resolve_device(spec)


def test_unknown_devices_are_errors():
    for spec in ("gpu", "tpu:0", "cpux"):
        with pytest.raises(ConfigError, match="device"):
            resolve_device(spec)


def test_runtime_record():
    info = runtime_info("cpu")
    assert info == {"device": "cpu", "torch_threads": torch.get_num_threads(), "torch": torch.__version__}
