"""A Gymnasium environment for learned video rate control, at simulator speed.

One video flow (the *agent*) over any rtcc scenario or trace, with the scenario's other flows
as cross traffic. Every ``step`` (60 ms by default) the agent chooses the encoder's target
bitrate; it observes the packets its receiver got, as the MMSys 2024 challenge (``mmsys24``, 150
values), OpenNetLab's gym (``opennetlab``, 4) or rtcc (``rtcc``, 9) describe them; the episode
is the scenario. ``reset(seed=...)`` is deterministic.

>>> import gymnasium, rtcc.gym
>>> env = gymnasium.make("rtcc/Video-v0", trace="traces/lte-like.mahimahi", observation="rtcc")
>>> obs, info = env.reset(seed=1)

Actions are normalised (``action_scale="log"``, the default): ``a`` in [-1, 1] maps to a rate on a
log scale between the agent's ``min_rate`` and ``max_rate``; ``action_scale="bps"`` takes bit/s.
The episode ends at the scenario's end, as a time limit: ``truncated`` is True, ``terminated``
never is. ``info`` carries the step's statistics (``rtcc._core.Env.stat_names``), measured by the
simulator: what the reward reads, not what the agent sees (None where a value does not exist in
the step, e.g. no frame shown; NaN in the vector environment's arrays).

:class:`RtccVectorEnv` steps many simulations in Rust per call (one Python object for all of
them); ``gymnasium.make_vec("rtcc/Video-v0", num_envs=N, vectorization_mode="vector_entry_point")``
builds it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
except ImportError as e:  # pragma: no cover - exercised by the skip in the tests
    raise ImportError("rtcc.gym needs gymnasium: pip install 'rtcc[learn]'") from e

from . import _core
from .learn import rewards as _rewards
from .scenario import Scenario, ScenarioError

ENV_ID = "rtcc/Video-v0"


DEFAULT_DELAY = "20ms"


def _opennetlab_rtt(trace: str) -> bool:
    """Whether ``trace`` is an OpenNetLab JSON trace (``file.json`` or ``file.json#direction``)
    some pattern of which gives a non-zero ``rtt``: its link's delay is then the trace's."""
    file, _, direction = trace.partition("#")
    if not file.lower().endswith(".json"):
        return False
    try:
        with open(file, encoding="utf-8") as f:
            patterns = json.load(f)[direction or "uplink"]["trace_pattern"]
        return any(isinstance(p, dict) and p.get("rtt") not in (None, 0) for p in patterns)
    except (OSError, ValueError, KeyError, TypeError):
        return False  # the core names what is wrong with the file


def learning_scenario(trace: str | None = None, *, capacity: str = "2Mbps", delay: str | None = None,
                      queue: str = "100ms", duration: str = "60s", observation: str = "mmsys24",
                      step: str = "60ms", agents: int = 1, cross_traffic: list[dict] | None = None,
                      params: dict | None = None) -> Scenario:
    """A scenario with ``agents`` agent flows over one link: a constant ``capacity`` or a
    ``trace`` (mahimahi, OpenNetLab JSON, or a schedule file), ``delay`` each way (default 20 ms,
    or an OpenNetLab trace's ``rtt / 2`` when it gives one: the trace is then the link's delay,
    and a ``delay`` given as well is refused), a drop-tail ``queue``, plus ``cross_traffic``
    flow tables."""
    forward: dict[str, Any] = {"queue": queue}
    base_dir = "."
    trace_delay = False
    if trace is not None:
        from .examples import resolve
        p = Path(resolve(trace))
        forward["trace" if p.suffix != ".sched" else "schedule"] = str(p.absolute())
        trace_delay = _opennetlab_rtt(str(p))
    else:
        forward["capacity"] = capacity
    reverse: dict[str, Any] = {}
    if delay is not None or not trace_delay:
        forward["delay"] = reverse["delay"] = delay or DEFAULT_DELAY
    agent_params = {"observation": observation, "step": step, **(params or {})}
    flows = [{"controller": "agent", "params": dict(agent_params)} for _ in range(agents)]
    flows += [copy.deepcopy(f) for f in cross_traffic or []]
    return Scenario(duration=duration, forward=forward, reverse=reverse or None, flows=flows,
                    name="learning", base_dir=base_dir)


def _as_agent_scenario(scenario, trace, observation, step, agents, params) -> Scenario:
    """``scenario`` (a Scenario, a file, a bundled name or a dict) with its first ``agents``
    video flows made agents, or the default scenario over ``trace``."""
    if scenario is None:
        return learning_scenario(trace, observation=observation, step=step, agents=agents, params=params)
    if trace is not None:
        raise ValueError("give a scenario or a trace, not both")
    if isinstance(scenario, (str, Path)):
        scenario = Scenario.from_file(scenario)
    elif isinstance(scenario, dict):
        scenario = Scenario.from_dict(scenario)
    elif not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, a path or a dict, got {type(scenario).__name__}")
    data = scenario.to_dict()
    flows = data.get("flows") or []
    made = 0
    for f in flows:
        if made == agents:
            break
        if isinstance(f, dict) and f.get("kind", "video") == "video":
            if f.get("controller") != "agent":
                f["controller"] = "agent"
                f["params"] = {}
            f.setdefault("params", {})
            f["params"].update({"observation": observation, "step": step, **(params or {})})
            made += 1
    if made < agents:
        raise ScenarioError(f"{scenario.name}: {agents} agent(s) asked for, but the scenario has "
                            f"{made} video flow(s)")
    return Scenario.from_dict(data, base_dir=scenario.base_dir)


class _Core:
    """The Rust environment and what the Python classes share: spaces, action mapping, rewards."""

    def __init__(self, scenario, trace, observation, step, reward, action_scale, n_envs, agents, params,
                 lists: bool = False):
        # Several scenarios or traces (a list): simulation i runs the (i mod n)-th.
        if (isinstance(scenario, (list, tuple)) or isinstance(trace, (list, tuple))) and not lists:
            raise ValueError("a list of scenarios or traces needs the vector environment (RtccVectorEnv, "
                             "simulation i running the (i mod n)-th); this environment runs one")
        if isinstance(scenario, (list, tuple)) or isinstance(trace, (list, tuple)):
            items = [(s, None) for s in scenario] if isinstance(scenario, (list, tuple)) else [(None, t) for t in trace]
        else:
            items = [(scenario, trace)]
        if not items:
            raise ValueError("give at least one scenario or trace")
        self.scenarios = [_as_agent_scenario(s, t, observation, step, agents, params) for s, t in items]
        self.scenario = self.scenarios[0]
        self.env = _core.Env([(s.to_json(), s.base_dir) for s in self.scenarios], n_envs)
        if self.env.n_agents != agents:
            raise ScenarioError(f"{self.scenario.name}: expected {agents} agent flow(s), found "
                                f"{self.env.n_agents}")
        self.names = list(self.env.stat_names)
        self.reward = _rewards.resolve(reward, self.names)
        self.reward_one = _rewards.resolve_one(reward)
        if action_scale not in ("log", "bps"):
            raise ValueError(f"action_scale must be 'log' or 'bps', got {action_scale!r}")
        self.action_scale = action_scale
        # Each agent's bounds (the last axis of an action array is the agent).
        bounds = np.array(self.env.bounds, dtype=np.float64)
        self.lo, self.hi = bounds[:, 0], bounds[:, 1]
        n = self.env.observation_len
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(n,), dtype=np.float32)
        if action_scale == "log":
            self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        else:
            self.action_space = spaces.Box(np.float32(self.lo.min()), np.float32(self.hi.max()), shape=(1,),
                                           dtype=np.float32)

    def agent_action_space(self, i: int):
        """Agent ``i``'s action space (its own bounds with ``action_scale="bps"``)."""
        if self.action_scale == "log":
            return self.action_space
        return spaces.Box(np.float32(self.lo[i]), np.float32(self.hi[i]), shape=(1,), dtype=np.float32)

    def to_bps(self, a: np.ndarray) -> np.ndarray:
        """Actions ``[..., agent]`` to bit/s, each agent within its own bounds."""
        a = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"actions must be finite numbers, got {a.tolist()}")
        if self.action_scale == "bps":
            return np.clip(a, self.lo, self.hi)
        x = (np.clip(a, -1.0, 1.0) + 1.0) / 2.0
        return np.exp(np.log(self.lo) + x * (np.log(self.hi) - np.log(self.lo)))

    def info(self, stats: np.ndarray) -> dict:
        return {n: stats[..., i] for i, n in enumerate(self.names)}


