"""Scenarios: build them in Python or load them from TOML, validate them, run them.

A scenario is a plain dict with the same structure as the TOML file (duration, seed, path,
flows; see docs/cli.md). Python treats it as opaque apart from the few fields it overrides
(controller, parameters, seed); the native core checks everything else and raises
``ScenarioError`` with a message naming the field. File paths inside a scenario (traces,
schedules) are resolved relative to ``base_dir``: the scenario file's folder, or the working
directory at construction time for scenarios built in Python.
"""

from __future__ import annotations

import copy
import json
import os
from rtcc import _toml as tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import _core
from ._core import ScenarioError
from .progress import TerminalProgress

if TYPE_CHECKING:
    from .result import Result
from .registry import ControllerSpec

__all__ = ["Scenario", "run_file"]

DEFAULT_FORWARD = {"capacity": "10Mbps", "delay": "20ms", "queue": "100ms"}
_CORE_SOURCE = "scenario: "  # how the core names a scenario handed over as JSON
DEFAULT_FLOWS = [{"controller": "fixed", "params": {"rate": "9Mbps"}}]



MAX_INPUT_FILE_BYTES = 64 << 20  # as the core's MAX_INPUT_FILE_BYTES


def read_bounded(path: Path, what: str) -> bytes:
    """A file's bytes, at most 64 MiB (a wrong path such as /dev/zero is an error, not a hang)."""
    with open(path, "rb") as f:
        data = f.read(MAX_INPUT_FILE_BYTES + 1)
    if len(data) > MAX_INPUT_FILE_BYTES:
        raise ScenarioError(f"{path}: {what} is larger than {MAX_INPUT_FILE_BYTES >> 20} MiB; is this the right file?")
    return data


