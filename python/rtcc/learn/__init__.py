"""Learned rate control with rtcc: the environment's rewards, ONNX policies as controllers, and
offline datasets from any controller.

- :mod:`rtcc.gym`: the Gymnasium environment (single and vectorised), registered as
  ``rtcc/Video-v0``; :mod:`rtcc.learn.multi`: the PettingZoo ``ParallelEnv``.
- :mod:`rtcc.learn.rewards`: OpenNetLab's network score, a QoE reward from rtcc's frame
  metrics, or a callable of your own.
- :mod:`rtcc.learn.onnx_policy`: loads a policy with the MMSys 2024 challenge's signature for the
  ``onnx`` controller.
- :mod:`rtcc.learn.dataset`: ``rtcc dataset``, trajectories in the challenge's JSON layout and as
  Parquet.

Gymnasium, PettingZoo and onnxruntime are optional (``pip install 'rtcc[learn]'``).
"""
