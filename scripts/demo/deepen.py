"""A trained LLaDA-2 demo grown deeper: new decoder layers that start as the identity, so training resumes from exactly
the function the smaller model had learnt and only has to put the new capacity to use.

A new layer is a copy of the nearest old layer of its own kind (the one below it first) with every projection
that writes into the residual stream zeroed (attention's output projection, each expert's and the shared
expert's down projection): its attention and
feed-forward add nothing until training moves those weights off zero. The old layers keep their order and are
spread evenly through the new stack, the first (LLaDA-2's dense layer) first and the last last.
"""

from __future__ import annotations

import re

import numpy as np

LAYER = re.compile(r"^(.*\.layers\.)(\d+)\.(.+)$")
# The LLaDA-2 network's projections whose output is added to the residual stream. (DiffusionGemma's layers also
# scale the residual by a learnt `layer_scalar`, so a copied layer would not start as the identity: not grown.)
RESIDUAL_WRITERS = ("attention.dense.", "down_proj.")


def placement(old: int, new: int) -> list[int]:
    """The new index of each old layer: spread evenly, the first first and the last last."""
    if not 0 < old <= new:
        raise ValueError(f"cannot grow {old} layers into {new}")
    if old == 1:
        return [0]
    return [round(i * (new - 1) / (old - 1)) for i in range(old)]


def _layers(names) -> dict[int, set[str]]:
    """Layer index -> the names of its parameters after `layers.N.`."""
    layers: dict[int, set[str]] = {}
    for name in names:
        if match := LAYER.match(name):
            layers.setdefault(int(match.group(2)), set()).add(match.group(3))
    return layers


def layer_count(names) -> int:
    return len(_layers(names))


def deepen(arrays: dict[str, np.ndarray], target_names) -> dict[str, np.ndarray]:
    """`arrays` (a checkpoint's tensors under the network's names) for the deeper network whose parameter names
    are `target_names`. A new layer copies the nearest old layer of its own kind (LLaDA-2's first layer is dense,
    the rest mixtures of experts), the one below it first."""
    old_layers, new_layers = _layers(arrays), _layers(target_names)
    where = placement(len(old_layers), len(new_layers))
    kept = {at: index for index, at in enumerate(where)}
    grown = {name: value for name, value in arrays.items() if not LAYER.match(name)}
    prefix = next(m.group(1) for name in arrays if (m := LAYER.match(name)))
    for new_index, names in new_layers.items():
        if new_index in kept:
            copied, silenced = kept[new_index], False
        else:
            below = [i for i, at in enumerate(where) if at < new_index and old_layers[i] == names]
            above = [i for i, at in enumerate(where) if at > new_index and old_layers[i] == names]
            if not below and not above:
                raise ValueError(f"no old layer has the parameters of new layer {new_index}")
            copied, silenced = (below[-1] if below else above[0]), True
        for rest in names:
            value = arrays[f"{prefix}{copied}.{rest}"]
            zero = silenced and any(writer in rest for writer in RESIDUAL_WRITERS)
            grown[f"{prefix}{new_index}.{rest}"] = np.zeros_like(value) if zero else value.copy()
    return grown
