"""The ``rtcc`` command line: run, compare, sweep, demo, reproduce, rmcat, controllers, validate, bench, trace.

Every command that writes a folder writes it atomically and refuses to replace a non-empty
one without ``--force``. User errors (bad scenario, unknown controller, existing output, ...)
print ``rtcc: error: <message>`` on stderr and exit with status 2; ``validate`` exits with 1
when a file is invalid. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from . import _core
from ._core import ScenarioError
from .atomic import OutputError, atomic_dir, atomic_file, check_dest
from .progress import RunsProgress, TerminalProgress
from .ray_backend import RayMissing

SPEC_HELP = "controller spec: NAME or NAME:KEY=VALUE[,KEY=VALUE...], e.g. fixed:rate=5Mbps"


class UsageError(Exception):
    """A command-line value that is not valid."""


def cmd_run(args) -> int:
    from .registry import ControllerSpec
    from .report import comparison_rows, text_table
    from .result import write_run
    from .scenario import Scenario

    scenario = Scenario.from_file(args.scenario)
    if args.controller:
        spec = ControllerSpec.parse(args.controller)
        spec.check()
        scenario = scenario.with_controller(spec)
    hops = (scenario.to_dict().get("path") or {}).get("hops") or []
    if args.mahimahi_log and len(hops) > 1:
        raise UsageError(f"--mahimahi-log writes one link's log; this scenario's path has {len(hops)} hops "
                         "([[path.hops]]), whose links are in summary.json's hops")
    check_dest(args.output, args.force)  # before a possibly long run
    with atomic_dir(args.output, force=args.force) as tmp:
        with TerminalProgress(f"{scenario.name}") as bar:  # the logs stream into the folder
            result = scenario.run(seed=args.seed, progress=bar.callback, allow_large=args.allow_large,
                                  logs_to=tmp, pcap_to=args.pcap)
        with RunsProgress(f"{scenario.name}: plots", unit="plots") as drawn:
            write_run(result, tmp, plots=not args.no_plots, progress=drawn)
        if args.mahimahi_log:
            from .interop import write_mahimahi_log

            write_mahimahi_log(result, tmp / "uplink.log")
    print(text_table(comparison_rows([(None, result.summary)])), end="")
    _print_media_defaults(result)
    print(f"wrote {args.output}")
    return 0


def _print_media_defaults(result) -> None:
    """Name the media settings a flow took from its controller's defaults (facts.json has all)."""
    for flow in result.facts.get("flows", []):
        media = flow.get("media") or {}
        taken = media.get("controller_defaults") or []
        if taken:
            text = _media_text({k: media[k] for k in taken})
            print(f"{flow['name']}: its controller's media defaults: {text} (docs/controllers.md)")


def cmd_live(args) -> int:
    from .registry import ControllerSpec
    from .live import can_emulate, run_live
    from .report import comparison_rows, text_table
    from .result import write_run

    if args.controller:
        ControllerSpec.parse(args.controller).check()
    emulate = not args.no_emu
    if emulate and (why := can_emulate()):
        raise UsageError(f"{why}; run as root, or give --no-emu to send over loopback without emulated links")
    check_dest(args.output, args.force)
    with atomic_dir(args.output, force=args.force) as tmp:
        result = run_live(args.scenario, tmp / "live", flow=args.flow, controller=args.controller,
                          emulate=emulate, pcap=args.pcap)
        with RunsProgress(f"{result.name}: plots", unit="plots") as drawn:
            write_run(result, tmp, plots=not args.no_plots, progress=drawn)
    print(text_table(comparison_rows([(None, result.summary)])), end="")
    print(f"wrote {args.output}")
    return 0


def cmd_compare(args) -> int:
    from .registry import ControllerSpec, default_specs
    from .compare import compare
    from .report import text_table
    from .scenario import Scenario

    scenario = Scenario.from_file(args.scenario)
    if args.controller:
        specs = [ControllerSpec.parse(c) for c in args.controller]
    else:
        specs, skipped = default_specs(args.fixed_rate)
        if skipped:
            print(f"rtcc: not comparing {', '.join(skipped)} (parameters without defaults; use -c)", file=sys.stderr)
    if args.live:
        from .live import can_emulate

        if not args.no_emu and (why := can_emulate()):
            raise UsageError(f"--live: {why}; run as root, or add --no-emu to send over loopback")
    engine = _engine(args)
    rows = compare(scenario, specs, args.output, seed=args.seed, force=args.force, progress=True,
                   allow_large=args.allow_large, live=args.live, emulate=not args.no_emu, **engine)
    print(text_table(rows), end="")
    print(f"wrote {args.output}")
    return 0


