"""Provenance's clean-checkout flag ignores what the run itself writes."""

import subprocess

from acl.run import results


def test_git_dirty_leaves_the_runs_output_directory_out(tmp_path, monkeypatch):
    def git(*cmd):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "code.py").write_text("x = 1\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.csv").write_text("a\n1\n")
    (tmp_path / "config.yaml").write_text("lr: 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")

    def git_in_package(*args):  # as acl.run.results runs git: from inside the package
        out = subprocess.run(["git", *args], cwd=tmp_path / "pkg", capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None

    monkeypatch.setattr(results, "_git", git_in_package)
    out = tmp_path / "out"
    assert results.git_dirty() is False and results.git_dirty(out) is False
    (out / "results.csv").write_text("a\n1\n2\n")  # the run grows its committed results
    assert results.git_dirty() is True
    assert results.git_dirty(out) is False
    (tmp_path / "out.csv").write_text("untracked\n")  # untracked files never count
    (tmp_path / "config.yaml").write_text("lr: 2\n")  # but a changed config does,
    assert results.git_dirty(out) is True  # outside the package too
    (tmp_path / "config.yaml").write_text("lr: 1\n")
    (tmp_path / "pkg" / "code.py").write_text("x = 2\n")
    assert results.git_dirty(out) is True
