/* model.c -- the model's parameters by name: the file fit.py writes and -s overrides. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithms.h"
#include "core/kind.h"
#include "sim.h"

/* Names carry their unit; inside, seconds and seconds per byte. */
static const struct {
  const char *name;
  size_t off;
  double scale;
} keys[] = {
    {"shm_alpha_us", offsetof(struct zsim_model, shm.alpha), 1e-6},
    {"shm_o_us", offsetof(struct zsim_model, shm.o), 1e-6},
    {"shm_o_post_us", offsetof(struct zsim_model, shm.o_post), 1e-6},
    {"shm_ns_per_byte", offsetof(struct zsim_model, shm.beta), 1e-9},
    {"net_alpha_us", offsetof(struct zsim_model, net.alpha), 1e-6},
    {"net_o_us", offsetof(struct zsim_model, net.o), 1e-6},
    {"net_ns_per_byte", offsetof(struct zsim_model, net.beta), 1e-9},
    {"gamma_ns_per_byte", offsetof(struct zsim_model, gamma), 1e-9},
    {"copy_ns_per_byte", offsetof(struct zsim_model, copy), 1e-9},
    {"recv_o_us", offsetof(struct zsim_model, o_recv), 1e-6},
    {"call_us", offsetof(struct zsim_model, call), 1e-6},
    {"oh_o_us", offsetof(struct zsim_model, oh_o), 1e-6},
    {"oh_alpha_us", offsetof(struct zsim_model, oh_alpha), 1e-6},
    {"oh_recv_us", offsetof(struct zsim_model, oh_recv), 1e-6},
    {"oh_ns_per_byte", offsetof(struct zsim_model, oh_beta), 1e-9},
    {"llc_mib", offsetof(struct zsim_model, llc), 1048576},
    {"mem_factor", offsetof(struct zsim_model, mem), 1},
    {"l2_kib", offsetof(struct zsim_model, l2), 1024},
    {"c2c_factor", offsetof(struct zsim_model, c2c), 1},
    {"switch_us", offsetof(struct zsim_model, sw), 1e-6},
    {"slice_us", offsetof(struct zsim_model, slice), 1e-6},
    {"sleep_us", offsetof(struct zsim_model, sleep), 1e-6},
    {"share", offsetof(struct zsim_model, share), 1},
};

void zsim_model_default(struct zsim_model *m) {
  /* Round figures of a modern host and a 100 Gb/s NIC, until a model file says better. */
  memset(m, 0, sizeof(*m));
  m->shm = (struct zsim_link){0.3e-6, 0.05e-9, 0.1e-6, 0};
  m->net = (struct zsim_link){2e-6, 0.08e-9, 0.3e-6, 0};
  m->gamma = 0.03e-9;
  m->copy = 0.05e-9;
  m->o_recv = 0.1e-6;
  m->oh_o = m->oh_alpha = m->oh_recv = 0.1e-6;
  m->mem = 1;
  m->c2c = 1;
  m->sw = 1e-6;
  m->slice = 750e-6;  /* EEVDF's base slice (0.75 ms) */
  m->sleep = 2000e-6; /* ZCOLL_YIELD_US's default */
}

int zsim_model_set(struct zsim_model *m, const char *kv) {
  char name[64];
  double v;
  if (sscanf(kv, "%63[^= ]%*[= ]%lf", name, &v) != 2) {
    fprintf(stderr, "zcoll_sim: expected key=value, not '%s'\n", kv);
    return -1;
  }
  if (!strcmp(name, "cores")) {
    m->cores = (int)v;
    return 0;
  }
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    if (!strcmp(name, keys[i].name)) {
      *(double *)((char *)m + keys[i].off) = v * keys[i].scale;
      return 0;
    }
  fprintf(stderr, "zcoll_sim: unknown model parameter '%s'\n", name);
  return -1;
}

int zsim_model_load(struct zsim_model *m, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  char line[256];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof(line), f)) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char k[64], v[64];
    if (sscanf(line, "%63s %63s", k, v) != 2) continue;
    char kv[160];
    snprintf(kv, sizeof(kv), "%s=%s", k, v);
    rc = zsim_model_set(m, kv);
  }
  fclose(f);
  return rc;
}

void zsim_model_print(const struct zsim_model *m, const char *prefix) {
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
    printf("%s%s %.6g\n", prefix, keys[i].name,
           *(const double *)((const char *)m + keys[i].off) / keys[i].scale);
  printf("%scores %d\n", prefix, m->cores);
}

/* The exchanges the model builds: the kinds whose schedule follows from a block's count
 * and the root alone (the v-forms need their counts: not modelled). */
static const int xchg_kinds[] = {ZCOLL_COLL_ALLTOALL, ZCOLL_COLL_GATHER, ZCOLL_COLL_SCATTER};

static int xchg_find(const char *name) {
  const char *colon = strchr(name, ':');
  if (!colon) return -1;
  for (size_t i = 0; i < sizeof(xchg_kinds) / sizeof(xchg_kinds[0]); i++) {
    const struct zcoll__kind *k = zcoll__kind_of(xchg_kinds[i]);
    if (strlen(k->name) != (size_t)(colon - name) || strncmp(k->name, name, colon - name)) continue;
    for (int a = 0; a < *k->nalgos && a < ZSIM_XCHG_KINDS; a++)
      if (!strcmp(k->algos[a]->name, colon + 1)) return ZSIM_XCHG + ZSIM_XCHG_KINDS * k->id + a;
  }
  return -1;
}

int zsim_algo_find(const char *name) {
  if (strchr(name, ':')) return xchg_find(name);
  return strcmp(name, "onehost") == 0 ? ZSIM_ONEHOST : zcoll__algo_find(name);
}

const char *zsim_algo_name(int algo) {
  static char names[ZSIM_XCHG_KINDS * 16][48];
  if (algo >= ZSIM_XCHG) {
    int kind = (algo - ZSIM_XCHG) / ZSIM_XCHG_KINDS, a = (algo - ZSIM_XCHG) % ZSIM_XCHG_KINDS;
    char *n = names[(algo - ZSIM_XCHG) % (ZSIM_XCHG_KINDS * 16)];
    snprintf(n, sizeof(names[0]), "%s:%s", zcoll__kind_of(kind)->name,
             zcoll__kind_algo_name(kind, a));
    return n;
  }
  return algo == ZSIM_ONEHOST ? "onehost" : zcoll__algos[algo]->name;
}

double zsim_bus_factor(int algo, int p) { return (algo >= ZSIM_XCHG ? 1.0 : 2.0) * (p - 1) / p; }