def _engine(args) -> dict:
    """--jobs, --backend and --address, checked: the keyword arguments of the run engine."""
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs: expected a positive integer, got {args.jobs}")
    if args.address is not None and args.backend != "ray":
        raise UsageError("--address is a Ray cluster's address: give it with --backend ray")
    return {"jobs": args.jobs, "backend": args.backend, "address": args.address}


def _engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes (default: number of CPUs; 1: in-process)")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="local process pool (default) or Ray tasks, input files shipped with each run")
    p.add_argument("--address", metavar="ADDR",
                   help="with --backend ray: the cluster (ray://host:10001); default: a local Ray instance")


def cmd_sweep(args) -> int:
    from .sweep import INCOMPLETE, Sweep, run_sweep

    sweep = Sweep.from_file(args.sweep)
    if args.seeds is not None:
        sweep = sweep.with_seeds(_seed_list(args.seeds))
    engine = _engine(args)
    cells = sweep.validate()  # every cell, before anything runs
    runs = len(cells) * len(sweep.seeds)
    if args.dry_run:
        for label, _, _ in cells:
            print(label)
        print(f"{len(cells)} cells x {len(sweep.seeds)} seeds = {runs} runs")
        return 0
    if args.output is None:
        raise UsageError("-o/--output is required (or use --dry-run)")
    from .sweep import has_killed_runs

    # A sweep that stopped early (INCOMPLETE.txt), or one killed outright that left finished runs.
    resume = args.resume and ((Path(args.output) / INCOMPLETE).is_file() or has_killed_runs(args.output))
    if args.resume and not resume and Path(args.output).exists():
        raise UsageError(f"--resume: {args.output} is not a sweep that stopped early (no {INCOMPLETE})")
    if not resume:
        check_dest(args.output, args.force)  # before a possibly long sweep
    run_sweep(sweep, args.output, force=args.force, keep_logs=args.keep_logs, progress=True,
              allow_large=args.allow_large, resume=resume, **engine)
    print(f"{sweep.name}: {len(cells)} cells x {len(sweep.seeds)} seeds = {runs} runs")
    print(f"wrote {args.output} (index.html, summary.md, results.csv, cells.csv)")
    return 0


SEED_MAX = 2**64 - 1
# rtcc rmcat --seeds N runs seeds 1..N of every case and controller: 1,000 is already days of runs.
RMCAT_MAX_SEEDS = 1000


