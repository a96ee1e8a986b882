"""Fixed molecular features with RDKit: Morgan count fingerprints and RDKit's 2D descriptors.

These are the features a chemist's baseline uses (a fingerprint forest) and the extra
features chemprop joins to its learned representation (``rdkit_2d``). autogcl's molecule
predictor (:class:`autogcl.PropertyPredictor`) joins them to the pre-trained encoder's
embedding. Each function takes a list of SMILES and returns a float array with one row per
SMILES; a SMILES RDKit cannot read gives a row of NaN (the caller drops or reports it).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .molecules import rdkit

#: the fixed feature blocks :func:`features` knows, in the order they are joined
BLOCKS = ("morgan", "rdkit2d")

#: RDKit descriptors beyond this magnitude are clipped (a few, such as Ipc, overflow float32)
CLIP = 1e6


def _mols(smiles):
    Chem = rdkit()
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s) if isinstance(s, str) and s.strip() else None
        out.append(mol if mol is not None and mol.GetNumAtoms() else None)
    return out


def morgan_counts(smiles, radius: int = 2, n_bits: int = 2048, counts: bool = True) -> np.ndarray:
    """Morgan (ECFP-like) fingerprints, ``molecules x n_bits`` float32: hashed counts of the
    circular environments up to ``radius`` bonds (``counts=False``: 0/1 bits)."""
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    mols = _mols(smiles)
    out = np.full((len(mols), n_bits), np.nan, dtype=np.float32)
    for i, mol in enumerate(mols):
        if mol is not None:
            out[i] = gen.GetCountFingerprintAsNumPy(mol) if counts else gen.GetFingerprintAsNumPy(mol)
    return out


def descriptor_names() -> list[str]:
    """The names of RDKit's 2D descriptors, in :func:`rdkit_2d`'s column order."""
    rdkit()
    from rdkit.Chem import Descriptors

    return [name for name, _ in Descriptors._descList]


def rdkit_2d(smiles) -> np.ndarray:
    """RDKit's 2D descriptors (``Descriptors._descList``: about 210 of them, such as MolLogP,
    TPSA and ring counts), ``molecules x descriptors`` float32. A descriptor RDKit cannot
    compute for a molecule is NaN; magnitudes beyond :data:`CLIP` are clipped."""
    rdkit()
    from rdkit.Chem import Descriptors

    funcs = [f for _, f in Descriptors._descList]
    mols = _mols(smiles)
    out = np.full((len(mols), len(funcs)), np.nan, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, mol in enumerate(mols):
            if mol is None:
                continue
            row = out[i]
            for j, f in enumerate(funcs):
                try:
                    v = float(f(mol))
                except Exception:  # RDKit raises its own types for a descriptor it cannot compute
                    continue
                row[j] = v if math.isfinite(v) else np.nan
    return np.clip(out, -CLIP, CLIP).astype(np.float32)


def features(smiles, blocks=BLOCKS, radius: int = 2, n_bits: int = 2048) -> np.ndarray:
    """The named fixed feature blocks of ``smiles``, joined column-wise (``BLOCKS``)."""
    from ..choices import check_choice

    parts = []
    for b in blocks:
        check_choice("feature block", b, BLOCKS)
        parts.append(morgan_counts(smiles, radius, n_bits) if b == "morgan" else rdkit_2d(smiles))
    return np.concatenate(parts, axis=1) if parts else np.zeros((len(list(smiles)), 0), dtype=np.float32)
