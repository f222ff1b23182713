"""What the policy list says about GOODRL, in a module without torch.

The registry lists every policy without loading torch, and ``goodrl`` (which needs torch)
gives its policy the same words; both read them here, so neither imports the other at the top.
"""

GOODRL_DESCRIPTION = ("GOODRL (ICLR 2025): graph-attention actor over task-specific graphs, "
                      "trained by imitation of heft_slack (the shipped weights; offline and "
                      "online PPO are in training.goodrl but found nothing better, see "
                      "MANIFEST.json).")
