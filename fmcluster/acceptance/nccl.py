"""Parse one nccl-tests ``all_reduce_perf`` output (stdout, optionally with NCCL_DEBUG=INFO lines).

Standard library only: this module is shipped to the cluster with the gate job (docs/acceptance.md) and
runs on the node's system ``python3`` (3.8 or later).

The format is the one NVIDIA/nccl-tests prints (src/util.cu of v2.14-v2.19, src/common.cu before):

- device report, one line per rank: ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [<pci>] <name>``
  (writeDeviceReport) - the host names of the run;
- the table header ``#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw
  #wrong`` (writeResultHeader; ``cputime`` with -C, eight per-iteration columns per half with
  per-iteration timing, a trailing ``timestamp`` with -T; releases before ``root`` existed print no
  ``root`` column and an ``error`` column (maximum relative error, not a count) instead of ``#wrong``);
- one row per size: ``%12li  %12li  %8s  %6s  %6s`` then out-of-place and in-place ``time algbw busbw
  #wrong`` (``N/A`` when not checked) (writeBenchmarkLinePreamble / writeBenchmarkLineBody);
- the footer ``# Out of bounds values : %d OK|FAILED`` and ``# Avg bus bandwidth    : %g``
  (writeResultFooter).

Launcher prefixes are stripped: ``srun -l`` (``0: ``) and Open MPI ``--tag-output`` (``[1,0]<stdout>:``).
NCCL log lines (``<host>:<pid>:<tid> [<dev>] NCCL INFO <message>``) are kept per host: the network NCCL
chose (``Using network Socket`` / ``NET/Socket`` / ``via NET/Socket``), the libfabric provider and NIC
count aws-ofi-nccl prints (``NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)``;
``Selected Provider is efa (found 4 nics)`` before 1.14; aws/aws-ofi-nccl src/nccl_ofi_net.cpp) and
plugin initialisation failures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Bytes per element of the nccl-tests data types (src/common.cu test_typenames / wordSize).
TYPE_BYTES = {
    "int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
    "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1,
}

_PREFIX = re.compile(r"^(?:\s*\d+:\s?|\[\d+,\d+\]<std(?:out|err)>:)")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)\s+Group\s+(?P<group>\d+)\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+device\s+(?P<dev>\d+)")
_NCCL_LINE = re.compile(r"^(?P<host>[^\s:]+):\d+:\d+ \[\d+\] NCCL (?P<level>INFO|WARN) (?P<msg>.*)$")
_COLLECTIVE = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<word>OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_SOCKETS = re.compile(r"Using network Socket|NET/Socket : Using|via NET/Socket")
_PROVIDER = re.compile(r"Selected [Pp]rovider is (?P<prov>[^\s,()]+)(?:, fabric is [^()]*)? \(found (?P<nics>\d+) nics?\)")
_PLUGIN_FAILED = re.compile(
    r"NET/OFI aws-ofi-nccl initialization failed|NET/OFI No eligible providers|Failed to initialize (?:any )?NET plugin"
)


class NcclParseError(ValueError):
    """The text is not a complete all_reduce_perf output; ``str()`` says what is wrong and where."""


@dataclass(frozen=True)
class Row:
    """One table row: ``size_bytes``, element ``count`` and ``dtype``, and per half (out-of-place, in-place)
    the time (us), algbw and busbw (GB/s) and the wrong-element count (``None``: not checked, ``N/A``)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    oop_busbw_gbps: float
    ip_busbw_gbps: float
    oop_wrong: float | None
    ip_wrong: float | None
    line: int

    @property
    def busbw_gbps(self) -> float:
        """The better of the two halves: a node is judged on its best showing at a size."""
        return max(self.oop_busbw_gbps, self.ip_busbw_gbps)

    @property
    def wrong(self) -> bool:
        return bool(self.oop_wrong) or bool(self.ip_wrong)


@dataclass
class HostLog:
    """What the NCCL INFO lines of one host say (all empty when NCCL_DEBUG was not INFO)."""

    sockets: str = ""
    provider: str = ""
    nics: int | None = None
    provider_line: str = ""
    plugin_failure: str = ""


@dataclass
class NcclRun:
    """One parsed all_reduce_perf output.

    ``hosts``: host names in rank order (first appearance), from the ``# Rank`` lines; ``ranks_per_host``;
    ``rows`` by size; ``avg_busbw_gbps`` from the footer; ``out_of_bounds`` (``# Out of bounds values``);
    ``logs``: per host (``""`` for lines without a host prefix) what NCCL INFO said.
    """

    collective: str
    hosts: list[str]
    ranks_per_host: dict[str, int]
    rows: list[Row]
    avg_busbw_gbps: float
    out_of_bounds: int
    logs: dict[str, HostLog] = field(default_factory=dict)

    def row_at(self, size_bytes: int) -> Row | None:
        for r in self.rows:
            if r.size_bytes == size_bytes:
                return r
        return None

    @property
    def sizes(self) -> list[int]:
        return [r.size_bytes for r in self.rows]


def _number(text: str) -> float | None:
    if text == "N/A":
        return None
    return float(text)


