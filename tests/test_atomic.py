"""All-or-nothing output folders and files (no simulator involved)."""

import pytest

from rtcc.atomic import OutputError, atomic_dir, atomic_file


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_new_folder(tmp_path):
    with atomic_dir(tmp_path / "out") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.tmp-")
        (tmp / "a.txt").write_text("a")
        assert not (tmp_path / "out").exists(), "nothing visible before the end"
    assert names(tmp_path) == ["out"]
    assert (tmp_path / "out" / "a.txt").read_text() == "a"


def test_nested_destination_is_created(tmp_path):
    with atomic_dir(tmp_path / "x" / "y" / "out") as tmp:
        (tmp / "a").write_text("")
    assert (tmp_path / "x" / "y" / "out" / "a").is_file()


def test_failure_removes_temp_folder(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with atomic_dir(tmp_path / "out") as tmp:
            (tmp / "a.txt").write_text("a")
            1 / 0
    assert names(tmp_path) == []


def test_keyboard_interrupt_cleans_up(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(tmp_path / "out"):
            raise KeyboardInterrupt
    assert names(tmp_path) == []


def test_existing_needs_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old").write_text("old")
    with pytest.raises(OutputError, match="--force"):
        with atomic_dir(out):
            pass
    assert names(out) == ["old"]


def test_force_replaces_only_on_success(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_dir(out, force=True) as tmp:
            (tmp / "new").write_text("new")
            raise RuntimeError
    assert names(out) == ["old"] and names(tmp_path) == ["out"]
    with atomic_dir(out, force=True) as tmp:
        (tmp / "new").write_text("new")
    assert names(out) == ["new"] and names(tmp_path) == ["out"]


def test_destination_is_a_file(tmp_path):
    (tmp_path / "out").write_text("")
    with pytest.raises(OutputError, match="not a folder"):
        with atomic_dir(tmp_path / "out", force=True):
            pass


def test_atomic_file(tmp_path):
    dest = tmp_path / "t.txt"
    with atomic_file(dest) as f:
        f.write("1\n")
        assert not dest.exists()
    assert dest.read_text() == "1\n"
    with pytest.raises(OutputError, match="--force"):
        with atomic_file(dest):
            pass
    with pytest.raises(ValueError):
        with atomic_file(dest, force=True) as f:
            f.write("2\n")
            raise ValueError
    assert dest.read_text() == "1\n" and names(tmp_path) == ["t.txt"]
    with atomic_file(dest, force=True) as f:
        f.write("3\n")
    assert dest.read_text() == "3\n" and names(tmp_path) == ["t.txt"]
