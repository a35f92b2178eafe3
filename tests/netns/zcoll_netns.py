#!/usr/bin/python3
"""zcoll_netns -- several hosts on one machine, made of Linux namespaces, for zcoll jobs.

An emulated cluster of H hosts is
  - one network namespace per host, its eth0 = 10.231.0.<h+1>/24, the other end of the veth
    on a bridge in a namespace of its own ("fabric"): nothing is added to the machine's own
    network namespace, and no packet can leave the namespaces made here;
  - per job, one UTS + IPC + PID + mount namespace per host (hostname zcn-h<h>, its own /proc
    and /dev/shm), held by a `sleep` that is PID 1 there. Hosts share no System V or POSIX
    shared memory, as real ones do not: UCX's own reachability checks (the IPC and PID
    namespaces in its sysv/posix/cma addresses) then keep its shared-memory transports
    between the ranks of one host. All ranks of a host enter that host's namespaces, so
    they share a PID namespace and are one host to zcoll (lib/base/node.c: boot id + PID namespace
    + uid), while ranks of different hosts are not. Killing PID 1 at the end of the job kills
    whatever a rank left behind, timeouts included.

Rank 0's rendezvous is ZCOLL_ROOT=10.231.0.1:29500 (rank 0 is always on host 0): the host's
network namespace belongs to this cluster alone, so no other process can race us for the
port, which is what ZCOLL_ROOT_FD avoids on a shared loopback.

Namespace names carry the creating PID (zcn<pid>x<random>-...), so two runs never clash. If the
harness is SIGKILLed (a CTest timeout), its processes die with it (PR_SET_PDEATHSIG on each
host's unshare, whose --kill-child takes that host's PID namespace along) and the next run
deletes the network namespaces it left (their PID is gone).

Library:  with Cluster(3) as c: res = c.run([2, 3, 1], argv, env={...}, timeout=60)
          res.check(); res.ranks[r].stdout / .stderr / .host; res.tagged()
CLI:      zcoll_netns.py --hosts 2,3,1 [--timeout S] [--rate 1gbit] [-x VAR=VAL]... -- prog args...
Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), ip (iproute2), unshare and nsenter (util-linux).
"""

import argparse
import ctypes
import os
import re
import secrets
import selectors
import signal
import subprocess
import sys
import time

PREFIX = "zcn"
SUBNET = "10.231.0"
ROOT_PORT = 29500
# A rank that failed takes the others down within their ZCOLL_TIMEOUT at worst; give them this
# long to report it themselves before they are killed.
FAIL_GRACE_S = 10.0


