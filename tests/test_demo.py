"""``rtcc demo``: every registered controller on the bundled step and LTE scenarios."""

import rtcc
from rtcc.cli import main
from rtcc.demo import experiments_dir


def test_bundled_scenarios_are_valid():
    for name in ("step", "lte"):
        rtcc.Scenario.from_file(experiments_dir() / "demo" / f"{name}.toml").validate()


def test_demo(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    names = [c["name"] for c in rtcc.controllers()]
    for section in ("step", "lte"):
        md = (out / section / "comparison.md").read_text()
        for name in names:
            assert f"| {name}" in md, (section, name)
        for plot in ("throughput.png", "frame_delay.png", "frame_delay_cdf.png"):
            assert (out / section / "plots" / plot).is_file()
    assert "oracle" in text and "fixed:rate=" in text
    index = (out / "index.html").read_text()
    assert 'href="step/index.html"' in index and 'href="lte/index.html"' in index
    assert 'src="step/plots/throughput.png"' in index and 'src="lte/plots/frame_delay_cdf.png"' in index
    assert main(["demo", "-o", str(out)]) == 2, "refuses to overwrite without --force"
    assert main(["demo", "-o", str(out), "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]
