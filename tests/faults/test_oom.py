"""The device running out of memory in a step (simulated: the step raises
``torch.cuda.OutOfMemoryError`` as CUDA's allocator does) is a clear error: where, the batch's
size and its largest graph, what to change; the checkpoint of the last finished epoch is kept
and continues the run with the numbers of an unbroken one."""

import pytest
import torch

from autogcl.errors import OutOfMemory, TrainingError

from .common import same_weights, small_fit, untimed, weights


def out_of_memory():
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_out_of_memory_names_the_batch_and_keeps_the_last_epoch(data_root, tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(OutOfMemory) as info:
        small_fit(data_root, ckpt, epochs=4, at=(3, 1), action=out_of_memory)
    msg = str(info.value)
    assert isinstance(info.value, TrainingError)
    assert "ran out of memory at epoch 3, batch 1, a batch of 64 graphs" in msg
    assert "largest graph: " in msg and " nodes)" in msg
    assert f"the checkpoint of epoch 2 is kept in {ckpt}" in msg
    assert "--batch-size" in msg and "--device cpu" in msg and "host memory" in msg
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2  # written at the error (ckpt_every=10)
    ref, ref_rows = small_fit(data_root, epochs=4)
    resumed, rows = small_fit(data_root, ckpt, epochs=4)
    assert untimed(rows) == untimed(ref_rows) and same_weights(weights(resumed), weights(ref))


def test_out_of_memory_in_the_first_epoch_says_nothing_was_finished(data_root, tmp_path):
    with pytest.raises(OutOfMemory, match="epoch 1, batch 0, .*; no epoch had finished"):
        small_fit(data_root, tmp_path / "ckpt.pt", epochs=2, at=(1, 0), action=out_of_memory)
