"""Pre-training on a SMILES corpus: chunks, one step end to end, resume after interruption."""

from __future__ import annotations

import pytest
import torch

from autogcl.data.corpus import MoleculeCorpus
from autogcl.data.molecules import VOCAB
from autogcl.errors import ConfigError
from autogcl.models.mol_gin import load_encoder
from autogcl.protocols import pretrain as P


@pytest.fixture
def corpus(data_root, tmp_path):
    import gzip

    with gzip.open(data_root / "pretrain" / "moses_train.csv.gz", "rt") as f:
        lines = [next(f) for _ in range(121)]  # header + 120 SMILES
    p = tmp_path / "slice.csv"
    p.write_text("".join(lines))
    return p


def small(**kw):
    return P.PretrainConfig(**{"epochs": 1, "batch_size": 16, "chunk_size": 50, "dim": 16, "num_layers": 2,
                               "gen_hidden": 8, **kw})


def test_corpus_chunks_are_cached_and_bounded(corpus):
    c = MoleculeCorpus(corpus, max_molecules=110, chunk_size=50, workers=1, progress=False)
    chunks = c.prepare()
    assert [ch.lines for ch in chunks] == [50, 50, 10] and c.summary()["molecules"] == 110
    assert len(c.load(2)) == 10
    again = MoleculeCorpus(corpus, max_molecules=110, chunk_size=50, workers=1, progress=False)
    assert [ch.path for ch in again.prepare()] == [ch.path for ch in chunks]  # built once


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_pretrain_one_step(corpus, tmp_path, method):
    res = P.pretrain(small(corpus=str(corpus), method=method), tmp_path / method, workers=1,
                     show_progress=False, max_steps=1)
    assert res["steps"] == 1 and res["stopped_early"] and res["molecules_seen"] == 16
    _state, arch, meta = load_encoder(tmp_path / method / "encoder.pt")
    assert arch == {"dim": 16, "num_layers": 2, "vocab": VOCAB} and meta["method"] == method


def test_resume_after_interruption_gives_the_same_encoder(corpus, tmp_path, monkeypatch):
    cfg = small(corpus=str(corpus), epochs=2)
    P.pretrain(cfg, tmp_path / "full", workers=1, show_progress=False)

    calls = {"n": 0}
    load = MoleculeCorpus.load

    def flaky(self, i):
        calls["n"] += 1
        if calls["n"] == 4:  # interrupted inside epoch 2, after its first chunk
            raise KeyboardInterrupt
        return load(self, i)

    monkeypatch.setattr(MoleculeCorpus, "load", flaky)
    with pytest.raises(KeyboardInterrupt):
        P.pretrain(cfg, tmp_path / "cut", workers=1, show_progress=False)
    assert (tmp_path / ".cut.partial" / "checkpoint.pt").is_file() and not (tmp_path / "cut").exists()
    monkeypatch.setattr(MoleculeCorpus, "load", load)
    res = P.pretrain(cfg, tmp_path / "cut", workers=1, show_progress=False, resume=True)
    assert res["epochs"] == 2
    full = P.atomic.read_json(tmp_path / "full" / "result.json")
    assert res["steps"] == full["steps"]
    with pytest.raises(ConfigError, match="--resume"):  # a finished run is never overwritten silently
        P.pretrain(cfg, tmp_path / "cut", workers=1, show_progress=False)
    a, _, _ = load_encoder(tmp_path / "full" / "encoder.pt")
    b, _, _ = load_encoder(tmp_path / "cut" / "encoder.pt")
    for k in a:  # one process; the resumed run replays the unbroken one's operations: bit-exact
        assert torch.equal(a[k], b[k]), k


def test_a_chunk_without_usable_molecules_is_skipped_not_fatal(tmp_path):
    p = tmp_path / "c.smi"
    p.write_text("CCO\nCCN\nc1ccccc1\nCCC\nbad((\n")
    c = MoleculeCorpus(p, chunk_size=4, workers=1, progress=False)
    assert [ch.lines for ch in c.prepare()] == [4]
    assert c.summary()["skipped"] == 1 and c.summary()["lines"] == 5
    with pytest.raises(ConfigError, match="unknown augmentation"):
        small(corpus=str(p), aug="bogus")


def test_a_run_recorded_by_modification_time_resumes_once_name_and_size_match(corpus, tmp_path, caplog):
    cfg = small(corpus=str(corpus), method="graphcl")
    out = tmp_path / "run"
    P.pretrain(cfg, out, workers=1, show_progress=False, max_steps=1)
    conf = out / "config.json"
    current = P.atomic.read_json(conf)["corpus_fingerprint"]
    assert len(current[2]) == 64  # a SHA-256 digest
    legacy = [current[0], current[1], 1795486727323530484]  # as runs recorded it before
    P.atomic.atomic_write_json(conf, {**P.atomic.read_json(conf), "corpus_fingerprint": legacy})
    with caplog.at_level("WARNING"):
        res = P.pretrain(cfg, out, workers=1, show_progress=False, resume=True)
    assert res["steps"] == 1 and "recorded the corpus by its modification time" in caplog.text
    assert P.atomic.read_json(conf)["corpus_fingerprint"] == current
    other = [current[0], current[1] + 1, 1795486727323530484]  # another size: another corpus
    P.atomic.atomic_write_json(conf, {**P.atomic.read_json(conf), "corpus_fingerprint": other})
    with pytest.raises(ConfigError, match="corpus_fingerprint"):
        P.pretrain(cfg, out, workers=1, show_progress=False, resume=True)