def _seed(text: str) -> int:
    """argparse type of --seed: an integer the core's 64-bit seed can hold."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to {SEED_MAX}, got {text!r}")
    return seed


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or max(seeds) > SEED_MAX or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds: expected distinct non-negative integers separated by commas, e.g. 1,2,3; "
                         f"got {text!r}")
    return seeds


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(args.output, force=args.force, progress=True, encoder=args.encoder, **_engine(args))
    print(f"\nreport: {args.output}/index.html")
    return 0


def cmd_reproduce(args) -> int:
    from .reproduce import papers, run

    if args.paper not in papers():
        raise UsageError(f"unknown paper {args.paper!r}; the papers are: {', '.join(papers())}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs: expected a positive integer, got {args.jobs}")
    if args.traces is not None and not Path(args.traces).is_dir():
        raise UsageError(f"--traces: {args.traces} is not a folder")
    from .reproduce import can_resume

    resume = args.resume and can_resume(args.paper, args.output, args.quick)
    if args.resume and not resume:
        raise UsageError(f"--resume: no interrupted reproduction of {args.paper} ({'quick' if args.quick else 'full'} "
                         f"set) into {args.output} to resume")
    if not resume:
        check_dest(args.output, args.force)  # before the runs
    run(args.paper, args.output, quick=args.quick, force=args.force, jobs=args.jobs, traces=args.traces,
        resume=resume)
    print(f"wrote {args.output} (index.html, checks.csv, checks.json)")
    return 0


def cmd_controllers(args) -> int:
    from .registry import controllers
    for i, c in enumerate(controllers()):
        if i:
            print()
        print(f"{c['name']}: {c['summary']}")
        if c.get("media"):
            print(f"  (its video flows default to {_media_text(c['media'])}; a flow's own fields win)")
        params = c["params"]
        width = max((len(p["name"]) for p in params), default=0)
        dwidth = max((len(_default(p)) for p in params), default=0)
        for p in params:
            print(f"  {p['name']:<{width}}  {_default(p):<{dwidth}}  {p['doc']}".rstrip())
    print("\nEvery video flow, whatever its controller (fields of [[flows]], docs/scenarios.md):")
    width = max(len(n) for n, _, _ in MEDIA_FIELDS)
    dwidth = max(len(d) for _, d, _ in MEDIA_FIELDS)
    for name, default, doc in MEDIA_FIELDS:
        print(f"  {name:<{width}}  = {default:<{dwidth}}  {doc}")
    return 0


# The per-flow media fields every controller shares (scenario.rs: FlowSpec).
MEDIA_FIELDS = [
    ("fps", "30", "source frame rate, the highest the encoder codes at"),
    ("min_fps", "10", "lowest frame rate the degradation policy uses"),
    ("min_bitrate", "30kbps", "floor of a rate-based controller's target and pacing rate"),
    ("start_bitrate", "(controller's own)", "start rate of controllers that have one (gcc, sqp)"),
    ("max_bitrate", "(none)", "cap of every controller's target"),
    ("degradation", "balanced", "WebRTC's preference: balanced, maintain-framerate, "
     "maintain-resolution, disabled"),
    ("pushback", "true", "the encoder backs off as the pacer queue grows (a frame skipped at 1 s of it)"),
    ("frame_dropper", "true", "frames are skipped while the encoder's output runs ahead of its target"),
    ("vbv", "off", "peak-constrained rate control: no frame above this many frame targets (lagged, ideal)"),
    ("payload", "1200B", "largest payload per packet (SQP: frames of up to two payloads go out as two halves)"),
]


def _media_text(media: dict) -> str:
    """A controller's media defaults as a scenario writes them: `degradation = "disabled", ...`."""
    return ", ".join(f"{k} = {json.dumps(v)}" if not isinstance(v, bool) else f"{k} = {str(v).lower()}"
                     for k, v in media.items())


def _default(p: dict) -> str:
    return "(required)" if p["default"] == "" else f"= {p['default']}"


