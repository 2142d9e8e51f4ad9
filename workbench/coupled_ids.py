"""How two-level position ids are packed: a leaf that tasks (which write the ids) and models (which
read them) both import, so neither imports the other.

Multi-level position coupling (Cho et al. 2024b, arXiv 2410.15787) gives a token two ids, its
significance and its level (which operand, which partial product); one integer carries both:
`significance + LEVEL_STRIDE * level`. The `coupling` encoding unpacks them into two tables.
"""
LEVEL_STRIDE = 1 << 16
MAX_LEVELS = 64