def _header_columns(tokens: list[str]) -> dict[str, list[int]] | None:
    """Column indices of a result-table header line's tokens (without the leading ``#``)."""
    if len(tokens) < 8 or tokens[0] != "size" or tokens[1] != "count" or "busbw" not in tokens:
        return None
    cols: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        # "#wrong" counts wrong elements; the older "error" column is the maximum relative error of a float
        # reduction (2e-06 is normal), so it is kept apart and never read as wrong results
        name = "time" if t in ("time", "cputime") else t
        cols.setdefault(name, []).append(i)
    return cols


def _log_message(hostlog: HostLog, msg: str) -> None:
    if not hostlog.sockets and _SOCKETS.search(msg):
        hostlog.sockets = msg.strip()
    m = _PROVIDER.search(msg)
    if m:
        nics = int(m.group("nics"))
        # several ranks print it; keep the smallest count (the worst a rank of this host saw)
        if hostlog.nics is None or nics < hostlog.nics or m.group("prov") != "efa":
            hostlog.provider = m.group("prov")
            hostlog.nics = nics
            hostlog.provider_line = m.group(0)
    if not hostlog.plugin_failure and _PLUGIN_FAILED.search(msg):
        hostlog.plugin_failure = msg.strip()


def parse_all_reduce(text: str, name: str = "<output>") -> NcclRun:
    """Parse ``text`` (one all_reduce_perf run). ``name`` prefixes error messages.

    Raises:
        NcclParseError: empty text; no result table; a row that does not fit the header (truncated,
            wrong column count, a size that is not count x element size); no ``# Avg bus bandwidth`` footer
            (the run did not finish); a table without rows; more than one table.
    """
    if not text.strip():
        raise NcclParseError(f"{name}: empty file; expected an nccl-tests all_reduce_perf output")
    collective = ""
    hosts: list[str] = []
    ranks: dict[str, int] = {}
    rows: list[Row] = []
    logs: dict[str, HostLog] = {}
    cols: dict[str, list[int]] | None = None
    avg: float | None = None
    oob = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw, count=1).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        m = _NCCL_LINE.match(stripped)
        if m:
            _log_message(logs.setdefault(m.group("host"), HostLog()), m.group("msg"))
            continue
        if "NCCL INFO" in stripped or "NCCL WARN" in stripped:
            _log_message(logs.setdefault("", HostLog()), stripped)
            continue
        if stripped.startswith("#"):
            body = stripped[1:].strip()
            m = _RANK.match(stripped)
            if m:
                host = m.group("host")
                if host not in ranks:
                    hosts.append(host)
                    ranks[host] = 0
                ranks[host] += 1
                continue
            m = _COLLECTIVE.match(stripped)
            if m:
                collective = m.group("name")
                continue
            header = _header_columns(body.split())
            if header is not None:
                if cols is not None:
                    raise NcclParseError(f"{name}:{lineno}: a second result table; expected one all_reduce_perf run per file")
                cols = header
                continue
            m = _OOB.match(stripped)
            if m:
                oob = int(m.group("n"))
                continue
            m = _AVG.match(stripped)
            if m:
                try:
                    avg = float(m.group("bw"))
                except ValueError:
                    raise NcclParseError(f"{name}:{lineno}: unreadable average bus bandwidth {m.group('bw')!r}") from None
                continue
            continue
        tokens = stripped.split()
        if cols is None or avg is not None or not tokens[0].isdigit():
            continue  # program output outside the table (launcher banners, warnings)
        busbw = cols["busbw"]
        wrong = cols.get("#wrong", [])
        need = max(busbw + wrong + cols.get("error", [])) + 1
        if len(busbw) < 2 or len(tokens) < need:
            raise NcclParseError(
                f"{name}:{lineno}: row has {len(tokens)} column(s), the header needs {need}: truncated table? ({stripped[:80]!r})")
        try:
            size = int(tokens[0])
            count = int(tokens[1])
            dtype = tokens[cols["type"][0]] if "type" in cols else ""
            redop = tokens[cols["redop"][0]] if "redop" in cols else ""
            oop_bw = float(tokens[busbw[0]])
            ip_bw = float(tokens[busbw[1]])
            oop_wrong = _number(tokens[wrong[0]]) if wrong else None
            ip_wrong = _number(tokens[wrong[1]]) if len(wrong) > 1 else None
        except (ValueError, IndexError):
            raise NcclParseError(f"{name}:{lineno}: unreadable row {stripped[:80]!r}") from None
        width = TYPE_BYTES.get(dtype)
        if width is not None and size != count * width:
            raise NcclParseError(
                f"{name}:{lineno}: size {size} B is not {count} x {width} B ({dtype}): a corrupted or hand-edited table")
        rows.append(Row(size, count, dtype, redop, oop_bw, ip_bw, oop_wrong, ip_wrong, lineno))
    if cols is None:
        raise NcclParseError(f"{name}: no nccl-tests result table (no '#  size  count  type ...' header line)")
    if not rows:
        raise NcclParseError(f"{name}: the result table has no rows: truncated output or the run failed before the first size")
    if avg is None:
        raise NcclParseError(
            f"{name}: no '# Avg bus bandwidth' footer after the last row ({rows[-1].size_bytes} B): truncated output, "
            "the run did not finish")
    sizes = [r.size_bytes for r in rows]
    if len(set(sizes)) != len(sizes):
        dup = sorted({s for s in sizes if sizes.count(s) > 1})
        raise NcclParseError(f"{name}: size(s) {', '.join(map(str, dup))} appear more than once in the table")
    return NcclRun(collective, hosts, ranks, rows, avg, oob, logs)