def _is_sweep_file(path) -> bool:
    """A sweep file has `[sweep]` and `[scenario]` tables; a scenario file neither."""
    from rtcc import _toml as tomllib
    from pathlib import Path

    from .scenario import read_bounded

    try:
        data = tomllib.loads(read_bounded(Path(path), "file").decode("utf-8"))
    except (OSError, ScenarioError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return False  # the scenario parser reports the problem with its own message
    return "sweep" in data or "scenario" in data


def cmd_rmcat(args) -> int:
    from .registry import ControllerSpec
    from .rmcat import run_suite, select_cases, text_table

    try:
        cases = select_cases(args.cases)
    except ValueError as e:
        raise UsageError(str(e)) from None
    specs = None
    if args.controller:
        specs = [ControllerSpec.parse(c) for c in args.controller]
        for spec in specs:
            spec.check()
    if args.seeds is not None and not 1 <= args.seeds <= RMCAT_MAX_SEEDS:
        raise UsageError(f"--seeds: expected a number of seeds from 1 to {RMCAT_MAX_SEEDS} (each runs every case "
                         f"with every controller), got {args.seeds}")
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    engine = _engine(args)
    check_dest(args.output, args.force)
    command = "rtcc rmcat " + " ".join(_rmcat_argv(args))
    rows = run_suite(args.output, specs, cases, list(range(1, seeds + 1)), force=args.force, progress=True,
                     plots=not args.no_plots, command=command.strip(), **engine)
    print(text_table(rows), end="")
    print(f"wrote {args.output}")
    return 0


def cmd_dataset(args) -> int:
    from .gym import learning_scenario
    from .learn import dataset
    from .registry import ControllerSpec
    from .scenario import Scenario

    scenarios = [Scenario.from_file(f) for f in args.scenario]
    for t in args.trace or []:
        paths = sorted(p for p in Path(t).iterdir() if p.is_file() and not p.name.startswith(("README", "."))) \
            if Path(t).is_dir() else [Path(t)]
        for p in paths:
            sc = learning_scenario(str(p), duration=args.duration)
            scenarios.append(Scenario.from_dict({**sc.to_dict(), "name": p.name.replace(".", "-")}, sc.base_dir))
    if not scenarios:
        raise UsageError("give at least one scenario file or --trace")
    if not args.controller:
        raise UsageError("give the controllers to record with -c (e.g. -c gcc -c sqp)")
    specs = [ControllerSpec.parse(c) for c in args.controller]
    for spec in specs:
        spec.check()
    if not 1 <= args.seeds <= 1000:
        raise UsageError(f"--seeds: expected 1 to 1000, got {args.seeds}")
    check_dest(args.output, args.force)
    runs = dataset.build(scenarios, specs, list(range(1, args.seeds + 1)), args.output, observation=args.observation,
                         step=args.step, reward=args.reward, force=args.force)
    steps = sum(r["steps"] for r in runs)
    print(f"{len(runs)} runs, {steps} steps; wrote {args.output} (runs.json, steps.parquet, json/)")
    return 0


def _rmcat_argv(args) -> list[str]:
    """The options that decide the table, as written on the command line (shown in the report)."""
    out = [f"-c {c}" for c in args.controller or []]
    out += [f"--cases {args.cases}"] * bool(args.cases) + ["--quick"] * args.quick
    out += [f"--seeds {args.seeds}"] * (args.seeds is not None)
    return out


def cmd_examples(args) -> int:
    from .examples import listing

    print(listing())
    return 0


def cmd_validate(args) -> int:
    from .scenario import Scenario
    from .sweep import Sweep

    from .examples import resolve

    failed = False
    for given in args.scenarios:
        path = resolve(given)
        try:
            if _is_sweep_file(path):
                cells = Sweep.from_file(path).validate()
                print(f"{given}: OK (sweep, {len(cells)} cells)")
                continue
            errors = Scenario.from_file(path).errors()
        except ScenarioError as e:
            errors = [e]
        if errors:
            failed = True
            for e in errors:
                print(f"{given}: error: {str(e).removeprefix(f'{path}: ')}")
        else:
            print(f"{given}: OK")
    return 1 if failed else 0


# `rtcc bench --case command`: the 60 s one-flow Cubic run timed as a whole command.
COMMAND_BENCH_SCENARIO = """name = "bench-command"
duration = "60s"
[path.forward]
capacity = "20Mbps"
delay = "20ms"
queue = "100pkts"
[[flows]]
kind = "tcp"
controller = "cubic"
delayed_ack = true
"""


def _bench_commands(rounds: int = 7) -> list[tuple[str, float]]:
    """Median wall seconds of whole `rtcc` processes (interpreter start, imports, run, output)."""
    import statistics
    import subprocess
    import tempfile
    import time

    rtcc = [sys.executable, "-m", "rtcc"]
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "cubic.toml"
        scenario.write_text(COMMAND_BENCH_SCENARIO)
        commands = {"rtcc --help": [*rtcc, "--help"],
                    "rtcc run --no-plots (60 s Cubic)": [*rtcc, "run", str(scenario), "--no-plots", "-o",
                                                         str(Path(tmp) / "run"), "--force"]}
        out = []
        for label, argv in commands.items():
            times = []
            for _ in range(rounds):
                start = time.perf_counter()
                subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
                times.append(time.perf_counter() - start)
            out.append((label, statistics.median(times)))
    return out


def _bench_case(case: str) -> dict:
    """One benchmark case in a fresh process, so that its peak memory is its own (an allocator
    keeps what an earlier case freed) plus the interpreter's."""
    import json
    import subprocess

    code = "import json, sys; from rtcc import _core; print(json.dumps(_core.bench(sys.argv[1])))"
    done = subprocess.run([sys.executable, "-c", code, case], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark case {case} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def _print_bench(r: dict) -> None:
    peak = r.get("peak_rss_bytes")
    memory = f"{peak / 2**20:>8.0f}" if peak else f"{'-':>8}"
    print(f"{r['case']:<13} {r['flows']:>5} {r['packets']:>11} {r['sim_seconds']:>7.0f} {r['wall_seconds']:>8.2f} "
          f"{r['packets_per_second']:>12,.0f} {r['speedup']:>9.1f}x {memory}", flush=True)


def _bench_gym() -> None:
    """The learning environment's speed: environment steps per wall second, in Rust alone and
    through Python's vector environment, and a 60 s episode through the single environment."""
    import time

    import numpy as np

    print(f"{'gym case':<34} {'envs':>5} {'steps':>8} {'wall s':>7} {'steps/s':>10}  per step: sim / obs / stats (us)")
    for n in (1, 16, 64):
        r = _core.bench_env(n)
        per = [1e6 * r[k] / r["steps"] for k in ("simulate_seconds", "observe_seconds", "stats_seconds")]
        print(f"{'rust, mmsys24':<34} {n:>5} {r['steps']:>8} {r['wall_seconds']:>7.2f} {r['steps_per_second']:>10,.0f}"
              f"  {per[0]:.1f} / {per[1]:.1f} / {per[2]:.1f}")
    try:
        from .gym import RtccEnv, RtccVectorEnv, learning_scenario
    except ImportError as e:
        print(f"python: not measured ({e})")
        return
    sc = learning_scenario(capacity="2Mbps", observation="mmsys24")
    for n in (1, 16, 64):
        env = RtccVectorEnv(n, sc, action_scale="bps")
        env.reset(seed=1)
        a = np.full((n, 1), 1.8e6, np.float32)
        steps, start = 0, time.perf_counter()
        while steps < 999 * n:
            env.step(a)
            steps += n
        wall = time.perf_counter() - start
        print(f"{'python vector env, mmsys24':<34} {n:>5} {steps:>8} {wall:>7.2f} {steps / wall:>10,.0f}")
    env = RtccEnv(sc, action_scale="bps")
    env.reset(seed=1)
    start, truncated, steps = time.perf_counter(), False, 0
    while not truncated:
        truncated = env.step(np.array([1.8e6], np.float32))[3]
        steps += 1
    wall = time.perf_counter() - start
    print(f"{'python single env, 60 s episode':<34} {1:>5} {steps:>8} {wall:>7.3f} {steps / wall:>10,.0f}")


def cmd_bench(args) -> int:
    if args.case == "gym":
        _bench_gym()
        return 0
    if args.case == "command":
        for label, seconds in _bench_commands():
            print(f"{label:<36} {seconds:>6.3f} s wall (median of 7)")
        return 0
    if args.case == "scaling":
        cases = list(_core.BENCH_SCALING_CASES)
    elif args.case in ("all", "encoders"):
        cases = ["single", "ten"]
    else:
        cases = [args.case]
    if args.case != "encoders":
        print(f"{'case':<13} {'flows':>5} {'packets':>11} {'sim s':>7} {'wall s':>8} {'packets/s':>12} "
              f"{'speed-up':>10} {'peak MB':>8}")
        for case in cases:
            _print_bench(_bench_case(case))
    if args.case in ("all", "encoders"):
        try:
            from .video import bench as video_bench

            rows = video_bench.run()
        except (ImportError, ValueError, RuntimeError) as e:
            print(f"encoders: not measured ({e})")
            return 0 if args.case == "all" else 1
        print(f"\n{'codec':<6} {'resolution':>10} {'frames':>7} {'frames/s per core':>18}")
        for r in rows:
            print(f"{r['codec']:<6} {r['resolution']:>10} {r['frames']:>7} {r['fps_per_core']:>18.0f}", flush=True)
    return 0


def cmd_trace_lte(args) -> int:
    duration = _parse(_core.parse_duration, "--duration", args.duration)
    mean = _parse(_core.parse_rate, "--mean", args.mean)
    if duration <= 0 or mean <= 0:
        raise UsageError("--duration and --mean must be positive")
    check_dest(args.output, args.force, kind="file")
    lines = _core.generate_lte_trace(args.seed, duration, mean / 1e6)
    with atomic_file(args.output, force=args.force) as f:
        f.write("".join(f"{ms}\n" for ms in lines))
    print(f"wrote {args.output}: {len(lines)} delivery opportunities over {duration:g} s "
          f"(mean {len(lines) * 1500 * 8 / duration / 1e6:.2f} Mbit/s)")
    return 0


def _parse(fn, option: str, text: str) -> float:
    try:
        return fn(text)
    except ValueError as e:
        raise UsageError(f"{option}: {e}") from None


# Commands on real networks, parsed and run by the Rust core (`rtcc <command> --help`; docs/live.md).
LIVE_COMMANDS = {
    "emu": "run a command behind emulated links, in a network namespace (needs root)",
    "send": "send one flow of a scenario as RTP over UDP (the live sender)",
    "recv": "receive one flow of a scenario over UDP (the live receiver)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rtcc", description="Rate control for low-latency interactive video.")
    parser.add_argument("--version", action="version", version=f"rtcc {_core.__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run one scenario and write a run folder")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="run folder to write")
    p.add_argument("--seed", type=_seed, help="override the scenario's seed")
    p.add_argument("--controller", metavar="SPEC", help=f"use this controller for every flow ({SPEC_HELP})")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--mahimahi-log", action="store_true",
                   help="also write the forward bottleneck as a mahimahi link log (uplink.log, for mm-graph tools)")
    p.add_argument("--pcap", metavar="FILE",
                   help="also write every datagram sent as a pcap file (IPv4/UDP, simulated timestamps; "
                        "tshark -d udp.port==5004,rtp -d udp.port==5005,rtcp)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.add_argument("--allow-large", action="store_true",
                   help="run even if the run is estimated to log more than 50 million packets")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("live", help="run a scenario's flow live: rtcc send inside rtcc emu, rtcc recv on the host")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="run folder to write (as rtcc run's)")
    p.add_argument("--flow", type=int, default=0, help="which of the scenario's flows (default: 0)")
    p.add_argument("--controller", metavar="SPEC", help=f"use this controller ({SPEC_HELP})")
    p.add_argument("--no-emu", action="store_true",
                   help="send over loopback, without emulated links (no root needed)")
    p.add_argument("--pcap", metavar="FILE",
                   help="the receiver captures what it receives and sends in this pcap file (tshark -d udp.port==PORT,rtp)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.set_defaults(func=cmd_live)

    p = sub.add_parser("compare", help="run several controllers on one scenario and compare them")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (.toml)")
    p.add_argument("-c", "--controller", action="append", metavar="SPEC",
                   help=f"{SPEC_HELP}; repeat for more (default: every registered controller)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="comparison folder to write")
    p.add_argument("--seed", type=_seed, help="override the scenario's seed")
    p.add_argument("--allow-large", action="store_true",
                   help="run controllers whose run is estimated to log more than 50 million packets (about 3 GB of memory)")
    p.add_argument("--fixed-rate", default="2Mbps", metavar="RATE",
                   help="rate of the fixed controller when no -c is given (default: 2Mbps)")
    p.add_argument("--live", action="store_true",
                   help="also run each controller live (rtcc send inside rtcc emu, in real time; needs root) beside its simulation")
    p.add_argument("--no-emu", action="store_true", help="with --live: send over loopback, without emulated links")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    _engine_options(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("sweep", help="run a grid of scenario variants over several seeds")
    p.add_argument("sweep", metavar="FILE", help="sweep file (.toml): [sweep] grid and seeds, base [scenario]")
    p.add_argument("-o", "--output", metavar="DIR", help="sweep folder to write")
    p.add_argument("--seeds", metavar="LIST", help="run these seeds instead of the file's, e.g. 1,2,3")
    p.add_argument("--keep-logs", action="store_true", help="write every run's full folder (Parquet logs, plots)")
    p.add_argument("--dry-run", action="store_true", help="check every cell and list the labels without running")
    p.add_argument("--resume", action="store_true",
                   help="rerun into DIR left by a sweep that stopped early, running only the missing runs")
    p.add_argument("--allow-large", action="store_true",
                   help="run cells estimated to log more than 50 million packets (about 3 GB of memory)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    _engine_options(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("demo", help="compare every controller on the bundled step and LTE scenarios")
    p.add_argument("-o", "--output", default="reports/demo", metavar="DIR", help="report folder (default: reports/demo)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.add_argument("--encoder", choices=["vp8", "x264"], default=None,
                   help="encode every video flow with this real encoder (a real clip at 360p) instead of the "
                        "scenarios' models; the runs' pages show decoded stills and their PSNR/SSIM")
    _engine_options(p)
    p.set_defaults(func=cmd_demo)

    from .reproduce import papers  # the standard library only: --help stays fast

    p = sub.add_parser("reproduce", help="rerun a seed paper's key experiments: its figures and a table of its "
                       "headline numbers against ours")
    p.add_argument("paper", metavar="PAPER", help=f"the paper: {', '.join(papers())}")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="report folder to write (index.html, "
                   "checks.csv, checks.json, figures/, data/)")
    p.add_argument("--quick", action="store_true",
                   help="a reduced set: fewer seeds and cells, wider tolerances where stated (docs/reproduce.md)")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes for sweeps (default: number of CPUs)")
    p.add_argument("--traces", metavar="DIR", help="folder holding the mahimahi cellular traces (vidaptive; default: "
                   "../shared/traces/mahimahi next to the source checkout)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.add_argument("--resume", action="store_true",
                   help="reuse the runs an interrupted or killed reproduction into DIR finished (same paper and set)")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("rmcat", help="the RMCAT suite: RFC 8867's test cases, judged by explicit rules, "
                       "for several controllers and seeds (docs/rmcat.md)")
    p.add_argument("-c", "--controller", action="append", metavar="SPEC",
                   help=f"{SPEC_HELP}; repeat for more (default: gcc, sqp, vidaptive and c3g, those registered)")
    p.add_argument("--cases", metavar="LIST", help="case ids separated by commas, e.g. 5.1,5.3 (default: all)")
    p.add_argument("--seeds", type=int, metavar="N", help="run seeds 1..N (default: 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="one seed instead of three (for CI); the cases are unchanged")
    p.add_argument("-o", "--output", default="reports/rmcat", metavar="DIR",
                   help="report folder (default: reports/rmcat): table.md, table.csv, rules.csv, index.html, runs/")
    p.add_argument("--no-plots", action="store_true", help="skip the per-case plots")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    _engine_options(p)
    p.set_defaults(func=cmd_rmcat)

    p = sub.add_parser("dataset", help="record trajectories of controllers for offline learning: observations, "
                       "actions, rewards and true capacity (docs/learning.md)")
    p.add_argument("scenario", nargs="*", metavar="SCENARIO", help="scenario files (their first video flow is recorded)")
    p.add_argument("--trace", action="append", metavar="PATH",
                   help="a trace file, or a folder of them, each run over the default learning link; repeat for more")
    p.add_argument("--duration", default="60s", help="length of the --trace runs (default: 60s)")
    p.add_argument("-c", "--controller", action="append", metavar="SPEC", help=f"{SPEC_HELP}; repeat for more")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="run seeds 1..N (default: 1)")
    p.add_argument("--observation", default="mmsys24", choices=["mmsys24", "opennetlab", "rtcc"],
                   help="what the recorded observations hold (default: mmsys24)")
    p.add_argument("--step", default="60ms", help="time between observations (default: 60ms)")
    p.add_argument("--reward", default="network", choices=["network", "qoe"], help="the recorded reward")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="dataset folder to write")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.set_defaults(func=cmd_dataset)

    p = sub.add_parser("controllers", help="list registered controllers and their parameters")
    p.set_defaults(func=cmd_controllers)

    p = sub.add_parser("examples", help="list the bundled scenarios and sweeps (usable by name)")
    p.set_defaults(func=cmd_examples)

    p = sub.add_parser("validate", help="check scenario and sweep files without running them")
    p.add_argument("scenarios", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("bench", help="simulator speed on standard scenarios")
    p.add_argument("--case", choices=["single", "ten", "all", "command", "encoders", "scaling", "gym",
                                      *_core.BENCH_SCALING_CASES], default="all", metavar="CASE",
                   help="single: one 20 Mbit/s flow, 40 ms RTT, 60 s; ten: ten flows share 60 Mbit/s; "
                        "encoders: the real encoders' frames per second of one core at 360p and 720p (default, "
                        "all: the three); command: whole-process time of `rtcc --help` and `rtcc run --no-plots` "
                        "of a 60 s one-flow Cubic run; scaling: 1 to 1,000 flows, 20 Mbit/s to 1 Gbit/s, "
                        "60 s and 3,600 s (each also alone: flows-N, rate-R, length-L, soak), with peak memory; "
                        "gym: the learning environment's steps per second (2 Mbit/s link, 60 ms steps, mmsys24)")
    p.set_defaults(func=cmd_bench)

    for name, text in LIVE_COMMANDS.items():
        # Listed here for `rtcc --help`; main() hands their arguments to the core untouched.
        sub.add_parser(name, help=text, add_help=False)

    p = sub.add_parser("trace", help="generate link traces")
    tsub = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    t = tsub.add_parser("lte", help="synthetic LTE-like mahimahi trace")
    t.add_argument("--seed", type=_seed, default=1, help="random seed (default: 1)")
    t.add_argument("--duration", default="60s", help="trace length (default: 60s)")
    t.add_argument("--mean", default="6Mbps", help="mean capacity (default: 6Mbps)")
    t.add_argument("-o", "--output", required=True, metavar="FILE", help="trace file to write")
    t.add_argument("--force", action="store_true", help="replace FILE if it exists")
    t.set_defaults(func=cmd_trace_lte)
    return parser


def _os_message(e: OSError) -> str:
    if e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def _live(argv: list[str]) -> int:
    """Run a live command in the core, then turn its CSV logs into Parquet."""
    from .examples import resolve

    argv = list(argv)
    for i, a in enumerate(argv):  # --scenario NAME or --scenario=NAME
        if a == "--scenario" and i + 1 < len(argv):
            argv[i + 1] = resolve(argv[i + 1])
        elif a.startswith("--scenario="):
            argv[i] = "--scenario=" + resolve(a.removeprefix("--scenario="))
    code = _core.live_main(["rtcc", *argv])
    from .live import convert_emu_logs, emu_log_dir

    log_dir = emu_log_dir(argv[1:]) if argv[0] == "emu" else None
    if log_dir is not None and (log_dir / "packets.csv").exists():
        convert_emu_logs(log_dir)
    return code


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that everything a Ctrl-C cleans up
    (temporary output folders, worker processes, the core's run, which checks for signals once
    per simulated second) is cleaned up too; the exit status is 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, _frame):
    raise Terminated(signum)


def _catch_termination() -> None:
    """SIGTERM and SIGHUP end the command as Ctrl-C does (Python's default dies on the spot)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _terminate)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in LIVE_COMMANDS:
        return _live(argv)
    args = build_parser().parse_args(argv)
    _catch_termination()
    try:
        return args.func(args)
    except (ScenarioError, OutputError, UsageError, RayMissing) as e:
        message = str(e)
    except OSError as e:
        message = _os_message(e)
    except RecursionError:
        message = "the input is nested too deeply to process"
    except KeyboardInterrupt as e:
        import signal

        signum = getattr(e, "signum", signal.SIGINT)
        print(f"\nrtcc: {'interrupted' if signum == signal.SIGINT else 'terminated'} "
              f"({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum
    except Exception as e:  # a bug in rtcc: one line, the traceback only when asked for
        if args.debug:
            raise
        print(f"rtcc: internal error: {type(e).__name__}: {e} (a bug in rtcc; --debug shows the traceback)",
              file=sys.stderr)
        return 70  # EX_SOFTWARE
    print(f"rtcc: error: {_printable(message)}", file=sys.stderr)
    return 2


def _printable(message: str) -> str:
    """``message`` with control characters escaped (``\\n``, ``\\x1b``): a file name holding a
    newline or a terminal escape sequence cannot forge a second line or repaint the terminal. A path
    inside an output's temporary sibling (``.out.tmp-<pid>-<random>/x``) is named as the output's
    (``out/x``): the user never asked for the temporary folder, and it is gone by then."""
    import re
    import unicodedata

    message = re.sub(r"(^|/)\.([^/\s]+)\.tmp-\d+-[^/\s]+", r"\1\2", message)
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch).startswith("C") else ch
                   for ch in message)


if __name__ == "__main__":
    sys.exit(main())
