"""Shared by the task property tests: each sample of a Batch without its right padding."""


def unpadded_samples(batch):
    """Per sample: the full token-id sequence (input plus the final target), the loss mask over its
    predictions and the position ids (None when the task has none), all cut at the last real token."""
    out = []
    for i in range(len(batch)):
        real = (batch.tokens[i] != 0) | batch.loss_mask[i]
        size = int(real.nonzero().max()) + 1
        assert not batch.loss_mask[i, size:].any(), "no loss on padding"
        sequence = [batch.tokens[i, 0].item()] + batch.targets[i, :size].tolist()
        positions = None if batch.position_ids is None else batch.position_ids[i, :size].tolist()
        out.append((sequence, batch.loss_mask[i, :size].tolist(), positions))
    return out