class Scenario:
    """A simulation scenario.

    >>> s = Scenario(duration="30s", forward=dict(capacity="20Mbps", delay="20ms", queue="120ms"),
    ...              flows=[dict(controller="oracle")], name="demo")
    >>> s.with_controller("fixed", {"rate": "5Mbps"}).run(seed=2).summary["flows"][0]["throughput_bps"]
    """

    def __init__(
        self,
        duration: str = "60s",
        seed: int = 1,
        forward: dict | None = None,
        reverse: dict | None = None,
        flows: list[dict] | None = None,
        name: str = "custom",
        *,
        base_dir: str | os.PathLike = ".",
    ):
        path = {"forward": copy.deepcopy(dict(forward if forward is not None else DEFAULT_FORWARD))}
        if reverse is not None:
            path["reverse"] = copy.deepcopy(dict(reverse))
        flows = DEFAULT_FLOWS if flows is None else flows
        data = {"name": name, "duration": duration, "seed": seed, "path": path, "flows": copy.deepcopy(list(flows))}
        self._init(data, base_dir, None)

    def _init(self, data: dict, base_dir: str | os.PathLike, source: str | None) -> None:
        self._data = data
        self.base_dir = os.path.abspath(base_dir)
        self.source = source  # the file it came from, used to prefix error messages

    @classmethod
    def from_dict(cls, data: dict, base_dir: str | os.PathLike = ".") -> "Scenario":
        """Wrap a scenario dict (deep-copied); paths in it are relative to ``base_dir``."""
        if not isinstance(data, dict):
            raise ScenarioError(f"scenario: expected a table (dict), got {type(data).__name__}")
        self = cls.__new__(cls)
        self._init(copy.deepcopy(data), base_dir, None)
        return self

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Scenario":
        """Load a TOML scenario; its name defaults to the file stem, paths are relative to its folder.
        A path that does not exist but names a bundled scenario (``demo/step``, see
        ``rtcc examples``) loads that."""
        from .examples import resolve

        p = Path(resolve(path))
        try:
            text = read_bounded(p, "scenario file").decode("utf-8")
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such scenario file (`rtcc examples` lists the bundled ones, "
                                "usable by name)") from None
        except IsADirectoryError:
            raise ScenarioError(f"{path}: is a folder, expected a scenario file (.toml)") from None
        except OSError as e:
            raise ScenarioError(f"{path}: cannot read scenario file: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ScenarioError(f"{path}: scenario file is not UTF-8 text") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{path}: invalid TOML: {e}") from None
        except RecursionError:
            raise ScenarioError(f"{path}: invalid TOML: nested too deeply to read") from None
        data.setdefault("name", p.stem)
        self = cls.__new__(cls)
        self._init(data, p.absolute().parent, str(path))
        return self

    # -- reading -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return str(self._data.get("name", "scenario"))

    def to_dict(self) -> dict:
        """A deep copy of the scenario dict."""
        return copy.deepcopy(self._data)

    def to_json(self) -> str:
        """The scenario as the JSON text handed to the core."""
        try:
            return json.dumps(self._data, default=str, allow_nan=False)
        except ValueError as e:
            raise self._error(f"scenario contains a value JSON cannot carry ({e})") from None

    def __repr__(self) -> str:
        src = f", source={self.source!r}" if self.source else ""
        return f"Scenario(name={self.name!r}{src})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._data == other._data and self.base_dir == other.base_dir

    # -- deriving ------------------------------------------------------------------------------

    def _copy_with(self, data: dict) -> "Scenario":
        new = Scenario.__new__(Scenario)
        new._init(data, self.base_dir, self.source)
        return new

    def with_controller(self, name: str | ControllerSpec, params: dict | None = None) -> "Scenario":
        """A copy in which every video flow uses controller ``name`` with exactly ``params``.

        Cross-traffic flows (``kind = "cbr"``) are left as they are.

        ``name`` may also be a spec such as ``"fixed:rate=5Mbps"`` or a ControllerSpec.
        """
        if isinstance(name, ControllerSpec):
            spec = name
        elif params is None and ":" in name:
            spec = ControllerSpec.parse(name)
        else:
            spec = ControllerSpec.make(name, params)
        data = self.to_dict()
        flows = data.get("flows")
        if not isinstance(flows, list):
            raise self._error("flows: expected an array of flow tables")
        for flow in flows:
            if isinstance(flow, dict) and flow.get("kind", "video") == "video":
                flow["controller"] = spec.name
                flow["params"] = copy.deepcopy(spec.params)
        return self._copy_with(data)

    def with_encoder(self, encoder: str | dict) -> "Scenario":
        """A copy in which every video flow uses the encoder model ``encoder`` (a name such as
        ``"vp8"`` or a table such as ``{"model": "vp8", "clip": "bikes"}``)."""
        data = self.to_dict()
        flows = data.get("flows")
        if not isinstance(flows, list):
            raise self._error("flows: expected an array of flow tables")
        for flow in flows:
            if isinstance(flow, dict) and flow.get("kind", "video") == "video":
                flow["encoder"] = copy.deepcopy(encoder)
        return self._copy_with(data)

    def with_seed(self, seed: int) -> "Scenario":
        """A copy with another seed."""
        data = self.to_dict()
        data["seed"] = _check_seed(seed)
        return self._copy_with(data)

    # -- checking and running ------------------------------------------------------------------

    def _error(self, message: str) -> ScenarioError:
        """Prefix a message with the scenario file, in place of the core's generic source name."""
        if not self.source:
            return ScenarioError(message)
        return ScenarioError(f"{self.source}: {message.removeprefix(_CORE_SOURCE)}")

    def validate(self) -> None:
        """Raise ScenarioError (naming the field, value and what is allowed) if the scenario is invalid."""
        js = self.to_json()
        try:
            _core.validate(js, self.base_dir)
        except ScenarioError as e:
            raise self._error(str(e)) from e

    def errors(self, limit: int = 20) -> list[ScenarioError]:
        """Every problem of the scenario that can be found (at most ``limit``), not only the first.

        The core stops at the first problem, so each one found is taken out and the rest checked
        again: a bad rate, duration, size or queue limit, or an unknown controller, is replaced by
        a valid stand-in (``_STAND_INS``), any other field removed as if it had not been written.
        Judgment call: the search ends when taking a field out leaves a gap the core reports (a
        required field removed) or the field cannot be found; every error reported is the core's
        own message about the file as written, though one after a stand-in may be about
        the stand-in's interplay with other fields (rare: a stand-in is a modest value)."""
        data = copy.deepcopy(self._data)
        found: list[ScenarioError] = []
        seen: set[str] = set()
        while len(found) < limit:
            try:
                _core.validate(json.dumps(data, default=str, allow_nan=False), self.base_dir)
                break
            except ScenarioError as e:
                field = str(e).split(": ", 1)[0]
                if any(field == s or s.startswith(field + ".") or s.startswith(field + "[") for s in seen):
                    break  # the field, or one inside it, was taken out: what follows is that gap
                found.append(self._error(str(e)))
                seen.add(field)
                message = str(e).split(": ", 1)[-1]
                stand_in = next((v for start, v in _STAND_INS if message.startswith(start)), None)
                if not _replace_field(data, field, stand_in):
                    break
            except ValueError:
                break
        return found

    def check_size(self) -> None:
        """Refuse a run estimated to log more than 50 million packets (about 3 GB of memory with
        the log streamed, as the command line does; about 8 GB with the log kept in memory): a
        ScenarioError that says how many and how to allow it."""
        try:
            packets, limit = _core.estimated_packets(self.to_json(), self.base_dir)
        except ScenarioError as e:
            raise self._error(str(e)) from e
        if packets > limit:
            raise self._error(
                f"this run would log about {packets / 1e6:,.0f} million packets (at most "
                f"{limit / 1e6:.0f} million, about 3 GB of memory, without --allow-large / allow_large=True)")

    def run(self, seed: int | None = None, progress: bool | Callable[[float], None] = False,
            allow_large: bool = False, packets_to: str | os.PathLike | None = None,
            keep_packets: bool = True, pcap_to: str | os.PathLike | None = None,
            logs_to: str | os.PathLike | None = None) -> "Result":
        """Simulate the scenario and return its Result.

        ``seed`` overrides the scenario's seed. ``progress=True`` draws a progress line on stderr
        when it is a terminal; a callable receives the completed fraction (0..1) instead. A run
        estimated to log more than 50 million packets (about 3 GB of memory streamed, 8 GB kept) is
        refused unless ``allow_large`` is set.

        The packet log is held in memory (``Result.packets``, a DataFrame) unless
        ``packets_to`` names a Parquet file to stream it to as the run goes (``Result.packets``
        is then a LazyFrame over it), or ``keep_packets=False`` (None: for runs whose summary is
        all that is wanted). The summary is the same either way. The core writes the streamed
        file itself; the other logs become DataFrames when first read.

        ``logs_to`` names an existing folder to stream the packet, frame and state logs into
        (``packets.parquet``, ``frames.parquet``, ``state.parquet``, each frame once it is
        settled): the run's memory then stays flat however long it is (``Result.packets`` is a
        LazyFrame, ``frames`` and ``state`` are read from the files). It replaces
        ``packets_to``.

        ``pcap_to`` names a pcap file to write every datagram the endpoints send to, as it is
        sent (IPv4/UDP around the real RTP and RTCP bytes, simulated timestamps; Wireshark:
        decode UDP port 5004 as RTP and 5005 as RTCP).
        """
        from .result import Result

        if seed is not None:
            seed = _check_seed(seed)
        js = self.to_json()
        if not allow_large:
            self.check_size()
        bar = TerminalProgress(self.name) if progress is True else None
        callback = bar.callback if bar else (progress if callable(progress) else None)
        streamed: dict[str, Path] = {}
        if logs_to is not None:
            if packets_to is not None:
                raise ValueError("give logs_to or packets_to, not both (logs_to streams the packet log too)")
            if not keep_packets:
                raise ValueError("logs_to streams the packet log: keep_packets=False does not go with it")
            streamed = {name: Path(logs_to) / f"{name}.parquet" for name in ("packets", "frames", "state")}
            packets_to = streamed["packets"]
        # A streamed log is written beside its destination and moved there only once complete,
        # so a failed run leaves no partial file that looks like a log.
        partial = Path(f"{packets_to}.partial") if packets_to is not None else None
        pcap_partial = Path(f"{pcap_to}.partial") if pcap_to is not None else None
        others = {name: Path(f"{path}.partial") for name, path in streamed.items() if name != "packets"}
        done = False
        from .video.encoders import opened

        opened()  # forget encoders of earlier runs in this thread
        try:
            raw = _core.run(js, self.base_dir, seed, callback,
                            packets_to=str(partial) if partial is not None else None,
                            keep_packets=keep_packets,
                            pcap_to=str(pcap_partial) if pcap_partial is not None else None,
                            frames_to=str(others["frames"]) if others else None,
                            state_to=str(others["state"]) if others else None)
            done = True
        except ScenarioError as e:
            raise self._error(str(e)) from e
        finally:
            if bar:
                bar.close()
            moves = [(partial, packets_to), (pcap_partial, pcap_to)]
            moves += [(part, streamed[name]) for name, part in others.items()]
            for part, final in moves:
                if part is not None:
                    if done:
                        os.replace(part, final)
                    else:
                        part.unlink(missing_ok=True)
        result = Result(raw, self.to_dict(), packets_path=packets_to,
                        streamed={name: path for name, path in streamed.items() if name != "packets"})
        result.video_encoders = opened()  # the real encoders' bitstreams, for rtcc.video.quality
        for enc in result.video_encoders:
            enc.close()
        used = seed if seed is not None else result.summary.get("seed")
        if isinstance(used, int):
            result.scenario["seed"] = used
        return result


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ScenarioError(f"seed: expected an integer from 0 to 2^64-1, got {seed!r}")
    return seed


