#!/usr/bin/python3
"""partial.py -- the partial allreduce on paper: time per step with heavy-tailed compute.

    perf/sim/partial.py BUILD [-p "64 1000"] [-b BYTES] [--quorum 0.9] [--steps 400]
                        [-m MODEL]... [-s key=value]...

Each rank loops: compute for a time drawn from a heavy-tailed law (lognormal, median 10 ms,
sigma 0.5, and with probability 1 % a step 5-20x longer: a page fault storm, a preempted
core, a slow disk read), then average its model of BYTES.

  synchronous  every step ends when the slowest rank has computed and the allreduce over
               all p ranks (zcoll_sim's best algorithm at p) has run;
  partial      an offer joins the round forming when it arrives (offers ordered by time,
               as the ticket counter orders them); a round is decided by its q-th offer
               and ends an allreduce over q ranks (zcoll_sim's best at q) later; each member
               then computes its next step. q = ceil(quorum * p).

The allreduce times come from the scale model (zcoll_sim ... table, the given models).
Prints a table: ranks, q, the allreduce times at p and q, mean time per step for both
and the partial's saving; and how many of a rank's offers joined a round (all of them,
by construction: conservation) and how long offers waited for their round to fill.
"""
import argparse
import heapq
import math
import random
import re
import subprocess
import sys


def best_time_us(build, models, sets, p, nbytes, k):
    """zcoll_sim's best predicted allreduce time (us) of nbytes on p ranks."""
    cmd = [f"{build}/zcoll_sim"]
    for m in models:
        cmd += ["-m", m]
    for s in sets:
        cmd += ["-s", s]
    algos = "hier rhd tree" if p > 256 else "ring hier rhd tree"  # the ring's build is O(p^2)
    cmd += ["-k", str(min(k, p)), "-p", str(p), "-b", str(nbytes), "-e", str(nbytes),
            "-A", algos, "table"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == str(p):
            times = [float(v) for v in f[2:] if re.match(r"^[0-9.]+$", v)]
            n = len(algos.split())
            return min(times[:n])
    raise RuntimeError(f"no row for p={p} in:\n{out}")


def compute_ms(rng):
    t = 10.0 * math.exp(rng.gauss(0, 0.5))
    if rng.random() < 0.01:
        t *= rng.uniform(5, 20)
    return t


def synchronous(p, steps, t_p, rng):
    clock = 0.0
    for _ in range(steps):
        clock += max(compute_ms(rng) for _ in range(p)) + t_p
    return clock / steps


def partial(p, q, steps, t_q, rng):
    """Event simulation; returns (mean ms per step per rank, mean wait for the round to
    fill in ms, offers that joined a round / offers made)."""
    offers = []  # (time, rank) heap of offers not yet placed in a round
    done = [0] * p
    for r in range(p):
        heapq.heappush(offers, (compute_ms(rng), r))
    forming, waits, placed, made = [], [], 0, p
    finish = [0.0] * p  # when each rank ended its steps-th step
    while min(done) < steps:
        t, r = heapq.heappop(offers)
        forming.append((t, r))
        if len(forming) < q:
            continue
        end = t + t_q  # decided by the q-th offer, moved among its members
        for t0, m in forming:
            waits.append(t - t0)
            done[m] += 1
            placed += 1
            if done[m] == steps:
                finish[m] = end
            heapq.heappush(offers, (end + compute_ms(rng), m))  # all go on till the last is done
            made += 1
        forming = []
    per_step = sum(f / steps for f in finish) / p
    return per_step, sum(waits) / len(waits), placed, made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("-p", default="64 1000")
    ap.add_argument("-b", type=int, default=4 << 20, help="model bytes (%(default)s: 10^6 floats)")
    ap.add_argument("-k", type=int, default=8, help="ranks per host (%(default)s)")
    ap.add_argument("--quorum", type=float, default=0.9)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-m", action="append", default=[], help="zcoll_sim model file(s)")
    ap.add_argument("-s", action="append", default=[], help="zcoll_sim -s settings")
    o = ap.parse_args()
    print(f"# {o.b} bytes, {o.k} ranks per host, compute lognormal(10 ms, 0.5) with 1 % "
          f"5-20x stalls, {o.steps} steps, quorum {o.quorum:.0%}")
    print("#  ranks     q   allreduce p (ms)   q (ms)   sync ms/step   partial ms/step   saved"
          "   fill wait (ms)")
    for p in map(int, o.p.split()):
        q = max(1, math.ceil(o.quorum * p))
        t_p = best_time_us(o.build, o.m, o.s, p, o.b, o.k) / 1000
        t_q = best_time_us(o.build, o.m, o.s, q, o.b, o.k) / 1000
        sync = synchronous(p, o.steps, t_p, random.Random(o.seed))
        part, wait, placed, made = partial(p, q, o.steps, t_q, random.Random(o.seed))
        print(f"{p:8d} {q:5d} {t_p:17.2f} {t_q:9.2f} {sync:14.2f} {part:17.2f} "
              f"{1 - part / sync:7.0%} {wait:15.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
