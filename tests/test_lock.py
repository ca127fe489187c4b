"""The lock files (scripts/lock): requirements.lock (what CI tests: the base
dependencies, the test and observability extras) and requirements-prod.lock (what
the image runs: the base dependencies and the observability extra) pin every
requirement of pyproject.toml to a version inside its range, each pinned line has
sha256 hashes, and the image's lock is the CI lock's subset, pin for pin."""
import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def read_lock(path: Path) -> dict[str, list[tuple[Requirement, list[str]]]]:
    """``{canonical name: [(the pinned requirement, its hashes), ...]}`` of a lock
    file as uv and pip-compile write it (a universal lock may pin one name twice,
    under exclusive markers). Raises AssertionError on a line that is not ``name==v``."""
    entries: dict[str, list[tuple[Requirement, list[str]]]] = {}
    for logical in path.read_text().replace("\\\n", " ").splitlines():
        line = logical.split("#", 1)[0].strip()
        if not line:
            continue
        spec = line.split(" --hash=", 1)[0].strip()
        req = Requirement(spec)
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", line
        entries.setdefault(canonicalize_name(req.name), []).append((req, HASH.findall(line)))
    return entries


def pinned(entries, name: str, extra_env=None) -> str:
    """The one version ``entries`` pin ``name`` to on this machine's environment."""
    env = {**default_environment(), "extra": "", **(extra_env or {})}
    versions = [next(iter(req.specifier)).version for req, _ in entries.get(name, [])
                if req.marker is None or req.marker.evaluate(env)]
    assert len(versions) == 1, f"{name}: pinned {versions or 'nowhere'}"
    return versions[0]


def requirements(*extras: str) -> list[Requirement]:
    """pyproject.toml's base requirements and those of ``extras``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = [*project["dependencies"]]
    for extra in extras:
        listed += project["optional-dependencies"][extra]
    return [Requirement(text) for text in listed]


def check_lock(lock: Path, *extras: str) -> dict:
    """``read_lock(lock)`` after asserting it pins each requirement of pyproject.toml
    (base and ``extras``) inside its range, and every pin has a hash."""
    entries = read_lock(lock)
    for req in requirements(*extras):
        version = pinned(entries, canonicalize_name(req.name))
        assert req.specifier.contains(version, prereleases=True), \
            f"{lock.name}: {req.name}=={version} is outside pyproject.toml's {req}"
    for name, pins in entries.items():
        for _, hashes in pins:
            assert hashes, f"{lock.name}: {name} has no --hash"
    return entries


def test_the_ci_lock_satisfies_pyproject_with_hashes():
    entries = check_lock(ROOT / "requirements.lock", "test", "observability")
    # the extras pyproject asks of a dependency are pinned too (celery[redis])
    assert pinned(entries, "redis") and pinned(entries, "psycopg-binary")


def test_the_image_lock_satisfies_pyproject_and_pins_what_ci_tested():
    prod = check_lock(ROOT / "requirements-prod.lock", "observability")
    ci = read_lock(ROOT / "requirements.lock")
    for name, pins in prod.items():
        assert [(str(r), sorted(h)) for r, h in pins] == \
            [(str(r), sorted(h)) for r, h in ci[name]], name
    # no test tool in the image
    assert not {"pytest", "playwright", "ruff", "schemathesis", "hypothesis"} & set(prod)


def test_a_pin_outside_a_range_or_without_a_hash_fails(tmp_path):
    real = (ROOT / "requirements-prod.lock").read_text()
    django = re.search(r"^django==(\S+)", real, re.M)
    old = tmp_path / "old.lock"
    old.write_text(real.replace(django.group(0), "django==5.1.4"))
    with pytest.raises(AssertionError, match=r"Django==5\.1\.4 is outside .*Django<5\.3,>=5\.2"):
        check_lock(old, "observability")
    unhashed = tmp_path / "unhashed.lock"
    unhashed.write_text(re.sub(r"(?m)^(whitenoise==\S+) \\\n(\s+--hash=\S+ \\\n)*\s+--hash=\S+",
                               r"\1", real))
    with pytest.raises(AssertionError, match="whitenoise has no --hash"):
        check_lock(unhashed, "observability")
