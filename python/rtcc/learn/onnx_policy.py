"""Policies in ONNX with the MMSys 2024 challenge's signature, for the ``onnx`` controller.

The challenge's policy takes the observation (``[1, 1, 150]``, float32) and, for a stateful
model, the hidden and cell states (``[1, 1]`` each, zeros at the start), and returns the
bandwidth estimate in bit/s as the first element of its first output, then the new hidden and
cell states (microsoft/RL4BandwidthEstimationChallenge, ``run_baseline_model.py``). Any model
with that shape of inputs and outputs runs here: its first input takes the observation (its
last dimension must be the observation's length), further inputs are states fed back from the
model's further outputs, in order.

:func:`load` checks the model when the controller is built and every answer when it runs: a
missing file, a model that is not ONNX, an input whose size does not fit the observation or an
answer that is not a positive finite rate is an error naming the model, raised by the run.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np


from .. import _core


def _shape(dims) -> tuple[int, ...]:
    """A static shape: symbolic dimensions (a batch) become 1."""
    return tuple(d if isinstance(d, int) and d > 0 else 1 for d in dims)


def load(model: str | os.PathLike, observation: str = "mmsys24") -> Callable[[float, np.ndarray], float]:
    """A callable ``act(now_s, observation) -> bit/s`` running ``model`` with onnxruntime."""
    path = os.fspath(model)
    want = _core.observation_length(observation)  # names an unknown observation
    if not os.path.isfile(path):
        raise FileNotFoundError(f"model {path!r}: no such file")
    try:
        import onnxruntime as ort
    except ImportError:
        raise ImportError("the onnx controller needs onnxruntime: pip install 'rtcc[learn]'") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise ValueError(f"model {path!r}: not a model onnxruntime can load ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''})") from None
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if not inputs or not outputs:
        raise ValueError(f"model {path!r}: needs at least one input and one output")
    obs_shape = _shape(inputs[0].shape)
    if int(np.prod(obs_shape)) != want:
        raise ValueError(f"model {path!r}: its input {inputs[0].name!r} has shape {list(inputs[0].shape)} "
                         f"({int(np.prod(obs_shape))} values), but the {observation} observation has {want}")
    state_inputs = inputs[1:]
    if len(outputs) < 1 + len(state_inputs):
        raise ValueError(f"model {path!r}: {len(state_inputs)} state input(s) but only {len(outputs) - 1} "
                         "state output(s) to feed them back from")
    states = [np.zeros(_shape(i.shape), dtype=np.float32) for i in state_inputs]
    names = [i.name for i in inputs]

    def act(now_s: float, obs: np.ndarray) -> float:
        feed = {names[0]: np.asarray(obs, dtype=np.float32).reshape(obs_shape)}
        for name, state in zip(names[1:], states):
            feed[name] = state
        result = session.run(None, feed)
        for k in range(len(states)):
            states[k] = np.asarray(result[1 + k], dtype=np.float32).reshape(states[k].shape)
        estimate = np.asarray(result[0]).reshape(-1)
        if estimate.size == 0:
            raise ValueError(f"model {path!r}: its first output is empty")
        bps = float(estimate[0])
        if not np.isfinite(bps) or bps <= 0:
            raise ValueError(f"model {path!r}: answered {bps} bit/s at {now_s:.3f} s (a target must be a "
                             "positive, finite rate)")
        return bps

    return act
