"""A minimal plain-PyTorch decoder: the baseline a careful researcher would write by hand.

Pre-LN blocks, one fused QKV linear, F.scaled_dot_product_attention(is_causal=True), a ReLU MLP,
learned absolute positions, tied to nothing; AdamW(foreach=True) with gradient clipping, as
nanoGPT trains. No hooks, no probes, no data pipeline: a fair baseline, not a straw man.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_mlp: int):
        super().__init__()
        self.n_heads = n_heads
        self.norm_attn = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm_mlp = nn.LayerNorm(d_model)
        self.fc_in = nn.Linear(d_model, d_mlp)
        self.fc_out = nn.Linear(d_mlp, d_model)

    def forward(self, x: Tensor) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(self.norm_attn(x)).view(B, T, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(mixed.transpose(1, 2).reshape(B, T, D))
        return x + self.fc_out(F.relu(self.fc_in(self.norm_mlp(x))))


class PlainDecoder(nn.Module):
    def __init__(self, vocab: int, n_layers: int, d_model: int, n_heads: int, d_mlp: int, n_ctx: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(n_ctx, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_mlp) for _ in range(n_layers))
        self.norm_final = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens) + self.positions(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.norm_final(x))


def training_step(model: nn.Module, optimizer: torch.optim.Optimizer, tokens: Tensor, targets: Tensor) -> Tensor:
    """One step: forward, cross-entropy on every position, backward, clip to norm 1, AdamW."""
    logits = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


def make_optimizer(model: nn.Module, lr: float = 1e-3) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0, foreach=True)
