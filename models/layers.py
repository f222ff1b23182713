"""Building blocks shared by the attention models: multi-head attention and feed-forward.

Attention goes through ``scaled_dot_product_attention`` so CPU and GPU both get their fused
kernels; no normalization layers here, because ReLD drops them from the encoder.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

#: Fused attention kernels allowed on a GPU. cuDNN's is left out: on an H200 (torch 2.11,
#: cuDNN backend chosen for a boolean mask of 64×100 TSP trajectories) it failed with
#: "mha_graph.execute(...) is_good()" or returned NaN probabilities, while the memory-efficient
#: kernel, which takes the same masks, trains the CVRP models there.
_GPU_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    """``scaled_dot_product_attention`` with a boolean mask (True = may attend)."""
    if q.is_cuda:
        with sdpa_kernel(_GPU_BACKENDS):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class MultiHeadAttention(nn.Module):
    """Standard multi-head attention with separate query and key/value inputs."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads = heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(..., L, dim) -> (..., heads, L, dim/heads)."""
        *lead, length, dim = x.shape
        return x.view(*lead, length, self.heads, dim // self.heads).transpose(-3, -2)

    def merge(self, x: torch.Tensor) -> torch.Tensor:
        """(..., heads, L, dim/heads) -> (..., L, dim)."""
        x = x.transpose(-3, -2)
        return x.reshape(*x.shape[:-2], -1)

    def forward(self, query: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        q = self.split(self.wq(query))
        k = self.split(self.wk(context))
        v = self.split(self.wv(context))
        out = attention(q, k, v, mask)
        return self.wo(self.merge(out))


class FeedForward(nn.Module):
    """Two linear layers with a ReLU between (dim -> hidden -> dim)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """Self-attention and feed-forward, each with a residual connection and no norm."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(dim, heads)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``mask`` (B, 1, 1, N) bool: the nodes every node may attend to (None: all)."""
        h = h + self.attention(h, h, mask)
        return h + self.feed_forward(h)