def _die_with_parent():
    """preexec_fn: SIGKILL when the harness dies, even by SIGKILL, so nothing outlives it."""
    if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0:  # PR_SET_PDEATHSIG
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def _ip(*args):
    subprocess.run(["ip", *args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def available():
    """(True, "") if this process can make the namespaces, else (False, why)."""
    if os.geteuid() != 0:
        return False, "needs root (network, PID and mount namespaces)"
    for tool in ("ip", "unshare", "nsenter"):
        path = os.environ.get("PATH", "/usr/bin").split(":") + ["/usr/sbin", "/sbin"]
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in path):
            return False, f"{tool} is not installed"
    try:
        subprocess.run(["unshare", "--uts", "--pid", "--fork", "--mount-proc", "true"],
                       check=True, capture_output=True, timeout=10)
    except (subprocess.SubprocessError, OSError) as e:
        err = getattr(e, "stderr", b"") or b""
        why = err.decode().strip() or str(e)
        return False, f"unshare --uts --pid --mount-proc does not work here: {why}"
    return True, ""


def sweep_stale():
    """Deletes namespaces left by runs whose process is gone (a SIGKILLed test, say)."""
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return
    for name in names:
        m = re.match(PREFIX + r"(\d+)x[0-9a-f]+-", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


class RankResult:
    def __init__(self, rank, host, local_rank):
        self.rank, self.host, self.local_rank = rank, host, local_rank
        self.returncode = None  # negative: killed by that signal, as subprocess reports it
        self.stdout = self.stderr = ""

    def lines(self):
        """stdout then stderr, line by line (zcoll's log goes to stderr)."""
        return self.stdout.splitlines() + self.stderr.splitlines()


class JobResult:
    def __init__(self, layout, argv, ranks, timed_out, elapsed):
        self.layout, self.argv, self.ranks = layout, argv, ranks
        self.timed_out, self.elapsed = timed_out, elapsed

    @property
    def ok(self):
        return not self.timed_out and all(r.returncode == 0 for r in self.ranks)

    def host_of(self, rank):
        return self.ranks[rank].host

    def tagged(self):
        """Every rank's output, each line prefixed with [h<host> r<rank>] and the stream."""
        out = []
        for r in self.ranks:
            tag = f"[h{r.host} r{r.rank}]"
            out += [f"{tag} {line}" for line in r.stdout.splitlines()]
            out += [f"{tag}! {line}" for line in r.stderr.splitlines()]
        return "\n".join(out)

    def summary(self):
        st = ", ".join(f"r{r.rank}@h{r.host}={r.returncode}" for r in self.ranks)
        return (f"job {self.layout} {' '.join(self.argv)}: "
                f"{'TIMED OUT, ' if self.timed_out else ''}exit statuses {st}, "
                f"{self.elapsed:.1f} s")

    def check(self):
        """Raises AssertionError (with every rank's output) unless every rank exited 0."""
        if not self.ok:
            raise AssertionError(self.summary() + "\n" + self.tagged())
        return self

    def grep(self, pattern):
        """[(rank, match)] for every line of every rank that matches `pattern`."""
        rx = re.compile(pattern)
        return [(r.rank, m) for r in self.ranks for line in r.lines()
                for m in [rx.search(line)] if m]


def _ranks(text):
    """[0, 1, 2, 5] from "0-2,5"."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def transport_pairs(result, pattern=r" rank (\d+) of \d+ ready: (.*)"):
    """{(from, to): transport} from each rank's ZCOLL_LOG=info init line
    ("rank 1 of 4 ready: shm to 0,2; ucx to 3 on mlx5_0:1; chunk 256 KiB, depth 8; ...")."""
    pairs = {}
    for _, m in result.grep(pattern):
        for seg in m.group(2).split("; "):
            tl = re.fullmatch(r"(\S+) to ([\d,-]+)( on \S+)?", seg)
            if tl:
                pairs.update({(int(m.group(1)), q): tl.group(1) for q in _ranks(tl.group(2))})
    return pairs


class Cluster:
    """H emulated hosts; use as a context manager so that they are always torn down."""

    def __init__(self, hosts, rate=None):
        """rate: each host's link, as tc(8) writes a rate ("1gbit"): what it sends is
        shaped to it (a token bucket on its eth0), a NIC slower than this machine's memory,
        where what crosses hosts is what counts. None: as fast as the CPU moves it."""
        if not 1 <= hosts <= 250:
            raise ValueError("hosts must be 1..250")
        self.hosts = hosts
        self.rate = rate
        self.tag = f"{PREFIX}{os.getpid()}x{secrets.token_hex(3)}"
        self.fabric = f"{self.tag}-fab"
        self.netns = [f"{self.tag}-h{h}" for h in range(hosts)]
        self._made = []

    def addr(self, host):
        return f"{SUBNET}.{host + 1}"

    def __enter__(self):
        sweep_stale()
        try:
            self._make(self.fabric)
            _ip("-n", self.fabric, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.fabric, "link", "set", "br0", "up")
            for h, ns in enumerate(self.netns):
                self._make(ns)
                _ip("-n", self.fabric, "link", "add", f"h{h}", "type", "veth",
                    "peer", "name", "eth0", "netns", ns)
                _ip("-n", self.fabric, "link", "set", f"h{h}", "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{self.addr(h)}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                if self.rate:
                    subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", "tbf",
                                    "rate", self.rate, "burst", "256kb", "latency", "100ms"],
                                   check=True, stdin=subprocess.DEVNULL, capture_output=True)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _make(self, ns):
        _ip("netns", "add", ns)
        self._made.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")

    def close(self):
        # Deleting a network namespace takes its veth ends (and their peers) with it.
        while self._made:
            subprocess.run(["ip", "netns", "del", self._made.pop()], capture_output=True)

    def run(self, layout, argv, env=None, timeout=60.0, log=None):
        """Runs argv as len(layout) hosts x layout[h] ranks (ranks numbered host by host).

        env: extra variables for every rank; log: ZCOLL_LOG level for every rank. Returns a
        JobResult; never raises for a failed or timed-out job (call .check())."""
        if len(layout) > self.hosts or any(n < 0 for n in layout) or sum(layout) < 1:
            raise ValueError(f"layout {layout} does not fit {self.hosts} hosts")
        if layout[0] < 1:
            raise ValueError("rank 0 lives on host 0: layout[0] must be >= 1")
        size = sum(layout)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("ZCOLL_") or k in ("ZCOLL_TEST_BIN_DIR",)}
        base.update({"ZCOLL_SIZE": str(size), "ZCOLL_ROOT": f"{self.addr(0)}:{ROOT_PORT}",
                     "ZCOLL_JOB_KEY": secrets.token_hex(16)})
        if log:
            base["ZCOLL_LOG"] = log
        base.update(env or {})
        holders, procs, ranks, streams = [], [], [], []
        t0 = time.monotonic()
        sel = selectors.DefaultSelector()
        try:
            for h, n in enumerate(layout):
                holders.append(self._hold(h) if n else None)
            for h, n in enumerate(layout):
                for i in range(n):
                    rr = RankResult(len(ranks), h, i)
                    e = dict(base, ZCOLL_RANK=str(rr.rank), ZCOLL_LOCAL_RANK=str(i),
                             ZCOLL_LOCAL_SIZE=str(n))
                    p = subprocess.Popen(
                        ["nsenter", f"--target={holders[h][1]}", "--net", "--uts", "--ipc",
                         "--pid", "--mount", "--", *argv],
                        env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, cwd="/", preexec_fn=_die_with_parent)
                    procs.append(p)
                    ranks.append(rr)
                    for name in ("stdout", "stderr"):
                        streams.append((rr, name, []))
                        sel.register(getattr(p, name), selectors.EVENT_READ, streams[-1][2])
            timed_out = self._collect(sel, procs, ranks, t0 + timeout)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for hd in holders:
                if hd:
                    self._release(hd)
            for p in procs:
                p.wait()
                p.stdout.close()
                p.stderr.close()
            sel.close()
        for p, rr in zip(procs, ranks):
            rr.returncode = p.returncode
        for rr, name, chunks in streams:  # what a killed rank wrote is kept too
            setattr(rr, name, b"".join(chunks).decode(errors="replace"))
        return JobResult(list(layout), list(argv), ranks, timed_out, time.monotonic() - t0)

    def _hold(self, h):
        """Starts host h's UTS+IPC+PID+mount namespaces for a job: (unshare, PID 1 there)."""
        p = subprocess.Popen(
            ["ip", "netns", "exec", self.netns[h], "unshare", "--uts", "--ipc", "--pid",
             "--fork", "--mount-proc", "--kill-child", "sh", "-c",
             f"mount -t tmpfs -o mode=1777 zcn-shm /dev/shm && hostname zcn-h{h} && "
             "echo ready && exec sleep 1d"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, preexec_fn=_die_with_parent)
        try:
            if p.stdout.readline() != b"ready\n":
                raise RuntimeError(f"host {h}: could not make its namespaces")
            # `ip netns exec` execs unshare, whose only child is PID 1 of the new namespace.
            with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                inner = int(f.read().split()[0])
        except BaseException:
            p.kill()
            p.wait()
            raise
        finally:
            p.stdout.close()
        return p, inner

    @staticmethod
    def _release(hd):
        p, inner = hd
        try:
            os.kill(inner, signal.SIGKILL)  # PID 1: the kernel kills the namespace with it
        except ProcessLookupError:
            pass
        p.kill()
        p.wait()

    @staticmethod
    def _collect(sel, procs, ranks, deadline):
        """Reads every rank's output until all have exited; True if the deadline passed."""
        first_fail = None
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                return True
            if first_fail is None and any(p.poll() not in (None, 0) for p in procs):
                first_fail = now
                deadline = min(deadline, now + FAIL_GRACE_S)
            for key, _ in sel.select(timeout=min(0.5, deadline - now)):
                data = os.read(key.fileobj.fileno(), 65536)
                if data:
                    key.data.append(data)
                else:
                    sel.unregister(key.fileobj)
        while any(p.poll() is None for p in procs):
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.01)
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 usage="%(prog)s --hosts N,N,... [options] -- prog [args...]")
    ap.add_argument("--hosts", required=True,
                    help="ranks per host, comma-separated (2,3,1: 3 hosts, 6 ranks)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds (default 120)")
    ap.add_argument("-x", action="append", default=[], metavar="VAR=VAL",
                    help="set VAR in every rank")
    ap.add_argument("--log", help="ZCOLL_LOG for every rank")
    ap.add_argument("--rate", help="each host's link rate, as tc writes it (1gbit); default: "
                    "unshaped")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not argv:
        ap.error("no program to run")
    layout = [int(n) for n in a.hosts.split(",")]
    env = dict(kv.split("=", 1) for kv in a.x)
    ok, why = available()
    if not ok:
        print(f"zcoll_netns: {why}", file=sys.stderr)
        return 1
    # SIGTERM/SIGHUP end the run through the finally clauses, which tear everything down.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    with Cluster(len(layout), rate=a.rate) as c:
        res = c.run(layout, argv, env=env, timeout=a.timeout, log=a.log)
    print(res.tagged())
    print("zcoll_netns: " + res.summary(), file=sys.stderr)
    if res.timed_out:
        return 124
    bad = [r.returncode for r in res.ranks if r.returncode != 0]
    return 0 if not bad else (bad[0] if bad[0] > 0 else 128 - bad[0])


if __name__ == "__main__":
    sys.exit(main())
