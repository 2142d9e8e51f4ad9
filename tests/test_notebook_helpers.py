"""Helpers the teaching notebooks call (03-06): each one checked against what it must show."""
import math

from workbench.probes.attention import entropy_at_logit_scale


def test_entropy_falls_from_uniform_towards_one_hot_as_logits_scale():
    entropy = entropy_at_logit_scale([0.0, 1.0, 4.0, 64.0], keys=16, n=256)
    assert math.isclose(entropy[0.0], math.log(16), rel_tol=1e-6)  # scale 0: uniform attention
    assert entropy[0.0] > entropy[1.0] > entropy[4.0] > entropy[64.0]
    assert entropy[64.0] < 0.1  # sharp logits: almost one-hot
    assert entropy_at_logit_scale([2.0], seed=1) == entropy_at_logit_scale([2.0], seed=1)  # deterministic
