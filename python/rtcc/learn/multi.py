"""Several learned flows sharing a bottleneck: a PettingZoo ``ParallelEnv``.

Every agent is one video flow whose controller is ``agent`` (``agents`` of them over the default
link of :func:`rtcc.gym.learning_scenario`, or the first ``agents`` video flows of a scenario);
all act at once every step, each observes its own flow and gets its own reward. The episode is
the scenario: at its end every agent is truncated and ``agents`` empties.

>>> from rtcc.learn.multi import parallel_env
>>> env = parallel_env(agents=3, capacity="6Mbps")
>>> obs, infos = env.reset(seed=1)
"""

from __future__ import annotations

from typing import Callable

import numpy as np

try:
    from pettingzoo import ParallelEnv
except ImportError as e:  # pragma: no cover - exercised by the skip in the tests
    raise ImportError("rtcc.learn.multi needs pettingzoo: pip install 'rtcc[learn]'") from e

from ..gym import _Core, learning_scenario
from .rewards import row_dict


class RtccParallelEnv(ParallelEnv):
    metadata = {"render_modes": [], "name": "rtcc_video_v0"}

    def __init__(self, scenario=None, *, agents: int = 2, trace: str | None = None,
                 observation: str = "mmsys24", step: str = "60ms", reward: str | Callable = "network",
                 action_scale: str = "log", params: dict | None = None, **link):
        if scenario is None and link:
            scenario = learning_scenario(trace, agents=agents, observation=observation, step=step,
                                         params=params, **link)
            trace = None
        self._c = _Core(scenario, trace, observation, step, reward, action_scale, 1, agents, params)
        self.possible_agents = [f"flow_{i}" for i in range(agents)]
        self.agents: list[str] = []
        self._spaces = {a: (self._c.observation_space, self._c.agent_action_space(i))
                        for i, a in enumerate(self.possible_agents)}
        self._rng = np.random.default_rng()

    def observation_space(self, agent):
        return self._spaces[agent][0]

    def action_space(self, agent):
        return self._spaces[agent][1]

    def reset(self, seed: int | None = None, options: dict | None = None):
        # Without a seed the next episode's comes from the environment's generator, so that
        # reset(seed=s) followed by reset() repeats exactly (as rtcc.gym's environments do).
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        obs = self._c.env.reset([seed if seed is not None else int(self._rng.integers(2**31))])
        self.agents = list(self.possible_agents)
        t = self._c.env.times()[0]
        return ({a: obs[0, i] for i, a in enumerate(self.agents)},
                {a: {"time_s": t} for a in self.agents})

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError("the episode is over: call reset() first")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for {', '.join(missing)}")
        a = np.array([np.reshape(actions[x], -1)[0] for x in self.possible_agents], dtype=np.float64)
        obs, stats, done = self._c.env.step(self._c.to_bps(a).reshape(1, -1))
        over = bool(done[0])
        infos = {x: row_dict(self._c.names, stats[0, i]) for i, x in enumerate(self.agents)}
        out = ({x: obs[0, i] for i, x in enumerate(self.agents)},
               {x: self._c.reward_one(infos[x]) for x in self.agents},
               {x: False for x in self.agents},
               {x: over for x in self.agents},
               infos)
        if over:
            self.agents = []
        return out


def parallel_env(**kwargs) -> RtccParallelEnv:
    """:class:`RtccParallelEnv` (PettingZoo's conventional constructor name)."""
    return RtccParallelEnv(**kwargs)
