"""A wheel per Spark minor (docs/spark-versions.md): its version scheme, its pins, the jar's
Spark stamp and the check against the running pyspark, and the default wheel installed
offline into a fresh virtual environment running the auction join."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import punctuated
from punctuated.spark_version import (
    SparkVersionMismatchError,
    check_spark_version,
    jar_build_properties,
    jar_spark_version,
    spark_minor,
)

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = REPO / ".venv" / "wheelhouse"


def _fake_jar(path: Path, properties: str | None) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("punctuated/spark/PunctuatedExtensions.class", b"")
        if properties is not None:
            zf.writestr("punctuated/build.properties", properties)
    return str(path)


def test_spark_minor():
    assert spark_minor("4.1.3") == "4.1"
    assert spark_minor("4.2.0.dev1") == "4.2"
    with pytest.raises(ValueError, match="not a Spark version"):
        spark_minor("four")


def test_a_jar_built_for_another_minor_fails_naming_both_and_the_fix():
    with pytest.raises(SparkVersionMismatchError) as info:
        check_spark_version(pyspark_version="4.1.1", jar_version="4.2.0")
    message = str(info.value)
    assert message.startswith("[PUNCTUATED_SPARK_VERSION_MISMATCH] pyspark 4.1.1 (Spark 4.1)")
    assert "built for Spark 4.2.0" in message
    assert 'punctuated==0.1.0.4.1' in message and 'pyspark==4.2.*' in message


def test_minor_at_least():
    import punctuated.spark_version as sv

    assert sv.minor_at_least("4.2.1", "4.2") and sv.minor_at_least("4.10.0", "4.2")
    assert not sv.minor_at_least("4.1.4", "4.2") and not sv.minor_at_least("3.5.9", "4.0")
    import doctest
    assert doctest.testmod(sv).failed == 0


def test_patch_versions_may_differ():
    assert check_spark_version(pyspark_version="4.1.1", jar_version="4.1.3") == "4.1"


def test_the_jar_stamp_is_read_and_a_missing_stamp_is_named(tmp_path):
    jar = _fake_jar(tmp_path / "a.jar", "# built by sbt\nspark.version=4.1.3\nspark.minor=4.1\n")
    assert jar_build_properties(jar) == {"spark.version": "4.1.3", "spark.minor": "4.1"}
    assert jar_spark_version(jar) == "4.1.3"
    old = _fake_jar(tmp_path / "old.jar", None)
    with pytest.raises(SparkVersionMismatchError, match="predates the version stamp"):
        jar_spark_version(old)


def test_the_bundled_jar_is_built_for_the_running_pyspark():
    import pyspark

    assert spark_minor(jar_spark_version()) == spark_minor(pyspark.__version__)
    assert check_spark_version() == spark_minor(pyspark.__version__)


def test_configure_spark_refuses_a_jar_for_another_minor(monkeypatch):
    import pyspark
    from pyspark.sql import SparkSession

    monkeypatch.setattr(pyspark, "__version__", "3.5.1")
    with pytest.raises(SparkVersionMismatchError, match=r"pyspark 3\.5\.1 \(Spark 3\.5\) is running"):
        punctuated.configure_spark(SparkSession.builder.master("local[1]"))


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from a registry
    return env


@pytest.mark.spark
def test_the_default_wheel_installs_offline_and_runs_the_auction_join(tmp_path):
    if not (WHEELHOUSE.is_dir() and any(WHEELHOUSE.glob("pyspark-*.whl"))):
        pytest.skip(f"no dependency wheelhouse at {WHEELHOUSE}: scripts/setup.sh fills it "
                    "(this environment was set up before it did; rerun scripts/setup.sh)")
    import pyspark

    minor = spark_minor(pyspark.__version__)
    pinned = re.search(r'"pyspark==([0-9.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    if spark_minor(jar_spark_version(punctuated.jar_path())) != spark_minor(pinned):
        pytest.skip(f"the installed jar is built for Spark {jar_spark_version(punctuated.jar_path())}, not the "
                    f"default {pinned} the wheelhouse holds (another minor's wheel: scripts/check-pyspark.sh)")
    dist = tmp_path / "dist"
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-wheel.sh"), "--jar", punctuated.jar_path(), "--out", str(dist)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHON": sys.executable})
    assert built.returncode == 0, built.stderr
    wheel = Path(built.stdout.strip().splitlines()[-1])
    assert wheel.name == f"punctuated-{punctuated.__version__}.{minor}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "punctuated/jars/punctuated-assembly.jar" in names
        meta = Parser().parsestr(zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    major, minor_no = minor.split(".")
    pins = [r for r in meta.get_all("Requires-Dist") if r.startswith("pyspark") and "extra" not in r]
    assert len(pins) == 1 and f"<{major}.{int(minor_no) + 1}" in pins[0] and f">={minor}." in pins[0], pins

    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120, env=_clean_env())
    py = env_dir / "bin" / "python"
    installed = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(WHEELHOUSE),
         "--find-links", str(dist), f"punctuated=={punctuated.__version__}.{minor}"],
        capture_output=True, text=True, timeout=300, env=_clean_env())
    assert installed.returncode == 0, installed.stderr
    smoke = subprocess.run(
        [str(py), "-I", str(REPO / "scripts" / "wheel_smoke.py"), str(REPO / "sql" / "auction_join.sql")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_clean_env())
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    # the fresh environment runs the pyspark of the wheelhouse (the pinned one), which is not
    # the running one when the tests run with another patch release (scripts/check-pyspark.sh)
    offered = {w.name.split("-")[1] for w in WHEELHOUSE.glob("pyspark-*.whl")}
    assert any(f"wheel smoke: ok (pyspark {v}, jar built for Spark {jar_spark_version(punctuated.jar_path())}, "
               f"minor {minor}" in smoke.stdout for v in offered if spark_minor(v) == minor), (offered, smoke.stdout)
    assert str(env_dir) in smoke.stdout  # the installed copy, not the source tree
