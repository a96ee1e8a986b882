"""An unlabeled SMILES corpus for pre-training, featurised in cached chunks.

The SMILES file is streamed; every ``chunk_size`` lines become one chunk, featurised on
all cores (with progress) and cached as its own file, so memory holds one chunk at a time
and a bigger ``max_molecules`` later reuses the chunks already built. SMILES that do not
parse are skipped and reported (file, line, SMILES), never fatal.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch
from torch_geometric.data import Data

from .. import paths
from ..atomic import atomic_save, load_cache
from ..errors import ConfigError, DataError
from .datasets import GraphDataset, fingerprint
from .molecules import collate_arrays, featurize, iter_smiles

log = logging.getLogger(__name__)

CACHE_FORMAT = 1


@dataclass
class ChunkInfo:
    index: int
    path: Path
    lines: int  # SMILES lines it covers
    molecules: int  # of which parsed
    skipped: int


class MoleculeCorpus:
    """Chunks of a SMILES file: ``prepare()`` builds the missing ones, ``load(i)`` reads one.

    Args:
        path: CSV with a SMILES column (``smiles_col``, else a column named SMILES, else
            the first) or a ``.smi`` file; plain or ``.gz``.
        max_molecules: read at most this many SMILES lines (``None``: the whole file).
        chunk_size: SMILES lines per chunk.
    """

    def __init__(self, path, smiles_col: str | None = None, max_molecules: int | None = None,
                 chunk_size: int = 50_000, workers: int | None = None, progress: bool = True):
        self.path = Path(path)
        if not self.path.is_file():
            raise DataError(f"{self.path}: no such SMILES file")
        if chunk_size < 2:
            raise ConfigError("the chunk size must be at least 2 molecules")
        if max_molecules is not None and max_molecules < 2:
            raise ConfigError("--max-molecules must be at least 2")
        self.smiles_col, self.max_molecules, self.chunk_size = smiles_col, max_molecules, chunk_size
        self.workers, self.progress = workers, progress
        key = json.dumps({"format": CACHE_FORMAT, "file": str(self.path.resolve()),
                          "fp": fingerprint([self.path]), "col": smiles_col, "chunk": chunk_size},
                         sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        stem = self.path.name.split(".")[0]
        self.cache = paths.cache_dir() / "processed" / "corpus" / f"{stem}-{digest}"
        self.chunks: list[ChunkInfo] = []
        self.empty: list[ChunkInfo] = []  # chunks with fewer than 2 usable molecules

    def _chunk_path(self, i: int, lines: int) -> Path:
        return self.cache / f"chunk{i:05d}-{lines}.pt"

    def prepare(self) -> list[ChunkInfo]:
        """Build (or find) every chunk within ``max_molecules``; return their descriptions."""
        self.chunks, self.empty = [], []
        stream = iter_smiles(self.path, self.smiles_col)
        if self.max_molecules is not None:
            stream = itertools.islice(stream, self.max_molecules)
        for i in itertools.count():
            block = list(itertools.islice(stream, self.chunk_size))
            if not block:
                break
            path = self._chunk_path(i, len(block))
            cached = load_cache(path, ("data", "slices", "info"))
            if cached is not None:
                info = cached["info"]
            else:
                lines, smiles = zip(*block)
                feats = featurize(list(smiles), list(lines), source=f"{self.path.name} chunk {i}",
                                  workers=self.workers, progress=self.progress)
                for s in feats.skipped:
                    log.warning("%s", s)
                info = {"lines": len(block), "molecules": len(feats.arrays),
                        "skipped": [vars(s) for s in feats.skipped], "first_line": lines[0]}
                data, slices = collate_arrays(feats.arrays)
                atomic_save({"data": data.to_dict(), "slices": slices, "info": info}, path)
            chunk = ChunkInfo(i, path, info["lines"], info["molecules"], len(info["skipped"]))
            if chunk.molecules < 2:  # nothing to contrast: kept in the counts, never trained on
                log.warning("%s: chunk %d (lines %d-%d) has %d usable molecule(s); skipped", self.path,
                            i, info["first_line"], info["first_line"] + info["lines"] - 1, chunk.molecules)
                self.empty.append(chunk)
            else:
                self.chunks.append(chunk)
        if not self.chunks:
            raise DataError(f"{self.path}: no chunk with at least 2 molecules that parse "
                            f"({sum(c.lines for c in self.empty)} SMILES lines read)")
        return self.chunks

    def load(self, i: int) -> GraphDataset:
        blob = torch.load(self.chunks[i].path, weights_only=True)
        return GraphDataset(Data.from_dict(blob["data"]), blob["slices"], f"{self.path.name}[{i}]",
                            {"chunk": i, **blob["info"]})

    def summary(self) -> dict:
        every = self.chunks + self.empty
        return {"file": str(self.path), "chunk_size": self.chunk_size,
                "max_molecules": self.max_molecules, "chunks": len(self.chunks),
                "lines": sum(c.lines for c in every),
                "molecules": sum(c.molecules for c in self.chunks),
                "skipped": sum(c.skipped for c in every),
                "unused_molecules": sum(c.molecules for c in self.empty)}
