"""Hand-made score tables in which validation and test disagree, shared by the selection tests.

In every table the epoch (or configuration, or C) with the best validation score is not the
one with the best test score, so a selection that peeked at the test scores reports a
different epoch and a different figure."""

#: epoch -> (validation score, test score): validation peaks at epoch 20, test at epoch 30;
#: epoch 40 ties epoch 20 on validation (the first best must win) and epoch 30 on test
EPOCHS = {10: (0.70, 0.60), 20: (0.90, 0.65), 30: (0.80, 0.95), 40: (0.90, 0.95)}
VAL_EPOCH, VAL_TEST = 20, 0.65
TEST_MAX_EPOCH, TEST_MAX = 30, 0.95


def table_rows(val_key="val_acc", test_key="test_acc", table=EPOCHS):
    """The table as per-epoch rows (epochs numbered 1, 2, ... in the table's order)."""
    return [{"epoch": i + 1, val_key: v, test_key: t} for i, (v, t) in enumerate(table.values())]


#: the table's epochs as 1, 2, ...: validation peaks at 2, test at 3
ROW_VAL_EPOCH, ROW_TEST_MAX_EPOCH = list(EPOCHS).index(VAL_EPOCH) + 1, list(EPOCHS).index(TEST_MAX_EPOCH) + 1


class Scripted:
    """A stand-in for a scoring function that a protocol calls a fixed number of times per
    epoch (``kinds``, in call order): it returns the table's score of the epoch and kind."""

    def __init__(self, kinds, scores, wrap=lambda v: v):
        self.kinds, self.scores, self.wrap, self.calls = kinds, scores, wrap, 0

    def __call__(self, *args, **kwargs):
        epoch, kind = divmod(self.calls, len(self.kinds))
        self.calls += 1
        return self.wrap(self.scores[self.kinds[kind]][epoch])


class ByPart:
    """A stand-in for a scoring function that finds which split part it scores from the graph
    indices it is given (``part_of(*args)`` -> part name or None), and returns the table's
    score of that part at its next epoch: a protocol that scored the wrong part, or one part
    twice in an epoch, reports other figures."""

    def __init__(self, part_of, scores, wrap=lambda v: v, other=1.0):
        self.part_of, self.scores, self.wrap, self.other, self.seen = part_of, scores, wrap, other, {}

    def __call__(self, *args, **kwargs):
        part = self.part_of(*args)
        if part not in self.scores:
            return self.wrap(self.other)
        k = self.seen[part] = self.seen.get(part, -1) + 1
        return self.wrap(self.scores[part][k])
