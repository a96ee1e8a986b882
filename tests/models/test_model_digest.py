"""Model files prove their integrity (issue 59): every model file autogcl saves holds the
SHA-256 of each weight tensor, and every load checks it, naming the file and the damaged
tensor; a file saved before the digest loads with a note that it carries none."""

from __future__ import annotations

import logging
import struct
import zipfile

import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.atomic import DIGEST_KEY
from autogcl.errors import DataError


def damage_one_tensor(path) -> str:
    """Flip bytes in the middle of one tensor's storage inside the file (a torch zip archive)
    and return the name of the tensor that changed."""
    before = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    with zipfile.ZipFile(path) as z:
        entries = sorted((i for i in z.infolist() if "/data/" in i.filename and i.file_size >= 64),
                         key=lambda i: -i.file_size)
        info = entries[0]
    raw = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len + info.file_size // 2
    for i in range(start, start + 8):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    after = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]  # torch cannot tell
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) == 1, changed
    return changed[0]


def drop_digest(path) -> None:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    del blob[DIGEST_KEY]
    torch.save(blob, path)


def graphs(n=6):
    gen = torch.Generator().manual_seed(0)
    return [Data(x=torch.randn(5, 3, generator=gen), edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]),
                 y=torch.tensor([i % 2])) for i in range(n)]


def saved_files(tmp_path):
    """``(file, its loader)`` of every kind of model file autogcl saves."""
    from autogcl.molecules import MoleculeEncoder, MoleculePredictor

    torch.manual_seed(0)
    out = []
    for model in (autogcl.AutoGCL(3, hidden=8, num_layers=2),
                  autogcl.SemiSupervised(3, hidden=8, num_layers=2, num_classes=2)):
        out.append((model.save(tmp_path / f"{type(model).__name__}.pt"), type(model).load))
    enc = MoleculeEncoder(dim=16, num_layers=2)
    out.append((enc.save(tmp_path / "encoder.pt"), MoleculeEncoder.load))
    pred = enc.finetune(["CCO", "CCN", "CCCl", "OCCO"], [0, 1, 0, 1], epochs=1, batch_size=2, split="none",
                        selection="last", device="cpu", progress=False)
    out.append((pred.save(tmp_path / "predictor.pt"), MoleculePredictor.load))
    return out


def test_every_saved_model_file_holds_a_digest_and_loads(tmp_path):
    for path, load in saved_files(tmp_path):
        blob = torch.load(path, map_location="cpu", weights_only=True)
        assert set(blob[DIGEST_KEY]) == set(blob["state_dict"]), path
        load(path)
        autogcl.load(path)


def test_a_damaged_tensor_is_refused_naming_the_file_and_the_tensor(tmp_path):
    for path, load in saved_files(tmp_path):
        tensor = damage_one_tensor(path)
        for loader in (load, autogcl.load):
            with pytest.raises(DataError, match=rf"{path}: a damaged model file: tensor '{tensor}' does not match "
                                                r"the digest"):
                loader(path)


def test_a_file_without_a_digest_loads_with_a_note(tmp_path, caplog):
    for path, load in saved_files(tmp_path):
        expected = load(path).state_dict()
        drop_digest(path)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="autogcl.atomic"):
            got = load(path).state_dict()
        assert all(torch.equal(expected[k], got[k]) for k in expected)
        assert any(f"{path}: the file carries no digest" in r.getMessage() for r in caplog.records), path


def test_the_shipped_encoders_are_checked_against_the_digest_beside_them(tmp_path, caplog):
    """The shipped encoders predate the digest and stay byte for byte as published: their
    digest lies beside them (FILE.sha256.json), so they load without the note, and a damaged
    copy is refused by name."""
    import shutil

    from autogcl.molecules import PRETRAINED_DIR, MoleculeEncoder, pretrained_encoders

    assert pretrained_encoders()
    for name in pretrained_encoders():
        with caplog.at_level(logging.INFO, logger="autogcl.atomic"):
            MoleculeEncoder.load(name)
        assert not [r for r in caplog.records if "carries no digest" in r.getMessage()], name
        copy = tmp_path / f"{name}.pt"
        shutil.copy(PRETRAINED_DIR / f"{name}.pt", copy)
        shutil.copy(PRETRAINED_DIR / f"{name}.pt.sha256.json", tmp_path / f"{name}.pt.sha256.json")
        tensor = damage_one_tensor(copy)
        with pytest.raises(DataError, match=rf"{copy}: a damaged model file: tensor '{tensor}' does not match"):
            MoleculeEncoder.load(copy)
