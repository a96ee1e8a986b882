"""The option names of autogcl.choices agree with the components that implement them."""

import pytest

from autogcl import choices
from autogcl.augment.random import AUGMENTATIONS, RandomAugmentor
from autogcl.data.moleculenet import MOLECULENET
from autogcl.data.splits import FOLD_SEED, semi_splits
from autogcl.errors import ConfigError
from autogcl.eval.svm import SELECTIONS, select_epoch


def test_every_augmentation_name_has_an_implementation_and_back():
    assert set(choices.AUGMENTATIONS) == set(AUGMENTATIONS) | {"random4"}
    assert RandomAugmentor.names == choices.AUGMENTATIONS
    for name in choices.AUGMENTATIONS:
        assert RandomAugmentor(name, 0.1).name == name


def test_moleculenet_names_match_the_loaders_table():
    assert choices.MOLECULENET_SETS == tuple(MOLECULENET)


def test_selections_are_the_ones_select_epoch_computes():
    assert SELECTIONS == choices.SELECTIONS
    sel = select_epoch({10: {"val_acc": 0.5, "test_acc": 0.6, "test_std": 0.0, "test_fold_accs": [0.6]}})
    assert set(sel) == set(choices.SELECTIONS)


def test_fold_seed_is_the_default_of_the_split():
    import inspect

    assert FOLD_SEED == choices.FOLD_SEED == inspect.signature(semi_splits).parameters["fold_seed"].default


def test_loss_names_are_the_ones_the_losses_implement():
    from autogcl import losses

    for variant in choices.CL_VARIANTS:
        losses.cl_kwargs(variant, "autogcl")  # every name has an implementation
    assert choices.SIM_LOSSES == ("none", *losses.SIM_KINDS)  # "none": L_sim weighted 0
    with pytest.raises(ConfigError, match="unknown NT-Xent variant"):
        losses.cl_kwargs("bogus", "autogcl")


#: option values whose names come from autogcl/choices.py only (extend with each tuple whose
#: literals have been replaced by its constants)
GUARDED = {v: name for name in ("DROPPED", "MASK_TOKENS", "VIEW_SAMPLINGS", "GRAPHCL_VIEWS", "PRECISIONS", "EXECUTORS")
           for v in getattr(choices, name)}
GUARDED |= {getattr(choices, c): c for c in ("DROP_WEIGHT", "AUG_NODE_DROP", "AUG_EDGE_PERT", "AUG_SUBGRAPH",
                                             "AUG_ATTR_MASK", "AUG_RANDOM4", "CL_SIMCLR", "SIM_COSINE", "SIM_MSE",
                                             "SPLIT_VAL_FOLD")}
#: not option values but names of things that happen to be spelled the same (the augmentation
#: functions node_drop, ...): the entries of ``__all__`` and of the lazy export table ``_EXPORTS``
NAME_TABLES = ("__all__", "_EXPORTS")


def _literals(tree):
    """The string constants of ``tree`` outside the name tables."""
    import ast

    skip = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) in NAME_TABLES for t in n.targets):
            skip |= {id(e) for e in ast.walk(n.value)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def test_option_values_are_typed_only_in_choices():
    """A string literal equal to a guarded option value anywhere in the package but choices.py
    is a second spelling of the option: use the constant (a value inside a longer string, such
    as a docstring or a message, is not a literal of it)."""
    import ast
    from pathlib import Path

    import autogcl

    root = Path(autogcl.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "choices.py" and path.parent == root:
            continue
        for node in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            if node.value in GUARDED:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.value!r} "
                             f"(choices.{GUARDED[node.value]})")
    assert not found, "option values typed outside choices.py:\n" + "\n".join(found)


def test_the_guard_finds_a_literal(tmp_path):
    import ast

    tree = ast.parse('__all__ = ["node_drop"]\nx = "aug-aug"\ny = "two aug-aug views"\nz = {"fp32": 1}\n')
    assert [n.value for n in _literals(tree) if n.value in GUARDED] == ["aug-aug", "fp32"]


def test_check_choice_returns_a_known_name_and_names_everything_for_an_unknown_one():
    names = ("alpha", "beta", "gamma")
    assert choices.check_choice("mode", "beta", names) == "beta"
    assert choices.check_choice("preset", "paper", {"paper": {}}) == "paper"  # a dict's keys are its names
    with pytest.raises(ConfigError) as caught:
        choices.check_choice("mode", "delta", names)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert message == "unknown mode 'delta'; choose from alpha, beta, gamma"
    assert all(text in message for text in ("mode", "'delta'", *names))


def test_check_choice_says_where_the_value_came_from_and_what_else_is_accepted():
    with pytest.raises(ConfigError, match=r"^unknown row 'x' \(--row\); choose from a, b \(or all\)$"):
        choices.check_choice("row", "x", ("a", "b"), flag="--row", also="all")
    with pytest.raises(ConfigError, match=r"^unknown preset \['p'\]; choose from paper$"):
        choices.check_choice("preset", ["p"], {"paper": {}})  # unhashable against a dict: unknown, not TypeError


def test_no_option_check_is_written_out_by_hand():
    """Every "unknown X 'v'; choose from ..." message comes from check_choice (the frozen
    files excepted: they keep their own checks)."""
    from pathlib import Path

    import autogcl

    root = Path(autogcl.__file__).parent
    frozen = {"eval/svm.py", "eval/metrics.py", "protocols/semi.py", "protocols/transfer.py",
              "protocols/unsupervised.py", "protocols/grid.py"}
    found = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             if p.name != "choices.py" and p.relative_to(root).as_posix() not in frozen
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "ConfigError(f\"unknown" in line and "choose" in line]
    assert not found, found
