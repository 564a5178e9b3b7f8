"""Controllers registered in the native core, and controller specs written as text.

A spec is ``name`` or ``name:key=value,key=value`` (for example ``fixed:rate=5Mbps`` or
``oracle:fraction=0.8``). Values are read like TOML values when they are numbers or booleans
(``0.8``, ``3``, ``true``) and kept as strings otherwise (``5Mbps``, ``200ms``). The list of
controllers and their parameters, and the grammar itself (`_core.parse_controller_spec`), come
from the core, never from this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import _core
from ._core import ScenarioError

__all__ = ["ControllerSpec", "controllers", "default_specs", "register_controller"]


def controllers() -> list[dict]:
    """Registered controllers: ``[{"name", "summary", "params": [{"name", "default", "doc"}], "feedback",
    "media"}]`` (``media``: the media settings its video flows take unless they write their own).

    A parameter whose ``default`` is ``""`` is required.
    """
    return _core.controllers()


def register_controller(name: str, factory, summary: str = "", params: dict | None = None,
                        feedback: dict | None = None, media: dict | None = None) -> None:
    """Register a controller written in Python under ``name`` (for this process).

    ``factory(params: dict, ctx: dict)`` returns the controller object; ``ctx`` has ``now_s``,
    ``fps`` and ``max_payload_bytes``. ``params`` maps each parameter name to its default as
    scenario text (``""`` for a required one); scenarios may set only these. The object needs
    ``decision()`` (a dict with ``target_bps`` and optionally ``pacing_bps``, ``cwnd_bytes``,
    ``padding_bps``) and ``on_feedback(now_s, report)`` (``report``: numpy arrays ``seq``,
    ``size``, ``send_time_s``, ``receive_time_s`` with NaN for a lost packet); it may have
    ``on_packet_sent(now_s, seq, size, kind)``, the timer pair ``next_timeout()`` (seconds or
    None) / ``on_timeout(now_s)``, and, for the feedback it asks for, ``on_frame_ack(now_s, ack)``
    (``frame``, ``first_receive_time_s``, ``last_receive_time_s``, ``complete_time_s``, ``size``,
    ``lost``; receiver clock), ``on_frame_encoded(now_s, frame)`` (``frame``, ``capture_time_s``,
    ``size``, ``target_bps``, ``packets``, ``keyframe``) and ``on_rate_report(now_s, report)``
    (``window_start_s``, ``window_end_s``, ``bytes``, ``packets``: what the receiver got in the
    window, its clock). ``feedback`` is what the receiver sends the controller's flows, as a
    scenario's ``feedback`` (``interval``, ``per_frame``, ``frame_acks``, ``rate_reports``;
    default: transport-wide feedback every 50 ms). ``media`` holds the media settings its video
    flows take unless their scenario writes them (``encoder``, ``degradation``, ``pushback``,
    ``frame_dropper``, as a scenario writes them; default: none). An exception in any of them fails the run
    with a RuntimeError naming the controller and the method. Sweeps with ``jobs > 1`` run in
    fresh processes, which only know the controllers their own imports register.
    """
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    _core.register_controller(name, factory, summary, params, feedback, media)
    PYTHON_CONTROLLERS.add(name)


# Controllers registered from Python in this process: worker processes do not know them, so
# comparisons that use one run in this process.
PYTHON_CONTROLLERS: set[str] = set()


@dataclass(frozen=True)
class ControllerSpec:
    """A controller name, its parameters, and the label used in tables, plots and folder names."""

    name: str
    params: dict = field(default_factory=dict)
    label: str = ""

    @classmethod
    def parse(cls, text: str) -> "ControllerSpec":
        """Parse ``name`` or ``name:key=value,...``; raise ScenarioError on malformed text."""
        text = text.strip()
        try:
            name, params = _core.parse_controller_spec(text)
        except ValueError as e:
            raise ScenarioError(str(e)) from None
        params = dict(params)
        return cls(name, params, text)

    @classmethod
    def make(cls, name: str, params: dict | None = None) -> "ControllerSpec":
        """Build a spec from a name and parameters; the label is ``name:key=value,...``."""
        params = dict(params or {})
        label = name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")
        return cls(name, params, label)

    def check(self, registry: list[dict] | None = None) -> None:
        """Check the name and parameter names against the registry (values are checked by the core)."""
        registry = controllers() if registry is None else registry
        by_name = {c["name"]: c for c in registry}
        if self.name not in by_name:
            known = ", ".join(by_name) or "(none)"
            raise ScenarioError(f"controller {self.name!r} is not registered; registered controllers: {known}")
        params = by_name[self.name]["params"]
        allowed = [p["name"] for p in params]
        for key in self.params:
            if key not in allowed:
                raise ScenarioError(
                    f"controller {self.name}: unknown parameter {key!r}; allowed: {', '.join(allowed) or '(none)'}"
                )
        for p in params:
            if p["default"] == "" and p["name"] not in self.params:
                raise ScenarioError(f"controller {self.name}: parameter {p['name']!r} is required ({p['doc']})")


def default_specs(fixed_rate: str, registry: list[dict] | None = None) -> tuple[list[ControllerSpec], list[str]]:
    """One spec per registered controller, with default parameters.

    A required parameter called ``rate`` (the ``fixed`` baseline) is set to ``fixed_rate``.
    Controllers with other required parameters cannot be run with defaults: they are skipped
    and named in the second list returned.
    """
    registry = controllers() if registry is None else registry
    specs, skipped = [], []
    for c in registry:
        required = [p["name"] for p in c["params"] if p["default"] == ""]
        if any(name != "rate" for name in required):
            skipped.append(c["name"])
            continue
        specs.append(ControllerSpec.make(c["name"], {"rate": fixed_rate} if required else None))
    return specs, skipped
