"""GOODRL's actor and critic (Yang et al., ICLR 2025), sized for CPU inference.

Actor (Graph Attention Actor Network): a 2-layer GAT embeds the graph of unfinished tasks
(DAG edges, VM-queue chains, self-loops). The *task-specific graph* of each candidate VM m
differs from that base graph only at the candidate: its features become the VM-m view
(execution, wait and finish time on m, speed, utilisation) and one extra edge joins m's last
queued task. So instead of running the GAT on |VMs| copies, the candidate's node is recomputed
per VM by one more graph-attention step over its neighbourhood in the VM-m graph (its DAG
parents and children, m's last queued task, itself), and an MLP scores each VM. Two learnable
weights anchor the scores on known rules: one on −(finish time behind the earliest one), which
makes a fresh actor the EFT rule, and one on the slack rule's choice (``batch["rule"]``, see
solvers.scheduling.heuristics.heft_slack), so imitation of the strongest heuristic is a
two-parameter fit and PPO learns the corrections from there.

Critic (Graph Attention Critic Network): a separate 2-layer GAT on the *system-oriented* graph
(the same nodes, plus edges from every VM's last queued task to the candidate), mean and max
pooling, global load features, an MLP.

Inputs are the dict ``solvers.scheduling.features.collate`` builds; this module imports only
torch.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


def _segment_softmax(e: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
    """Softmax of edge scores ``e`` grouped by their target ``index``."""
    top = torch.full((n,), -1e30, dtype=e.dtype).scatter_reduce(0, index, e, "amax",
                                                                  include_self=True)
    w = torch.exp(e - top[index])
    den = torch.zeros(n, dtype=e.dtype).index_add_(0, index, w)
    return w / den[index].clamp_min(1e-20)


class GATLayer(nn.Module):
    """One single-head graph-attention layer (Veličković et al.) on an edge list."""

    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim_in, dim_out, bias=False)
        self.att_src = nn.Parameter(torch.randn(dim_out) / math.sqrt(dim_out))
        self.att_dst = nn.Parameter(torch.randn(dim_out) / math.sqrt(dim_out))
        self.bias = nn.Parameter(torch.zeros(dim_out))

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        src, dst = edges[0], edges[1]
        e = F.leaky_relu((h @ self.att_src)[src] + (h @ self.att_dst)[dst], 0.2)
        alpha = _segment_softmax(e, dst, h.shape[0])
        out = torch.zeros_like(h).index_add_(0, dst, alpha.unsqueeze(1) * h[src])
        return out + self.bias


class GraphEncoder(nn.Module):
    """Input projection and two residual GAT layers with ELU."""

    def __init__(self, node_features: int, dim: int) -> None:
        super().__init__()
        self.inp = nn.Linear(node_features, dim)
        self.gat1 = GATLayer(dim, dim)
        self.gat2 = GATLayer(dim, dim)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        h = h + F.elu(self.gat1(h, edges))
        return h + F.elu(self.gat2(h, edges))


def _mlp(dims: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(dims):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class Actor(nn.Module):
    """Scores every VM for the candidate task; returns logits [B, M] (−inf on padding)."""

    def __init__(self, node_features: int, vm_features: int, dim: int = 64) -> None:
        super().__init__()
        self.encoder = GraphEncoder(node_features, dim)
        self.vm_in = nn.Linear(vm_features, dim)
        self.cand_mix = nn.Linear(2 * dim, dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.scorer = _mlp([2 * dim + vm_features, dim, dim, dim, 1])
        self.eft_weight = nn.Parameter(torch.tensor(1.0))
        self.rule_weight = nn.Parameter(torch.tensor(0.0))
        self.dim = dim

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        h = self.encoder(batch["x"], batch["edges"])  # [N, D]
        vm_x = batch["vm_x"]  # [B, M, F]
        b, m, _ = vm_x.shape
        hc = h[batch["cand"]]  # [B, D]
        # the candidate's node in each VM's task-specific graph
        c = F.elu(self.cand_mix(torch.cat([hc.unsqueeze(1).expand(b, m, -1),
                                           self.vm_in(vm_x)], -1)))  # [B, M, D]
        nbr = batch["nbr"]  # [B, K]
        hn = h[nbr.clamp_min(0)]  # [B, K, D]
        last = batch["vm_last"]  # [B, M]
        hl = h[last.clamp_min(0)]  # [B, M, D]
        q = self.q(c) / math.sqrt(self.dim)  # [B, M, D]
        s_nbr = torch.einsum("bmd,bkd->bmk", q, self.k(hn)).masked_fill(
            (nbr < 0).unsqueeze(1), -1e9)
        s_last = (q * self.k(hl)).sum(-1, keepdim=True).masked_fill(
            (last < 0).unsqueeze(-1), -1e9)
        s_self = (q * self.k(c)).sum(-1, keepdim=True)
        att = torch.softmax(torch.cat([s_nbr, s_last, s_self], -1), -1)
        kk = nbr.shape[1]
        z = (torch.einsum("bmk,bkd->bmd", att[..., :kk], self.v(hn))
             + att[..., kk:kk + 1] * self.v(hl) + att[..., kk + 1:] * self.v(c))
        z = c + F.elu(z)
        score = self.scorer(torch.cat([z, hc.unsqueeze(1).expand(b, m, -1), vm_x], -1))
        logits = (score.squeeze(-1) - self.eft_weight * batch["regret"] / 10.0
                  + self.rule_weight * batch["rule"])
        return logits.masked_fill(~batch["vm_mask"], float("-inf"))


class Critic(nn.Module):
    """V(s) from the system-oriented graph."""

    def __init__(self, node_features: int, global_features: int, dim: int = 64) -> None:
        super().__init__()
        self.encoder = GraphEncoder(node_features, dim)
        self.head = _mlp([3 * dim + global_features, dim, dim, 1])

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        edges = batch["edges"]
        last = batch["vm_last"]
        cand = batch["cand"].unsqueeze(1).expand_as(last)
        ok = last >= 0
        extra = torch.stack([last[ok], cand[ok]])
        edges = torch.cat([edges, extra, extra.flip(0)], 1)
        h = self.encoder(batch["x"], edges)
        graph = batch["graph"]
        b = batch["cand"].shape[0]
        count = torch.zeros(b).index_add_(0, graph, torch.ones(len(graph))).clamp_min(1)
        mean = torch.zeros(b, h.shape[1]).index_add_(0, graph, h) / count.unsqueeze(1)
        top = torch.full((b, h.shape[1]), -1e30).scatter_reduce(
            0, graph.unsqueeze(1).expand_as(h), h, "amax", include_self=True)
        out = self.head(torch.cat([mean, top, h[batch["cand"]], batch["g"]], -1))
        return out.squeeze(-1)


class GoodRL(nn.Module):
    """Actor and critic with their configuration, for saving and loading."""

    def __init__(self, node_features: int, vm_features: int, global_features: int,
                 dim: int = 64) -> None:
        super().__init__()
        self.config: dict[str, Any] = {"model": "GOODRL", "node_features": node_features,
                                       "vm_features": vm_features,
                                       "global_features": global_features, "dim": dim}
        self.actor = Actor(node_features, vm_features, dim)
        self.critic = Critic(node_features, global_features, dim)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> GoodRL:
        return cls(config["node_features"], config["vm_features"], config["global_features"],
                   config.get("dim", 64))
