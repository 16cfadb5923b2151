"""The lock files agree with pyproject.toml, and the venv the tests run in holds what they lock.

pyproject.toml keeps the ranges; requirements.lock (what `make lab` installs) and
requirements-dev.lock (what `make test` installs: the dev and postgres extras too) keep the exact
versions, with hashes. `make lock` writes both again; a test here fails when someone edits one
side alone."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent.parent
LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
FIX = " (run `make lock`, then `make test`)"


@dataclass
class Pin:
    name: str
    version: str
    marker: Marker | None
    hashes: list[str] = field(default_factory=list)


def read_lock(path: Path) -> list[Pin]:
    """Each requirement of a `uv pip compile --generate-hashes` file, with its hashes."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))  # join continued lines
    pins = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        assert not line.startswith("-"), f"{path.name}: an option, not a pin: {line}"
        spec, *hashes = re.split(r"\s+--hash=", line)
        req = Requirement(spec)
        (clause,) = req.specifier  # exactly one clause: ==version
        assert clause.operator == "==", f"{path.name}: {spec} is not pinned with =="
        pins.append(Pin(canonicalize_name(req.name), clause.version, req.marker, hashes))
    return pins


def pyproject_requirements(*extras: str, runtime: bool = True) -> list[Requirement]:
    """[project.dependencies] (unless runtime=False) and the named extras, from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]] if runtime else []
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


CASES = {
    "requirements.lock": (LOCK, ()),
    "requirements-dev.lock": (DEV_LOCK, ("dev", "postgres")),
}


@pytest.mark.parametrize("lock_name", CASES)
def test_every_pin_is_exact_and_hashed(lock_name: str) -> None:
    path, _ = CASES[lock_name]
    pins = read_lock(path)
    assert len(pins) > 50, f"{lock_name} holds too few pins"
    for pin in pins:
        assert pin.hashes, f"{lock_name}: {pin.name}=={pin.version} has no --hash"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in pin.hashes), pin.name
    text = path.read_text(encoding="utf-8")
    # a lock made on one machine must install on another: no local paths or private indexes
    for local in ("file:", "/opt/", "/tmp/", "/root/", "/home/", "--index-url", "--find-links"):
        assert local not in text, f"{lock_name} names {local!r}, which another machine lacks"


@pytest.mark.parametrize("lock_name", CASES)
def test_every_pyproject_dependency_is_locked_within_its_range(lock_name: str) -> None:
    path, extras = CASES[lock_name]
    pins = read_lock(path)
    for req in pyproject_requirements(*extras):
        name = canonicalize_name(req.name)
        locked = [p for p in pins if p.name == name]
        assert locked, f"{req} (pyproject.toml) is not in {lock_name}{FIX}"
        for pin in locked:  # one pin per platform or Python fork, each inside the range
            assert req.specifier.contains(pin.version, prereleases=True), (
                f"{lock_name} pins {name}=={pin.version}, outside pyproject's {req}{FIX}"
            )
        for extra in req.extras:  # psycopg[binary] brings psycopg-binary: it is locked too
            wanted = {canonicalize_name(r.name) for r in extra_requirements(name, extra)}
            assert wanted <= {p.name for p in pins}, f"{lock_name} lacks {req}'s {wanted}{FIX}"


def extra_requirements(name: str, extra: str) -> list[Requirement]:
    """What an installed distribution's extra adds (empty when it is not installed here)."""
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for r in map(Requirement, requires):
        if r.marker and r.marker.evaluate({"extra": extra}) and not r.marker.evaluate():
            out.append(r)
    return out


def test_lab_and_test_lock_the_same_versions() -> None:
    """requirements.lock is compiled against requirements-dev.lock: no version of its own."""
    dev = {(p.name, p.version): sorted(p.hashes) for p in read_lock(DEV_LOCK)}
    for pin in read_lock(LOCK):
        assert (pin.name, pin.version) in dev, (
            f"requirements.lock pins {pin.name}=={pin.version}, requirements-dev.lock does not{FIX}"
        )
        assert sorted(pin.hashes) == dev[pin.name, pin.version], pin.name


def test_the_installed_versions_are_the_locked_ones() -> None:
    """`make test` syncs .venv to requirements-dev.lock: what runs here is what it locks."""
    wanted = [p for p in read_lock(DEV_LOCK) if p.marker is None or p.marker.evaluate()]
    postgres = tuple(
        canonicalize_name(r.name) for r in pyproject_requirements("postgres", runtime=False)
    )
    for pin in wanted:
        try:
            installed = metadata.version(pin.name)
        except metadata.PackageNotFoundError:
            # only the postgres extra (psycopg, psycopg-binary) may be missing: tests skip it
            assert pin.name.startswith(postgres), (
                f"{pin.name} is locked but not installed (run `make install-dev`)"
            )
            continue
        assert installed == pin.version, (
            f"{pin.name} {installed} is installed, requirements-dev.lock pins {pin.version}"
            " (run `make install-dev`)"
        )
