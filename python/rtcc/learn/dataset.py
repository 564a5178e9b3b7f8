"""``rtcc dataset``: trajectories of any controller, for offline reinforcement learning.

Each run follows one controller (``gcc``, ``sqp``, an ``onnx`` policy, …) over one scenario and
seed. The controller decides, as in any run; at every step (60 ms) the ``agent`` wrapper
(``behaviour = "<controller>"``) records what a learned policy would have observed then
(``mmsys24`` by default), the controller's target in force (the *action*), the bottleneck's true
capacity and the step's reward (:mod:`rtcc.learn.rewards`). This is how the MMSys 2024 challenge
logged Teams' estimators, so that offline RL can learn from any rtcc controller.

Written atomically into one folder:

- ``json/<run>.json``: the challenge's layout — ``observations`` (one 150-value list per step),
  ``bandwidth_predictions`` (bit/s), ``true_capacity`` (bit/s) and ``policy_id`` — plus rtcc's
  ``rewards``, ``time_s``, ``stats`` (every step statistic by name), ``scenario``, ``seed``,
  ``observation`` and ``step_s``;
- ``steps.parquet``: every step of every run, one row each: ``run``, ``policy_id``,
  ``scenario``, ``seed``, ``step``, ``observation`` (a list of float32), ``action_bps``,
  ``true_capacity_bps``, ``reward``, ``done`` and the statistics' columns;
- ``runs.json``: the runs, with their files.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from .. import _core
from ..atomic import atomic_dir
from ..registry import ControllerSpec
from ..scenario import Scenario, ScenarioError
from . import rewards as _rewards


def _feedback_of(name: str) -> dict:
    for info in _core.controllers():
        if info["name"] == name:
            return dict(info["feedback"])
    raise ScenarioError(f"unknown controller {name!r}; `rtcc controllers` lists them")


def behaviour_scenario(scenario: Scenario, spec: ControllerSpec, observation: str, step: str) -> Scenario:
    """``scenario`` with its first video flow following ``spec`` through the recording agent."""
    data = scenario.to_dict()
    for f in data.get("flows") or []:
        if isinstance(f, dict) and f.get("kind", "video") == "video":
            f["controller"] = "agent"
            f["params"] = {"observation": observation, "step": step, "behaviour": spec.name,
                           "behaviour_params": dict(spec.params)}
            f["feedback"] = _feedback_of(spec.name)
            break
    else:
        raise ScenarioError(f"{scenario.name}: no video flow to record")
    return Scenario.from_dict(data, base_dir=scenario.base_dir)


def record(scenario: Scenario, spec: ControllerSpec, seed: int, observation: str = "mmsys24",
           step: str = "60ms", reward="network") -> dict:
    """One run's trajectory as arrays."""
    sc = behaviour_scenario(scenario, spec, observation, step)
    env = _core.Env([(sc.to_json(), sc.base_dir)], 1)
    names = list(env.stat_names)
    reward_fn = _rewards.resolve(reward, names)
    obs = env.reset([seed])
    ones = np.ones((1, env.n_agents))
    observations, stats = [], []
    done = False
    while not done:
        observations.append(obs[0, 0].copy())
        obs, s, d = env.step(ones)
        stats.append(s[0, 0].copy())
        done = bool(d[0])
    stats_a = np.array(stats)
    col = {n: stats_a[:, i] for i, n in enumerate(names)}
    return {
        "policy_id": spec.label or spec.name,
        "scenario": scenario.name,
        "seed": seed,
        "observation": observation,
        "step_s": env.step_s,
        # The action of step k is the followed controller's target in force during it, read at
        # the step's start, where the observation was taken.
        "observations": np.array(observations, dtype=np.float32),
        "bandwidth_predictions": col["target_bps"],
        "true_capacity": col["capacity_bps"],
        "rewards": reward_fn(stats_a),
        "time_s": col["time_s"],
        "stats": col,
    }


def _json_ready(t: dict) -> dict:
    out = {}
    for k, v in t.items():
        if isinstance(v, np.ndarray):
            out[k] = [None if isinstance(x, float) and np.isnan(x) else x for x in v.tolist()]
        elif k == "stats":
            out[k] = {n: [None if np.isnan(x) else x for x in a.tolist()] for n, a in v.items()}
        else:
            out[k] = v
    return out


def build(scenarios: list[Scenario], specs: list[ControllerSpec], seeds: list[int], out: str | os.PathLike,
          observation: str = "mmsys24", step: str = "60ms", reward="network", force: bool = False,
          progress=None) -> list[dict]:
    """Record every (scenario, controller, seed) into the folder ``out``; the runs' index."""
    import polars as pl

    runs, frames = [], []
    with atomic_dir(out, force=force) as tmp:
        (tmp / "json").mkdir()
        total = len(scenarios) * len(specs) * len(seeds)
        for sc in scenarios:
            for spec in specs:
                for seed in seeds:
                    t = record(sc, spec, seed, observation, step, reward)
                    label = re.sub(r"[^A-Za-z0-9.=-]+", "_", spec.label or spec.name)[:60]
                    run_id = f"{len(runs):04d}_{sc.name}_{label}_s{seed}"
                    path = Path("json") / f"{run_id}.json"
                    (tmp / path).write_text(json.dumps(_json_ready(t)))
                    n = len(t["rewards"])
                    frame = {
                        "run": [run_id] * n, "policy_id": [t["policy_id"]] * n, "scenario": [sc.name] * n,
                        "seed": [seed] * n, "step": list(range(n)),
                        "observation": [row.tolist() for row in t["observations"]],
                        "action_bps": t["bandwidth_predictions"], "true_capacity_bps": t["true_capacity"],
                        "reward": t["rewards"], "done": [False] * (n - 1) + [True],
                    }
                    frame.update({k: v for k, v in t["stats"].items()})
                    frames.append(pl.DataFrame(frame, schema_overrides={"observation": pl.List(pl.Float32)}))
                    runs.append({"run": run_id, "policy_id": t["policy_id"], "scenario": sc.name, "seed": seed,
                                 "steps": n, "json": str(path),
                                 "mean_reward": float(np.mean(t["rewards"])) if n else 0.0})
                    if progress:
                        progress(len(runs), total)
        pl.concat(frames, how="vertical").write_parquet(tmp / "steps.parquet")
        (tmp / "runs.json").write_text(json.dumps(runs, indent=1))
    return runs