def run_file(
    path: str | os.PathLike,
    seed: int | None = None,
    controller: str | ControllerSpec | None = None,
    progress: bool | Callable[[float], None] = False,
) -> "Result":
    """Load a TOML scenario, optionally switch every flow to ``controller`` (a spec), and run it."""
    scenario = Scenario.from_file(path)
    if controller is not None:
        scenario = scenario.with_controller(controller)
    return scenario.run(seed=seed, progress=progress)


# What `Scenario.errors` puts in place of a bad value to look past it, by the core's message.
_STAND_INS = [("invalid rate", "1Mbps"), ("invalid duration", "10ms"), ("invalid size", "1500B"),
              ("invalid queue limit", "100pkts"), ("unknown controller", "gcc")]


def _replace_field(data: dict, field: str, value=None) -> bool:
    """Set the dotted field (``flows[0].params.rate``) of ``data`` to ``value``, or delete it when
    ``value`` is None; False if the field is not there."""
    import re

    parts = [p for p in re.split(r"\.|(\[\d+\])", field) if p]
    if not parts or field == "scenario":
        return False
    node = data
    for part in parts[:-1]:
        key = int(part[1:-1]) if part.startswith("[") else part
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return False
    last = parts[-1]
    key = int(last[1:-1]) if last.startswith("[") else last
    try:
        if value is None:
            del node[key]
        else:
            node[key]  # noqa: B018 (only an existing field is replaced)
            node[key] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True
