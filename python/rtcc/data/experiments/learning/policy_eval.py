"""Compare learned policies with gcc on cellular traces a policy never trained on, and on the
RMCAT suite: the tables of docs/learning.md.

    python experiments/learning/policy_eval.py -o reports/learning [--policy NAME=FILE.onnx[:OBS]] ...

Each controller runs on each test trace (the shared mahimahi downlinks and the bundled LTE-like
trace, 60 s, 20 ms each way, a 100 ms drop-tail queue, the default video flow) with seeds 1-3;
the table gives the means. ``--rmcat`` also runs ``rtcc rmcat`` with the same controllers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np

# Not resolve(): experiments/ is a link into the package; the checkout is two folders up.
ROOT = Path(__file__).absolute().parents[2]
SHARED = ROOT.parent / "shared"
BASELINE = SHARED / "models" / "mmsys24-baseline" / "Offline_RL_baseline_bandwidth_estimator_model.onnx"
TEST_TRACES = [*(SHARED / "traces" / "mahimahi" / f"{n}.down" for n in ("ATT-LTE-driving", "TMobile-LTE-short",
                                                                         "Verizon-LTE-short")),
               ROOT / "traces" / "lte-6mbps-seed1.trace"]
TRAIN_TRACES = [SHARED / "traces" / "mahimahi" / f"{n}.up" for n in ("ATT-LTE-driving", "TMobile-LTE-short",
                                                                     "Verizon-LTE-short")]
SEEDS = (1, 2, 3)


def default_controllers(policies: dict[str, str]) -> dict[str, str]:
    """Label -> controller spec."""
    out = {"gcc": "gcc"}
    if BASELINE.exists():
        out["mmsys24 baseline"] = f"onnx:model={BASELINE}"
        out["mmsys24 baseline, warmed"] = f"onnx:model={BASELINE},start_rate=1Mbps,warmup=3s"
    for label, spec in policies.items():
        path, _, obs = spec.partition(":")
        out[label] = f"onnx:model={Path(path).absolute()}" + (f",observation={obs}" if obs else "")
    return out


def _run(job):
    label, spec, trace, seed = job
    from rtcc.gym import learning_scenario

    sc = learning_scenario(str(trace)).with_controller(spec)
    f = sc.run(seed=seed).summary["flows"][0]
    return label, Path(trace).name, seed, {
        "throughput_mbps": f["throughput_bps"] / 1e6,
        "utilization": f["utilization"],
        "latency_p95_ms": f["frame_latency_ms"]["p95"],
        "delay_p95_ms": f["frame_delay_ms"]["p95"],
        "loss": f["loss_rate"],
        "displayed_share": f["displayed_share"],
    }


def traces_table(controllers: dict[str, str], traces=TEST_TRACES, jobs: int = 2) -> str:
    work = [(label, spec, t, s) for label, spec in controllers.items() for t in traces for s in SEEDS]
    with Pool(jobs) as pool:
        results = pool.map(_run, work)
    by = {}
    for label, trace, _, m in results:
        by.setdefault((label, trace), []).append(m)
    lines = ["| trace | controller | throughput Mbit/s | link used | frame latency P95 ms | frame delay P95 ms | "
             "loss | frames shown |", "|---|---|---|---|---|---|---|---|"]
    for t in traces:
        for label in controllers:
            ms = by[(label, Path(t).name)]
            mean = {k: float(np.mean([m[k] for m in ms])) for k in ms[0]}
            lines.append(f"| {Path(t).name} | {label} | {mean['throughput_mbps']:.2f} | {100 * mean['utilization']:.0f} % | "
                         f"{mean['latency_p95_ms']:.0f} | {mean['delay_p95_ms']:.0f} | {100 * mean['loss']:.1f} % | "
                         f"{100 * mean['displayed_share']:.0f} % |")
    return "\n".join(lines) + "\n"


def rmcat_table(controllers: dict[str, str], out: Path) -> str:
    argv = [sys.executable, "-m", "rtcc", "rmcat", "-o", str(out / "rmcat"), "--no-plots", "--force"]
    for spec in controllers.values():
        argv += ["-c", spec]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return (out / "rmcat" / "table.md").read_text()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--policy", action="append", default=[], metavar="NAME=FILE.onnx[:OBS]")
    p.add_argument("--rmcat", action="store_true")
    p.add_argument("-j", "--jobs", type=int, default=2)
    a = p.parse_args(argv)
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    policies = dict(x.split("=", 1) for x in a.policy)
    controllers = default_controllers(policies)
    table = traces_table(controllers, jobs=a.jobs)
    (out / "traces.md").write_text(table)
    print(table)
    if a.rmcat:
        t = rmcat_table(controllers, out)
        print(t)
    (out / "controllers.json").write_text(json.dumps(controllers, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
