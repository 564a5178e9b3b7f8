"""``rtcc demo``: every registered controller on the bundled step and LTE scenarios."""

import rtcc
import rtcc.demo
from rtcc.cli import main
from rtcc.demo import experiments_dir


def test_bundled_scenarios_are_valid():
    for name in ("step", "lte"):
        rtcc.Scenario.from_file(experiments_dir() / "demo" / f"{name}.toml").validate()


def test_demo(demo_report, tmp_path, monkeypatch):
    from rtcc.registry import default_specs

    out, text = demo_report
    # Every controller runs, except those with a required parameter (onnx's model), which the
    # report names as not run.
    specs, skipped = default_specs("1Mbps")
    assert skipped == ["onnx"]
    for section in ("step", "lte"):
        md = (out / section / "comparison.md").read_text()
        for spec in specs:
            assert f"| {spec.name}" in md, (section, spec.name)
        assert "Not run (parameters without defaults): onnx." in md
        for plot in ("throughput.png", "frame_delay.png", "frame_delay_cdf.png"):
            assert (out / section / "plots" / plot).is_file()
    assert "oracle" in text and "fixed:rate=" in text
    index = (out / "index.html").read_text()
    assert 'href="step/index.html"' in index and 'href="lte/index.html"' in index
    assert 'src="step/plots/throughput.png"' in index and 'src="lte/plots/frame_delay_cdf.png"' in index


def test_demo_refuses_to_overwrite_without_force_and_replaces_with_it(tmp_path, monkeypatch):
    out = tmp_path / "demo"
    (out / "lte").mkdir(parents=True)
    (out / "lte" / "old.txt").write_text("from an earlier demo")
    assert main(["demo", "-o", str(out)]) == 2, "refuses to overwrite without --force"
    assert (out / "lte" / "old.txt").is_file()
    # Only the step section, to keep this test short: --force writes a whole new report in its place.
    monkeypatch.setattr(rtcc.demo, "DEMOS", [d for d in rtcc.demo.DEMOS if d[0] == "step"])
    assert main(["demo", "-o", str(out), "--force"]) == 0
    assert (out / "step" / "comparison.md").is_file() and not (out / "lte").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]
