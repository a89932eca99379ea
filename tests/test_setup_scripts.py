"""The set-up scripts find what they fetch: ``scripts/sbt`` tells Maven where to put the sbt
launcher and looks for it there, whatever Java's ``user.home`` is (containers and CI runners
where it differs from ``$HOME`` failed with "Unable to access jarfile").

``mvn`` and ``java`` are replaced by small scripts on ``PATH`` that record their arguments
(and ``mvn`` writes the launcher where ``-Dmaven.repo.local`` says, as Maven does).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = next(line.split("=", 1)[1].strip() for line in
               (ROOT / "project" / "build.properties").read_text().splitlines()
               if line.startswith("sbt.version="))

FAKE_MVN = """#!/usr/bin/env bash
echo "$@" >> "$FAKE_LOG.mvn"
for a in "$@"; do case "$a" in -Dmaven.repo.local=*) repo="${a#-Dmaven.repo.local=}";; esac; done
[ -n "${FAKE_MVN_NOWHERE:-}" ] && exit 0
d="$repo/org/scala-sbt/sbt-launch/%(v)s"; mkdir -p "$d"; echo jar > "$d/sbt-launch-%(v)s.jar"
"""
FAKE_JAVA = """#!/usr/bin/env bash
echo "$@" >> "$FAKE_LOG.java"
"""


def _run(tmp_path: Path, **env) -> tuple[subprocess.CompletedProcess, str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("mvn", FAKE_MVN % {"v": VERSION}), ("java", FAKE_JAVA)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path / "home"),
            "FAKE_LOG": str(log), **env}
    if "PUNCTUATED_MAVEN_REPO" not in env:
        full.pop("PUNCTUATED_MAVEN_REPO", None)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "sbt"), "about"], env=full,
                          capture_output=True, text=True, timeout=60)
    read = lambda p: p.read_text() if p.exists() else ""  # noqa: E731
    return done, read(Path(f"{log}.mvn")), read(Path(f"{log}.java"))


def test_maven_is_told_where_the_launcher_goes_and_sbt_starts_from_there(tmp_path):
    done, mvn, java = _run(tmp_path)
    repo = tmp_path / "home" / ".m2" / "repository"
    assert done.returncode == 0, done.stderr
    assert f"-Dmaven.repo.local={repo}" in mvn
    assert f"-jar {repo}/org/scala-sbt/sbt-launch/{VERSION}/sbt-launch-{VERSION}.jar about" in java


def test_a_launcher_already_there_is_not_fetched_again(tmp_path):
    _run(tmp_path)
    (tmp_path / "log.mvn").unlink()
    done, mvn, java = _run(tmp_path)
    assert done.returncode == 0 and mvn == "" and java.count("-jar") == 2


def test_another_repository_by_environment(tmp_path):
    repo = tmp_path / "elsewhere"
    done, mvn, java = _run(tmp_path, PUNCTUATED_MAVEN_REPO=str(repo))
    assert done.returncode == 0 and f"-Dmaven.repo.local={repo}" in mvn and f"-jar {repo}/" in java


def test_a_launcher_maven_did_not_write_is_a_clear_error(tmp_path):
    done, mvn, java = _run(tmp_path, FAKE_MVN_NOWHERE="1")
    assert done.returncode == 1 and java == ""
    assert "Maven did not put the sbt launcher at" in done.stderr and "PUNCTUATED_MAVEN_REPO" in done.stderr
