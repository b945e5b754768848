"""The Llama forward pass exactly as kakeya-engine computes it (engine/llama.h), in PyTorch:
RMSNorm (eps 1e-5, weight * x / sqrt(mean(x^2) + eps)), attention with GQA (query head h reads KV
head h // (n_head / n_head_kv), llama.cpp's mapping), causal softmax(q k^T / sqrt(head_dim)),
SwiGLU FFN w_down(silu(w_gate x) * w_up x), no biases, RoPE base 10000 in the interleaved
(adjacent-pair, GGML rope mode 0) layout: in each head, (x[2i], x[2i+1]) rotated by
pos * base^(-2i/head_dim). Weights are nn.Linear [out, in] row-major, which is GGUF's
[ne0 = in, ne1 = out] with no transpose and no Q/K permutation.

Works with torch 1.13 (manual attention) and 2.x (F.scaled_dot_product_attention).
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    vocab: int = 4096
    ctx: int = 1024
    tied: bool = False
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).type_as(x)


def rope_tables(head_dim, ctx, base, device):
    """cos, sin [ctx, head_dim/2] for the interleaved layout."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    ang = torch.arange(ctx, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    """x [B, H, T, hd]; rotates adjacent pairs (x[2i], x[2i+1])."""
    xf = x.float().reshape(*x.shape[:-1], -1, 2)
    a, b = xf[..., 0], xf[..., 1]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return out.reshape(x.shape).type_as(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        hd = c.dim // c.n_heads
        self.c, self.hd = c, hd
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.wq = nn.Linear(c.dim, c.n_heads * hd, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(c.n_heads * hd, c.dim, bias=False)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.w_gate = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_up = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_down = nn.Linear(c.ffn_dim, c.dim, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        c, hd = self.c, self.hd
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, c.n_heads, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = c.n_heads // c.n_kv_heads
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            s = s.float().masked_fill(mask, float("-inf"))
            a = torch.softmax(s, dim=-1).type_as(v) @ v
        x = x + self.wo(a.transpose(1, 2).reshape(B, T, c.n_heads * hd))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.tok_embd = nn.Embedding(c.vocab, c.dim)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.output = None if c.tied else nn.Linear(c.dim, c.vocab, bias=False)
        cos, sin = rope_tables(c.dim // c.n_heads, c.ctx, c.rope_base, "cpu")
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # scaled init of the residual projections (GPT-2)
            nn.init.normal_(b.wo.weight, std=0.02 / math.sqrt(2 * c.n_layers))
            nn.init.normal_(b.w_down.weight, std=0.02 / math.sqrt(2 * c.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        """idx [B, T] int64 -> logits [B, T, vocab] (float32)."""
        T = idx.shape[1]
        x = self.tok_embd(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin)
        x = self.norm(x)
        w = self.tok_embd.weight if self.output is None else self.output.weight
        return F.linear(x, w).float()

    def n_params(self):
        return sum(p.numel() for p in self.parameters())

    def gguf_tensors(self):
        """(gguf name, float32 numpy [out, in] or [n]) in llama.cpp's tensor order."""
        t = [("token_embd.weight", self.tok_embd.weight)]
        for i, b in enumerate(self.blocks):
            p = "blk.%d." % i
            t += [(p + "attn_norm.weight", b.attn_norm.weight), (p + "attn_q.weight", b.wq.weight),
                  (p + "attn_k.weight", b.wk.weight), (p + "attn_v.weight", b.wv.weight),
                  (p + "attn_output.weight", b.wo.weight), (p + "ffn_norm.weight", b.ffn_norm.weight),
                  (p + "ffn_gate.weight", b.w_gate.weight), (p + "ffn_up.weight", b.w_up.weight),
                  (p + "ffn_down.weight", b.w_down.weight)]
        t.append(("output_norm.weight", self.norm.weight))
        if self.output is not None:
            t.append(("output.weight", self.output.weight))
        return [(n, w.detach().float().cpu().numpy()) for n, w in t]