class RtccEnv(gymnasium.Env):
    """One agent flow over a scenario or a trace (see the module's documentation).

    Parameters: ``scenario`` (a Scenario, a scenario file or bundled name, or a dict; its first
    video flow becomes the agent) or ``trace`` (a default scenario over it,
    :func:`learning_scenario`), ``observation`` (``mmsys24``, ``opennetlab``, ``rtcc``), ``step``,
    ``reward`` (``"network"``, ``"qoe"`` or a callable, :mod:`rtcc.learn.rewards`),
    ``action_scale`` (``"log"`` or ``"bps"``), ``params`` (more ``agent`` parameters, e.g.
    ``min_rate``).
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario=None, *, trace: str | None = None, observation: str = "mmsys24",
                 step: str = "60ms", reward: str | Callable = "network", action_scale: str = "log",
                 params: dict | None = None):
        self._c = _Core(scenario, trace, observation, step, reward, action_scale, 1, 1, params)
        self.observation_space = self._c.observation_space
        self.action_space = self._c.action_space
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        # Without a seed the next episode's comes from the environment's generator, so that
        # reset(seed=s) followed by reset() repeats exactly.
        sim_seed = seed if seed is not None else int(self.np_random.integers(2**31))
        obs = self._c.env.reset([sim_seed])
        self._done = False
        return obs[0, 0], {"time_s": self._c.env.times()[0]}

    def step(self, action):
        if self._done:
            raise RuntimeError("the episode is over: call reset() first")
        bps = self._c.to_bps(np.reshape(action, (1, 1)))
        obs, stats, done = self._c.env.step(bps)
        info = _rewards.row_dict(self._c.names, stats[0, 0])
        reward = self._c.reward_one(info)
        self._done = bool(done[0])
        return obs[0, 0], reward, False, self._done, info


class RtccVectorEnv(VectorEnv):
    """``num_envs`` simulations stepped together in Rust (same parameters as :class:`RtccEnv`;
    ``scenario`` or ``trace`` may also be a list, simulation ``i`` running the ``i mod n``-th). A finished simulation is reset on the next step (Gymnasium's
    ``NEXT_STEP`` autoreset), with the next seed of its own sequence."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, scenario=None, *, trace: str | None = None,
                 observation: str = "mmsys24", step: str = "60ms", reward: str | Callable = "network",
                 action_scale: str = "log", params: dict | None = None):
        self._c = _Core(scenario, trace, observation, step, reward, action_scale, num_envs, 1, params, lists=True)
        self.num_envs = num_envs
        self.single_observation_space = self._c.observation_space
        self.single_action_space = self._c.action_space
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._seeds: list[int] = list(range(num_envs))
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        if isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
            self._rng = np.random.default_rng(seed)
        elif seed is None:
            seeds = [int(x) for x in self._rng.integers(2**31, size=self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
            # A None in the list: that simulation's seed comes from the environment's generator.
            seeds = [int(self._rng.integers(2**31)) if s is None else int(s) for s in seeds]
        self._seeds = seeds
        obs = self._c.env.reset(seeds)
        self._autoreset[:] = False
        return obs[:, 0], {}

    def step(self, actions):
        bps = self._c.to_bps(np.reshape(actions, (self.num_envs, 1)))
        for i in np.flatnonzero(self._autoreset):
            self._seeds[i] += self.num_envs
            self._c.env.reset([self._seeds[j] if j == i else None for j in range(self.num_envs)], only=int(i))
        # A simulation reset on this step is not also stepped (Gymnasium's NEXT_STEP autoreset).
        obs, stats, done = self._c.env.step(bps, hold=self._autoreset.tolist())
        rewards = self._c.reward(stats)[:, 0]
        rewards[self._autoreset] = 0.0
        stepped = ~self._autoreset
        done = done & stepped
        truncated = done
        self._autoreset = done.copy()
        # Gymnasium's vector infos: each key's values and, under "_key", which sub-environments
        # have one (not those reset on this step).
        infos = {}
        for k, v in self._c.info(stats).items():
            infos[k] = v[:, 0]
            infos["_" + k] = stepped.copy()
        return obs[:, 0], rewards, np.zeros(self.num_envs, dtype=bool), truncated, infos


def _register() -> None:
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="rtcc.gym:RtccEnv",
                           vector_entry_point="rtcc.gym:RtccVectorEnv")


_register()
