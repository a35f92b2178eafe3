/*
 * selftest.c -- closed forms the scale model must reproduce (ctest: sim_selftest).
 *
 * Each check isolates one term of the model, so that a wrong event order, a lost piece
 * or a miscounted level shows as a number that differs from the formula.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "sim.h"

int zsim_selftest(void);

static int failures;

static void expect(int ok, const char *what, double got, double want) {
  if (!ok) failures++;
  printf("%s %-58s got %.6g want %.6g\n", ok ? "ok  " : "FAIL", what, got, want);
}

static int close_to(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

static struct zsim_result run(const struct zsim_model *m, const char *algo, int p, int k,
                              size_t bytes, size_t chunk, int arity) {
  struct zsim_job job = {zsim_algo_find(algo), p, k, bytes / 4, 4, chunk, 8, arity};
  struct zsim_result r;
  memset(&r, 0, sizeof(r));
  if (zsim_run(m, &job, &r)) {
    failures++;
    printf("FAIL %s p=%d did not run\n", algo, p);
  }
  return r;
}

int zsim_selftest(void) {
  struct zsim_model bw, lat;
  memset(&bw, 0, sizeof(bw));
  bw.net.beta = 1e-9; /* 1 ns per byte, nothing else costs: pure bandwidth */
  memset(&lat, 0, sizeof(lat));
  lat.net.alpha = 1e-6; /* 1 us per message, nothing else: pure latency */
  char what[128];

  /* Ring: every rank puts 2(p-1)/p of the vector, and with small chunks the time is
   * that over the link plus a pipeline fill of a chunk per step. */
  for (int p = 2; p <= 16; p *= 2) {
    size_t n = (size_t)8 << 20, chunk = 16 << 10;
    struct zsim_result r = run(&bw, "ring", p, 1, n, chunk, 4);
    double want = 2.0 * (p - 1) / p * (double)n;
    snprintf(what, sizeof(what), "ring p=%d bytes put per rank = 2(p-1)/p n", p);
    expect(close_to(r.max_sent, want, 1e-12), what, r.max_sent, want);
    double t = want * 1e-9, fill = 2.0 * (p - 1) * (double)chunk * 1e-9;
    snprintf(what, sizeof(what), "ring p=%d time in [2(p-1)/p n b, + 2(p-1) chunks]", p);
    expect(r.time >= t * (1 - 1e-9) && r.time <= t + fill, what, r.time, t);
  }
  /* Recursive halving-doubling moves what the ring moves (p a power of two). */
  {
    struct zsim_result r = run(&bw, "rhd", 8, 1, 8 << 20, 16 << 10, 4);
    double want = 2.0 * 7 / 8 * (8 << 20);
    expect(close_to(r.max_sent, want, 1e-12), "rhd p=8 bytes put per rank = 2(p-1)/p n", r.max_sent,
           want);
  }
  /* Butterfly, 8 bytes, latency only: log2 p steps of one alpha. */
  for (int p = 2; p <= 1024; p *= 4) {
    struct zsim_result r = run(&lat, "butterfly", p, 1, 8, 256 << 10, 4);
    double want = log2(p) * 1e-6;
    snprintf(what, sizeof(what), "butterfly p=%d 8 B latency = log2(p) alpha", p);
    expect(close_to(r.time, want, 1e-9), what, r.time, want);
  }
  /* k-nomial tree, 8 bytes, latency only: up and down its height, which is the most
   * non-zero base-k digits of any rank below p (a rank's parent clears one digit): at
   * most ceil(log_k p), and less where p is not a power of k (1000 in base 2: 9, not 10). */
  for (int a = 2; a <= 16; a++) {
    int p = 1000, height = 0;
    for (int q = 0; q < p; q++) {
      int d = 0;
      for (int x = q; x; x /= a) d += x % a != 0;
      if (d > height) height = d;
    }
    struct zsim_result r = run(&lat, "tree", p, 1, 8, 256 << 10, a);
    double want = 2.0 * height * 1e-6;
    snprintf(what, sizeof(what), "tree p=%d arity %d 8 B = 2 height alpha", p, a);
    expect(close_to(r.time, want, 1e-9), what, r.time, want);
  }
  /* Tree, large vector, bandwidth only: the root's NIC takes in (k-1) vectors per level
   * it has children on, so that bounds the time from below. Pipelining overlaps the
   * reduction with the broadcast: without it (each phase done before the next) the time
   * would be at least twice the bound, so 1.5x of it says the chunks do stream. */
  for (int a = 2; a <= 8; a *= 2) {
    int p = 64, levels = 0;
    for (long long s = 1; s < p; s *= a) levels++;
    size_t n = 4 << 20;
    struct zsim_result r = run(&bw, "tree", p, 1, n, 64 << 10, a);
    double bound = (double)(a - 1) * levels * (double)n * 1e-9;
    snprintf(what, sizeof(what), "tree p=%d arity %d time in [root's (k-1)L n b, x1.5]", p, a);
    expect(r.time >= bound * (1 - 1e-9) && r.time <= 1.5 * bound, what, r.time, bound);
  }
  /* Ring, 8 bytes, 8 ranks per host: most blocks are empty, yet each is still a put, so
   * the rank that sends across hosts posts 2(p-1) puts one after another and that is
   * with the receives it must consume, 2(p-1)(o_net + o_recv), is the time: linear in p.
   * Its left neighbour, on shm, keeps it busy with arrivals: a model that served them
   * all before the forward (no step order) grew as p^2 here (0.07 s at p = 512). */
  {
    struct zsim_model post;
    memset(&post, 0, sizeof(post));
    post.net.o = 1e-6;    /* 1 us to post an inter-host put */
    post.shm.o = 0.05e-6; /* the shm neighbour sends faster than ... */
    post.o_recv = 0.2e-6; /* ... a piece is consumed: arrivals queue up */
    for (int p = 64; p <= 512; p *= 8) {
      struct zsim_result r = run(&post, "ring", p, 8, 8, 256 << 10, 4);
      double want = 2.0 * (p - 1) * (post.net.o + post.o_recv);
      snprintf(what, sizeof(what), "ring p=%d k=8 8 B = 2(p-1)(o_net + o_recv), 2 %%", p);
      expect(close_to(r.time, want, 0.02), what, r.time, want);
    }
  }
  /* Bytes between hosts, 2 hosts x 2 ranks (zcoll_perf's "Bytes sent" under
   * ZCOLL_TEST_SPLIT_NODES=2,2): the ring's two crossing links carry 2(p-1)/p n each, 3n;
   * hier's slice owners each ring half the vector across, 2n, the least possible. The
   * simulated puts must match what the schedules say (zsim_traffic). */
  {
    const char *names[] = {"ring", "hier"};
    double want[] = {3.0 * (8 << 20), 2.0 * (8 << 20)};
    for (int i = 0; i < 2; i++) {
      struct zsim_result r = run(&bw, names[i], 4, 2, 8 << 20, 256 << 10, 4);
      snprintf(what, sizeof(what), "%s p=4 k=2 bytes between hosts", names[i]);
      expect(r.net_bytes == want[i], what, r.net_bytes, want[i]);
    }
  }
  /* hier at 8 ranks per host: each host's NIC sends 2(H-1)/H of the vector, its K owners
   * sharing it, so with only bandwidth costing the time is at least that on one NIC. */
  {
    struct zsim_result r = run(&bw, "hier", 64, 8, 8 << 20, 64 << 10, 4);
    double want = 64 * 2.0 * 7 / 8 * (1 << 20), nic = 2.0 * 7 / 8 * (8 << 20) * 1e-9;
    expect(r.net_bytes == want, "hier p=64 k=8 bytes between hosts = 2(H-1)/H n per host",
           r.net_bytes / 8, want / 8);
    expect(r.time >= nic * (1 - 1e-9) && r.time <= 1.5 * nic,
           "hier p=64 k=8 time in [one NIC's 2(H-1)/H n b, x1.5]", r.time, nic);
  }
  /* Back-to-back calls (zcoll_perf -z 1's loop), latency only: the ring (every block
   * non-empty) is in lockstep, and a tree's root cannot start call c+1 before its
   * deepest leaf got call c and sent up again, so both take per call what one call alone
   * takes -- a call that began before the last one returned would show as less. */
  for (int t = 0; t < 2; t++) {
    const char *name = t ? "tree" : "ring";
    struct zsim_job job = {zcoll__algo_find(name), 64, 1, 1024, 4, 256 << 10, 8, 2, 6};
    struct zsim_result one = run(&lat, name, 64, 1, 4096, 256 << 10, 2), loop;
    zsim_run(&lat, &job, &loop);
    snprintf(what, sizeof(what), "%s p=64 4 KiB, 6 back-to-back calls: per call = one", name);
    expect(close_to(loop.time, one.time, 1e-9), what, loop.time, one.time);
  }
  /* Every algorithm finishes at awkward sizes and counts (no deadlock, nothing lost). */
  struct zsim_model mix;
  zsim_model_default(&mix);
  for (int a = 0; a < zcoll__nalgos; a++)
    for (int p = 1; p <= 13; p += 3) {
      struct zsim_result r = run(&mix, zcoll__algos[a]->name, p, 2, 300 << 10, 64 << 10, 3);
      snprintf(what, sizeof(what), "%s p=%d k=2 300 KiB finishes", zcoll__algos[a]->name, p);
      expect(r.time > 0 || p == 1, what, r.time, 0);
      struct zsim_job job = {a, p, 2, (300 << 10) / 4, 4, 64 << 10, 8, 3};
      double net = -1, shm = -1;
      zsim_traffic(&job, &net, &shm);
      snprintf(what, sizeof(what), "%s p=%d k=2 puts = schedule's bytes", zcoll__algos[a]->name, p);
      expect(net == r.net_bytes && shm == r.shm_bytes, what, r.net_bytes + r.shm_bytes, net + shm);
    }
  /* The exchanges: each finishes at awkward p and puts what its schedule says; pairwise
   * alltoall puts (p-1) blocks per rank, a direct gather one block per non-root, a direct
   * scatter (p-1) blocks from the root. */
  static const char *const xchg[] = {"alltoall:pairwise", "alltoall:bruck",   "gather:binomial",
                                     "gather:direct",     "scatter:binomial", "scatter:direct"};
  for (size_t x = 0; x < sizeof(xchg) / sizeof(xchg[0]); x++)
    for (int p = 2; p <= 14; p += 3) {
      const size_t block = 24 << 10, n = (size_t)p * block;
      struct zsim_result r = run(&mix, xchg[x], p, 2, n, 16 << 10, 3);
      snprintf(what, sizeof(what), "%s p=%d k=2 %zu KiB a block finishes", xchg[x], p, block >> 10);
      expect(r.time > 0, what, r.time, 0);
      struct zsim_job job = {zsim_algo_find(xchg[x]), p, 2, n / 4, 4, 16 << 10, 8, 3};
      double net = -1, shm = -1;
      zsim_traffic(&job, &net, &shm);
      snprintf(what, sizeof(what), "%s p=%d k=2 puts = schedule's bytes", xchg[x], p);
      expect(net == r.net_bytes && shm == r.shm_bytes, what, r.net_bytes + r.shm_bytes, net + shm);
      double want = -1;
      if (!strcmp(xchg[x], "alltoall:pairwise") || !strcmp(xchg[x], "scatter:direct"))
        want = (double)(p - 1) * (double)block;
      else if (!strcmp(xchg[x], "gather:direct"))
        want = (double)block;
      if (want < 0) continue;
      r = run(&bw, xchg[x], p, 1, n, 16 << 10, 4);
      snprintf(what, sizeof(what), "%s p=%d the most bytes a rank puts", xchg[x], p);
      expect(close_to(r.max_sent, want, 1e-12), what, r.max_sent, want);
    }
  /* The cache terms scale the per-byte CPU costs and nothing else: with only those
   * costing, a working set far past the LLC takes mem times as long, and one far inside
   * a core's L2 c2c times as long, as the same job with the terms off. */
  {
    struct zsim_model cpu;
    memset(&cpu, 0, sizeof(cpu));
    cpu.shm.beta = cpu.gamma = cpu.copy = 1e-10;
    struct zsim_result base = run(&cpu, "ring", 4, 4, 8 << 20, 128 << 10, 4);
    struct zsim_model far = cpu, near = cpu;
    far.llc = 1, far.mem = 3;     /* every byte from memory */
    near.l2 = 1e12, near.c2c = 2; /* every byte from another core's L2 */
    struct zsim_result rf = run(&far, "ring", 4, 4, 8 << 20, 128 << 10, 4);
    struct zsim_result rn = run(&near, "ring", 4, 4, 8 << 20, 128 << 10, 4);
    expect(close_to(rf.time, 3 * base.time, 1e-6), "ring p=4 k=4 8 MiB, W >> llc: time x mem",
           rf.time, 3 * base.time);
    expect(close_to(rn.time, 2 * base.time, 1e-6), "ring p=4 k=4 8 MiB, W << l2: time x c2c",
           rn.time, 2 * base.time);
  }
  /* Oversubscription: at p <= cores nothing changes. At p = 8 on 2 cores with only the
   * turn costing, each of the ring's 2(p-1) = 14 dependent steps waits for a core to
   * come round to its rank: at least one turn, and on average not more than the p/cores
   * turns of a full round and one more. */
  {
    struct zsim_model os = mix;
    os.cores = 2, os.sw = 1e-6, os.slice = 750e-6, os.sleep = 2e-3;
    struct zsim_result a = run(&mix, "ring", 2, 2, 32 << 10, 128 << 10, 4);
    struct zsim_result b = run(&os, "ring", 2, 2, 32 << 10, 128 << 10, 4);
    expect(a.time == b.time, "ring p=2 on 2 cores: as with a core per rank", b.time, a.time);
    struct zsim_model turns;
    memset(&turns, 0, sizeof(turns));
    turns.cores = 2, turns.sw = 1e-6, turns.slice = 750e-6, turns.sleep = 2e-3;
    struct zsim_result r = run(&turns, "ring", 8, 8, 8, 128 << 10, 4);
    double lo = 14 * 1e-6, hi = 14 * (8 / 2 + 1) * 1e-6;
    expect(r.time >= lo && r.time <= hi, "ring p=8 on 2 cores, 8 B: 14 steps in [1, 5] turns each",
           r.time, lo);
  }
  printf("%d failure(s)\n", failures);
  /* The one-host exchange: one publication, then every peer's box, in turn. One call's
   * latency on one core per rank: oh_o + n copy (the box written) + oh_alpha (seen) +
   * (p-1) (oh_recv + n (oh_beta + gamma)) (the boxes taken and reduced), and a rank puts
   * its vector once per peer's worth of bytes. */
  for (int p = 2; p <= 8; p *= 2) {
    struct zsim_model oh;
    memset(&oh, 0, sizeof(oh));
    oh.oh_o = 1e-6, oh.oh_alpha = 2e-6, oh.oh_recv = 3e-6, oh.oh_beta = 1e-9;
    oh.gamma = 2e-9, oh.copy = 4e-9, oh.call = 100e-6; /* call: the executor's, not paid */
    oh.mem = oh.c2c = 1;
    size_t bytes = 512;
    struct zsim_job job = {ZSIM_ONEHOST, p, p, bytes / 4, 4, 65536, 8, 4};
    struct zsim_result r;
    memset(&r, 0, sizeof(r));
    if (zsim_run(&oh, &job, &r)) failures++;
    double want = 1e-6 + 512 * 4e-9 + 2e-6 + (p - 1) * (3e-6 + 512 * 3e-9);
    snprintf(what, sizeof(what), "onehost p=%d, 512 B: one publication, p-1 boxes", p);
    expect(close_to(r.time, want, 1e-9), what, r.time, want);
  }
  return failures ? 1 : 0;
}
