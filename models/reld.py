"""ReLD: a light-decoder attention model for TSP and CVRP (Huang et al., ICLR 2025).

Encoder: POMO's six attention layers without normalization. Decoder: one query per
trajectory attends over keys and values cached once per instance, so a decoding step costs
O(N·d). ReLD's two changes to the light decoder are here:

* identity mapping: the last node's embedding (plus a projection of the remaining load for
  CVRP) is added to the attention output, so the context reaches the query directly;
* a residual feed-forward layer on the query after the attention.

Logits get the −log(distance) bias from the current node and 50·tanh clipping. For the TSP,
which ReLD's paper does not treat, the context also carries the first node (the tour must
return to it), projected into the identity term.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from models.layers import EncoderLayer, FeedForward, MultiHeadAttention, attention


@dataclass(frozen=True)
class ReLDConfig:
    """Architecture of a ReLD model (stored in every checkpoint)."""

    problem: str = "tsp"
    dim: int = 128
    layers: int = 6
    heads: int = 8
    hidden: int = 512
    clip: float = 50.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class DecoderCache:
    """Per-instance tensors computed once before decoding."""

    embeddings: torch.Tensor  # (B, N, d)
    glimpse_keys: torch.Tensor  # (B, heads, N, d/heads)
    glimpse_values: torch.Tensor  # (B, heads, N, d/heads)
    logit_keys: torch.Tensor  # (B, d, N), already divided by √d
    # The context is linear in the node embeddings, so its node parts are projected once per
    # instance and a step only gathers rows (about a fifth of a TSP step's work otherwise).
    query_last: torch.Tensor  # (B, N, d): the query's part from the current node
    query_first: torch.Tensor | None = None  # (B, N, d): TSP, the query's part from the first
    identity_first: torch.Tensor | None = None  # (B, N, d): TSP, W · first node embedding


class ReLDModel(nn.Module):
    """Encoder plus ReLD decoder; ``step`` returns masked logits for one decoding step."""

    def __init__(self, config: ReLDConfig) -> None:
        super().__init__()
        if config.problem not in ("tsp", "cvrp"):
            raise ValueError(f"ReLD solves tsp or cvrp, not {config.problem!r}")
        self.config = config
        d = config.dim
        if config.problem == "cvrp":
            self.embed_depot = nn.Linear(2, d)
            self.embed_node = nn.Linear(3, d)  # x, y, demand / capacity
            self.context = nn.Linear(d + 1, d, bias=False)  # last node, remaining load
            self.identity_extra = nn.Linear(1, d, bias=False)  # W_idt · load
        else:
            self.embed_node = nn.Linear(2, d)
            self.context = nn.Linear(2 * d, d, bias=False)  # last node, first node
            self.identity_extra = nn.Linear(d, d, bias=False)  # W · first node
        self.encoder = nn.ModuleList(
            EncoderLayer(d, config.heads, config.hidden) for _ in range(config.layers)
        )
        self.glimpse = MultiHeadAttention(d, config.heads)
        self.decoder_ff = FeedForward(d, config.hidden)
        self.logit_key = nn.Linear(d, d, bias=False)

    # -- encoding ----------------------------------------------------------------------
    def encode(self, coords: torch.Tensor, demand: torch.Tensor | None = None,
               pad: torch.Tensor | None = None) -> DecoderCache:
        """Embed the nodes (coords (B, N, 2) in [0, 1]; CVRP node 0 is the depot and
        ``demand`` (B, N) is demand / capacity) and cache the decoder's keys and values.
        ``pad`` (B, N) bool marks filler nodes (instances of different sizes in one batch):
        no node attends to them."""
        if self.config.problem == "cvrp":
            assert demand is not None
            depot = self.embed_depot(coords[:, :1])
            rest = self.embed_node(torch.cat([coords[:, 1:], demand[:, 1:, None]], dim=-1))
            h = torch.cat([depot, rest], dim=1)
        else:
            h = self.embed_node(coords)
        return self.encode_embedded(h, pad)

    def encode_embedded(self, h: torch.Tensor, pad: torch.Tensor | None = None) -> DecoderCache:
        """Run the encoder layers on node embeddings (B, N, d) and cache keys and values
        (split from ``encode`` so a subclass with other node features reuses it)."""
        mask = None if pad is None else ~pad[:, None, None, :]
        for layer in self.encoder:
            h = layer(h, mask)
        d = h.shape[-1]
        tsp = self.config.problem == "tsp"
        return DecoderCache(
            embeddings=h,
            glimpse_keys=self.glimpse.split(self.glimpse.wk(h)),
            glimpse_values=self.glimpse.split(self.glimpse.wv(h)),
            logit_keys=(self.logit_key(h) / math.sqrt(d)).transpose(1, 2).contiguous(),
            query_last=F.linear(h, self.context.weight[:, :d]),
            query_first=F.linear(h, self.context.weight[:, d:]) if tsp else None,
            identity_first=self.identity_extra(h) if tsp else None,
        )

    # -- one decoding step -------------------------------------------------------------
    def context_query(self, cache: DecoderCache, last: torch.Tensor,
                      extra: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The glimpse query and the identity term (B, M, d) from the decoding context:
        ``extra`` is the first node (B, M) for the TSP, else the state beside the current
        node: the remaining load (B, M), or (B, M, k) values (PolyNet CVRPTW: load, time)."""
        d = cache.embeddings.shape[-1]
        at_last = last[..., None].expand(*last.shape, d)
        h_last = cache.embeddings.gather(1, at_last)
        query = cache.query_last.gather(1, at_last)
        if cache.query_first is not None and cache.identity_first is not None:
            at_first = extra[..., None].expand(*extra.shape, d)
            return (query + cache.query_first.gather(1, at_first),
                    h_last + cache.identity_first.gather(1, at_first))
        state = (extra[..., None] if extra.dim() == last.dim() else extra).to(h_last.dtype)
        return (query + F.linear(state, self.context.weight[:, d:]),
                h_last + self.identity_extra(state))

    def refine(self, g: torch.Tensor, strategy: torch.Tensor | None) -> torch.Tensor:
        """Hook on the query after the feed-forward layer: the identity in ReLD; PolyNet adds
        its strategy-conditioned residual block here."""
        return g

    def step(
        self,
        cache: DecoderCache,
        last: torch.Tensor,
        extra: torch.Tensor,
        mask: torch.Tensor,
        log_dist: torch.Tensor,
        strategy: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (B, M, N) for M trajectories per instance.

        ``last`` (B, M): current node; ``extra``: remaining load (B, M) for CVRP or the first
        node (B, M) for TSP; ``mask`` (B, M, N): True where a node may be chosen (at least one
        per row); ``log_dist`` (B, M, N): log distance from the current node to every node;
        ``strategy``: per-trajectory conditioning for subclasses (PolyNet), unused here.
        """
        query, identity = self.context_query(cache, last, extra)
        q = self.glimpse.split(query)  # (B, heads, M, dh)
        attn = attention(q, cache.glimpse_keys, cache.glimpse_values, mask[:, None])
        g = self.glimpse.wo(self.glimpse.merge(attn)) + identity
        g = g + self.decoder_ff(g)
        g = self.refine(g, strategy)
        # g·k/√d − log(distance) in one call (the keys are stored divided by √d)
        logits = torch.baddbmm(log_dist.to(g.dtype), g, cache.logit_keys, beta=-1)
        logits = self.config.clip * torch.tanh(logits)
        return logits.masked_fill(~mask, float("-inf"))
