"""The length-generalization recipes, one per task (each trains encodings x seeds)."""
from .lengthgen import lengthgen

SMALL = ["model.n_layers=1", "model.d_model=64", "model.n_heads=4", "train.batch_size=128", "train.lr=3e-3"]
DEEPER = ["model.n_layers=2", "model.d_model=64", "model.n_heads=4", "train.batch_size=128", "train.lr=3e-3"]

lengthgen(
    "lengthgen-addition", "1-layer Transformers trained on 1-10 digit addition, evaluated up to 30 digits.",
    ["task.name=addition", "task.max_digits=10"], train_max=10, lengths=[5, 10, 12, 15, 20, 25, 30],
    encodings=["coupling", "learned", "nope"], model=SMALL, steps=4000, fast_steps=150,
    claim="Position coupling lets a 1-layer Transformer trained on 1-30 digit additions add 200-digit numbers",
    source="seed 000 #3 (Cho et al. 2024)", paper_number="95.65% exact match at 200 digits (6.67x)",
    target_text=">= 90% at 30 digits (3x) for coupling; learned and NoPE <= 10% beyond 15",
    check_length=30, baseline_beyond=15, fast_encodings=["coupling", "learned"])
