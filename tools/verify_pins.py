"""Resolve every pin of the metrics layer on the internet (``make verify-pins``; not part of CI).

For each pin in fmcluster/features/observability/pins.py:
- archives: HTTP HEAD on the download URL of both architectures, and the pinned sha256 equals the one in the
  upstream checksum list (``sha256sums.txt``, Grafana's ``.sha256`` files);
- the Slurm exporter: HTTP HEAD on its release archives (both architectures) and checksum list (the names are
  GoReleaser's defaults, unverified offline), ``git ls-remote`` resolves the tag to the pinned commit, and every metric name in
  ``metrics.SLURM_EXPORTER_SOURCES`` is on the recorded line of the exporter's source at that commit;
- repository packages: HTTP HEAD on the release page (the package version itself is resolved on the node,
  against NVIDIA's signed repository).

Exit 0 when everything resolves, 1 otherwise, 2 on bad usage. Uses only the standard library and git.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

from fmcluster.features.observability import pins
from fmcluster.features.observability.render_metrics import SLURM_EXPORTER_SOURCES

TIMEOUT_S = 30


@dataclass(frozen=True)
class Check:
    """One thing to resolve: ``kind`` head | sha256 | tag | source-line; ``target`` URL or repository;
    ``expect`` the pinned value (sha256, commit, metric name) or ""."""

    kind: str
    target: str
    expect: str = ""
    detail: str = ""


def _raw_source(path: str) -> str:
    repo = pins.SLURM_EXPORTER.repository.removeprefix("https://github.com/").removesuffix(".git")
    return f"https://raw.githubusercontent.com/{repo}/{pins.SLURM_EXPORTER.commit}/{path}"


def checks() -> list[Check]:
    """Every check, offline (tests/features/observability/test_observability_pins.py asserts that it covers every pin)."""
    out: list[Check] = []
    for pin in pins.ALL_PINS:
        out.append(Check("head", pin.release_page))
        if isinstance(pin, pins.Archive):
            for arch in pins.ARCHES:
                url = pin.url_for(arch)
                out.append(Check("head", url))
                out.append(Check("sha256", url, pin.sha256[arch], pin.checksums_url.format(arch=arch)))
        elif isinstance(pin, pins.Release):
            out.append(Check("tag", pin.repository, pin.commit, pin.tag))
            out += [Check("head", pin.url_for(arch)) for arch in pins.ARCHES]
            out.append(Check("head", pin.checksums_url))
    for metric, (path, line) in SLURM_EXPORTER_SOURCES.items():
        out.append(Check("source-line", _raw_source(path), metric, str(line)))
    return out


def _get(url: str, method: str = "GET") -> bytes:
    req = urllib.request.Request(url, method=method, headers={"User-Agent": "fmcluster-verify-pins"})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:  # noqa: S310 (https URLs from pins.py)
        return resp.read() if method == "GET" else b""


def _published_sha256(url: str, checksums_url: str) -> str:
    name = url.rsplit("/", 1)[1]
    text = _get(checksums_url).decode()
    if checksums_url.startswith("https://go.dev/dl/"):
        for release in json.loads(text):
            for f in release.get("files", []):
                if f.get("filename") == name:
                    return str(f["sha256"])
        return ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 1 and checksums_url.endswith(".sha256"):
            return parts[0]
        if len(parts) >= 2 and parts[1].lstrip("*") == name:
            return parts[0]
    return ""


def run(check: Check) -> str:
    """"" when the check passes, else what is wrong."""
    try:
        if check.kind == "head":
            _get(check.target, "HEAD")
            return ""
        if check.kind == "sha256":
            published = _published_sha256(check.target, check.detail)
            return "" if published == check.expect else f"published sha256 {published or 'not found'}, pinned {check.expect}"
        if check.kind == "tag":
            res = subprocess.run(
                ["git", "ls-remote", check.target, f"refs/tags/{check.detail}", f"refs/tags/{check.detail}^{{}}"],
                capture_output=True, text=True, timeout=TIMEOUT_S,
            )
            commits = {line.split()[0] for line in res.stdout.splitlines()}
            return "" if check.expect in commits else f"tag {check.detail} is {sorted(commits) or 'missing'}, pinned {check.expect}"
        if check.kind == "source-line":
            lines = _get(check.target).decode().splitlines()
            n = int(check.detail)
            ok = n <= len(lines) and f'"{check.expect}"' in lines[n - 1]
            return "" if ok else f"{check.expect!r} is not on line {n}"
    except (urllib.error.URLError, OSError, subprocess.SubprocessError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return f"unknown check kind {check.kind!r}"


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m tools.verify_pins   (no arguments; needs internet)", file=sys.stderr)
        return 2
    failures = 0
    for check, problem in ((c, run(c)) for c in checks()):
        label = f"{check.kind:<11} {check.target}" + (f" [{check.expect}]" if check.expect else "")
        print(("FAIL " if problem else "ok   ") + label + (f": {problem}" if problem else ""))
        failures += bool(problem)
    print(f"{failures} of {len(checks())} checks failed" if failures else f"all {len(checks())} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
