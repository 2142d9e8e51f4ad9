"""How multi-level position ids are packed: a leaf that tasks (which write the ids) and models (which
read them) both import, so neither imports the other.

Multi-level position coupling (Cho et al. 2024b, arXiv 2410.15787) gives a token two ids, its
significance and its level (which operand, which partial product); one integer carries both:
`significance + LEVEL_STRIDE * level`. The `coupling` encoding unpacks them into two tables.

The paper's multiplication scratchpad adds a third id, the shifted significance (a partial product's
digit t of b's digit j sits at t + j in the running sums; `multiplication`'s
`scratchpad=partial_products`). It is packed above the level as `SHIFT_STRIDE * (shifted + 1)` on every
token of such a sequence, shifted 0 where a token has none; so any slice of a three-id sequence shows
that it is one, and two-level ids keep 0 there. `coupling` reads the shifted id from rows
SHIFTED_ROW + shifted of its table, rows no significance id reaches, so tasks without it build and
train exactly as before.
"""
LEVEL_STRIDE = 1 << 16
MAX_LEVELS = 64
SHIFT_STRIDE = LEVEL_STRIDE * MAX_LEVELS
SHIFTED_ROW = 512


def pack(significance, level=0, shifted=None):
    """One packed id (ints or tensors alike); shifted=None for two-level ids, else the shifted
    significance (0: none) of a token in a three-id sequence."""
    third = 0 if shifted is None else shifted + 1
    return significance + LEVEL_STRIDE * level + SHIFT_STRIDE * third


def unpack(positions):
    """(significance, level, shifted significance, 0 where none) of packed ids: ints or tensors alike."""
    third = positions // SHIFT_STRIDE
    return positions % LEVEL_STRIDE, positions // LEVEL_STRIDE % MAX_LEVELS, third - (third > 0) * 1
