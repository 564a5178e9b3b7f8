"""A small learner that needs only NumPy: the cross-entropy method over a linear policy.

It is here so that the training loop can be exercised anywhere (CI installs no deep-learning
framework) and as a baseline for learned controllers: a policy ``a = tanh(W · o + b)`` maps an
observation (``rtcc``'s nine values by default) to a normalised action in [-1, 1], which the
environment turns into a rate on a log scale between the agent's bounds. Each iteration samples
``population`` parameter vectors from a Gaussian, runs each for one episode on every training
scenario in one vector environment (one simulation per member and scenario, all stepped in Rust
together), keeps the ``elite`` best by mean reward and refits the Gaussian to them
(Rubinstein & Kroese, *The Cross-Entropy Method*, 2004; the noisy variant of Szita & Lőrincz,
2006, adds ``extra_noise`` to the variance so that it does not collapse early).

:func:`export_onnx` writes the policy as an ONNX model with the MMSys 2024 challenge's output
convention (bit/s in the first element of the first output), so that it runs as
``controller = "onnx"`` like any other learned policy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class LinearPolicy:
    """``a = tanh(W · o + b)``, ``W`` of the observation's length."""

    weights: np.ndarray
    bias: float

    @classmethod
    def from_vector(cls, theta: np.ndarray) -> "LinearPolicy":
        return cls(np.asarray(theta[:-1], dtype=np.float64), float(theta[-1]))

    def vector(self) -> np.ndarray:
        return np.append(self.weights, self.bias)

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.tanh(obs @ self.weights + self.bias)


@dataclass
class History:
    """Per iteration: the mean reward of the Gaussian's mean, the elite's and the population's."""

    mean_policy: list[float] = field(default_factory=list)
    elite: list[float] = field(default_factory=list)
    population: list[float] = field(default_factory=list)


def evaluate(env, thetas: np.ndarray, scenarios: int, seed: int) -> np.ndarray:
    """Mean reward per step of each parameter vector over one episode of every scenario.

    ``env`` is an :class:`rtcc.gym.RtccVectorEnv` of ``len(thetas) · scenarios`` simulations,
    simulation ``i`` running scenario ``i mod scenarios`` with policy ``i // scenarios``."""
    n = len(thetas)
    obs, _ = env.reset(seed=seed)
    total = np.zeros(n * scenarios)
    steps = np.zeros(n * scenarios)
    running = np.ones(n * scenarios, dtype=bool)
    member = np.arange(n * scenarios) // scenarios
    W, b = thetas[:, :-1], thetas[:, -1]
    while running.any():
        a = np.tanh(np.einsum("ij,ij->i", obs, W[member]) + b[member])
        obs, r, term, trunc, _ = env.step(a[:, None].astype(np.float32))
        total += np.where(running, r, 0.0)
        steps += running
        running &= ~(term | trunc)
    return (total / np.maximum(steps, 1)).reshape(n, scenarios).mean(axis=1)


def train(scenarios: list, *, iterations: int = 20, population: int = 16, elite: int = 4, seed: int = 1,
          observation: str = "rtcc", reward="qoe", init: np.ndarray | None = None, init_std: float = 1.0,
          extra_noise: float = 0.05, params: dict | None = None, progress=None) -> tuple[LinearPolicy, History]:
    """Train a :class:`LinearPolicy` on ``scenarios`` (Scenarios, files or traces, each run as
    one episode per member per iteration). Deterministic for a given ``seed``."""
    from ..gym import RtccVectorEnv

    if not 1 <= elite <= population:
        raise ValueError(f"elite must be between 1 and population ({population}), got {elite}")
    env = RtccVectorEnv(population * len(scenarios), list(scenarios), observation=observation, reward=reward,
                        params=params)
    dim = env.single_observation_space.shape[0] + 1
    rng = np.random.default_rng(seed)
    mean = np.zeros(dim) if init is None else np.asarray(init, dtype=np.float64)
    std = np.full(dim, init_std)
    history = History()
    for it in range(iterations):
        thetas = mean + std * rng.standard_normal((population, dim))
        thetas[0] = mean  # the current mean is always evaluated, on the same episodes
        scores = evaluate(env, thetas, len(scenarios), seed)
        best = np.argsort(scores)[::-1][:elite]
        history.mean_policy.append(float(scores[0]))
        history.elite.append(float(scores[best].mean()))
        history.population.append(float(scores.mean()))
        mean = thetas[best].mean(axis=0)
        std = np.sqrt(thetas[best].var(axis=0) + extra_noise)
        if progress:
            progress(it, history)
    final = evaluate(env, mean[None, :].repeat(population, axis=0), len(scenarios), seed)[0]
    history.mean_policy.append(float(final))
    return LinearPolicy.from_vector(mean), history


def export_onnx(policy: LinearPolicy, path: str | os.PathLike, low_bps: float, high_bps: float) -> None:
    """Write ``policy`` as an ONNX model: input ``obs`` ``[1, 1, n]``, output ``output``
    ``[1, 1, 1]`` in bit/s (``exp(ln low + (a + 1)/2 · (ln high − ln low))``, the environment's
    log scale). Needs the ``onnx`` package."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    n = policy.weights.size
    span = np.log(high_bps) - np.log(low_bps)
    consts = {
        "W": policy.weights.reshape(n, 1).astype(np.float32),
        "b": np.array([policy.bias], dtype=np.float32),
        "half_span": np.array([span / 2], dtype=np.float32),
        "offset": np.array([np.log(low_bps) + span / 2], dtype=np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["obs", "W"], ["z0"]),
        helper.make_node("Add", ["z0", "b"], ["z"]),
        helper.make_node("Tanh", ["z"], ["a"]),
        helper.make_node("Mul", ["a", "half_span"], ["s"]),
        helper.make_node("Add", ["s", "offset"], ["log_bps"]),
        helper.make_node("Exp", ["log_bps"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "rtcc_linear_policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 1, n])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 1])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="rtcc.learn.cem")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.fspath(path))
