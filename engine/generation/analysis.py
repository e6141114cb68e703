"""What one pass over a denoising step's logits gives every consumer (`engine.generation.fused.analyse`), as plain
NumPy data: the host and the device sampler both return it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Analysis:
    argmax: np.ndarray                  # int32 [L]: argmax of the processed logits
    entropy: np.ndarray                 # float32 [L]: entropy (nats) of softmax(processed)
    proposal: np.ndarray                # int32 [L]: the sampled (or argmax, or recorded) proposals
    probability: np.ndarray | None      # float32 [L]: each proposal's probability (see `confidence_from`)
    probabilities: Any                  # softmax(processed) [L, V] (NumPy on the host, MLX on the device), if asked
    finite: bool                        # every logit was finite (checked when asked)
