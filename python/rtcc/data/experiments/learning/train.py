"""Train a rate controller in rtcc's learning environment and compare it with gcc and the MMSys
2024 baseline on cellular traces it never saw.

    python experiments/learning/train.py -o reports/learning              # NumPy learner (CEM)
    python experiments/learning/train.py -o reports/learning --learner ppo # stable-baselines3

Training: the three uplink recordings of ``../shared/traces/mahimahi`` (AT&T, T-Mobile, Verizon),
60 s episodes, the ``rtcc`` observation (nine values), the ``qoe`` reward. Test: the three
downlink recordings and the bundled LTE-like trace (``policy_eval.py``). The trained policy is
exported to ONNX and runs there as ``controller = "onnx"``, exactly as any learned policy would.

``--learner cem`` needs only NumPy (rtcc.learn.cem: a linear policy, 30 iterations of 16
members, under a minute on two cores). ``--learner ppo`` needs stable-baselines3 and PyTorch
(``pip install stable-baselines3``; PyPI's torch is large, which is why ``make test`` never
installs it): an MLP policy trained with PPO over 16 environments for ``--minutes`` minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parent))
import policy_eval as evaluate  # noqa: E402

OBSERVATION = "rtcc"
REWARD = "qoe"
LOW_BPS, HIGH_BPS = 50e3, 20e6
PARAMS = {"min_rate": "50kbps", "max_rate": "20Mbps"}


def scenarios():
    from rtcc.gym import learning_scenario

    missing = [t for t in evaluate.TRAIN_TRACES if not t.exists()]
    if missing:
        raise SystemExit(f"training traces not found: {', '.join(map(str, missing))} (they are in ../shared)")
    return [learning_scenario(str(t), observation=OBSERVATION) for t in evaluate.TRAIN_TRACES]


def train_cem(out: Path, iterations: int) -> Path:
    from rtcc.learn import cem

    start = time.time()
    policy, history = cem.train(scenarios(), iterations=iterations, population=16, elite=4, seed=1,
                                observation=OBSERVATION, reward=REWARD, params=PARAMS,
                                progress=lambda i, h: print(f"iteration {i}: mean policy {h.mean_policy[-1]:.3f}, "
                                                            f"elite {h.elite[-1]:.3f}", flush=True))
    path = out / "cem.onnx"
    cem.export_onnx(policy, path, LOW_BPS, HIGH_BPS)
    (out / "cem.json").write_text(json.dumps({"weights": policy.weights.tolist(), "bias": policy.bias,
                                              "history": history.__dict__, "seconds": time.time() - start}))
    print(f"trained in {time.time() - start:.0f} s; wrote {path}")
    return path


def train_ppo(out: Path, minutes: float) -> Path:
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
    except ImportError:
        raise SystemExit("--learner ppo needs stable-baselines3 and torch: pip install stable-baselines3") from None
    from rtcc.gym import RtccEnv

    torch.set_num_threads(2)
    from stable_baselines3.common.vec_env import DummyVecEnv

    scs = scenarios()
    env = DummyVecEnv([lambda i=i: RtccEnv(scs[i % len(scs)], observation=OBSERVATION, reward=REWARD,
                                           params=PARAMS) for i in range(12)])
    env.seed(1)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=512, learning_rate=3e-4, gamma=0.98, seed=1, verbose=0)

    class Deadline(BaseCallback):
        def __init__(self):
            super().__init__()
            self.end = time.time() + 60 * minutes

        def _on_step(self) -> bool:
            return time.time() < self.end

    start = time.time()
    model.learn(total_timesteps=10**9, callback=Deadline())
    print(f"PPO: {model.num_timesteps} steps in {time.time() - start:.0f} s")

    class Actor(torch.nn.Module):
        """The policy's mean action, mapped to bit/s on the environment's log scale."""

        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def forward(self, obs):
            a = self.policy.get_distribution(obs.reshape(1, -1)).distribution.mean.clamp(-1, 1)
            log = np.log(LOW_BPS) + (a + 1) / 2 * (np.log(HIGH_BPS) - np.log(LOW_BPS))
            return torch.exp(log).reshape(1, 1, 1)

    path = out / "ppo.onnx"
    n = env.observation_space.shape[0]
    torch.onnx.export(Actor(model.policy).eval(), torch.zeros(1, 1, n), str(path), input_names=["obs"],
                      output_names=["output"], dynamo=False)
    (out / "ppo.json").write_text(json.dumps({"timesteps": model.num_timesteps, "seconds": time.time() - start}))
    print(f"wrote {path}")
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--learner", choices=["cem", "ppo"], default="cem")
    p.add_argument("--iterations", type=int, default=30, help="CEM iterations (default 30)")
    p.add_argument("--minutes", type=float, default=8.0, help="PPO training time (default 8)")
    p.add_argument("--no-eval", action="store_true")
    a = p.parse_args(argv)
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    path = train_cem(out, a.iterations) if a.learner == "cem" else train_ppo(out, a.minutes)
    if not a.no_eval:
        table = evaluate.traces_table(evaluate.default_controllers({f"trained ({a.learner})": f"{path}:{OBSERVATION}"}))
        (out / f"test-{a.learner}.md").write_text(table)
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
