/* select.c -- the selection table: built-in defaults or a measured tuning file. */
#include "select.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algorithms.h"
#include "base/log.h"

/* Defaults from measurements on a 2-core shared-memory host (README, "Selection"):
 * latency-bound sizes take the butterfly (log p steps of the whole vector), mid sizes
 * recursive halving-doubling, large ones the ring, whose every step moves 1/p. A
 * broadcast below 256 KiB takes the tree (log_k p hops), from there the chain, whose
 * ranks each send the vector once instead of up to (k-1) log_k p times. */
static const struct {
  int coll;
  int min_ranks, max_ranks;
  size_t max_bytes;
  const char *algo;
} builtin[] = {
    {ZCOLL__SEL_ALLREDUCE, 1, 1 << 30, 16 << 10, "butterfly"},
    {ZCOLL__SEL_ALLREDUCE, 1, 1 << 30, 256 << 10, "rhd"},
    {ZCOLL__SEL_ALLREDUCE, 1, 1 << 30, SIZE_MAX, "ring"},
    {ZCOLL__SEL_BCAST, 1, 1 << 30, (256 << 10) - 1, "tree"},
    {ZCOLL__SEL_BCAST, 1, 1 << 30, SIZE_MAX, "chain"},
};

static int find_algo(int coll, const char *name) {
  return coll == ZCOLL__SEL_BCAST ? zcoll__bcast_algo_find(name) : zcoll__algo_find(name);
}

static int add_rule(struct zcoll__selector *sel, struct zcoll__rule r) {
  struct zcoll__rule *n = realloc(sel->rules, sizeof(*n) * (size_t)(sel->nrules + 1));
  if (!n) return -1;
  sel->rules = n;
  sel->rules[sel->nrules++] = r;
  return 0;
}

/* "4096", "64K", "1M", "inf" */
static int parse_size(const char *s, size_t *out) {
  if (strcmp(s, "inf") == 0) {
    *out = SIZE_MAX;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-') return -1;
  unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  if (shift) end++;
  if (*end || v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)v << shift;
  return 0;
}

/* A tuning file is a few hundred bytes of text (docs/configuration.md): the bound is what a
 * wrong path (a log, a core dump, a file under /proc) may cost before it is refused. */
#define TUNING_MAX_BYTES (1 << 20)

static const char *file_kind(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "of an unknown kind";
}

/* The whole of a regular file of at most TUNING_MAX_BYTES into *text (*len bytes, then a
 * NUL). Opened without blocking, so that a FIFO without a writer is refused rather than
 * waited for; a device (/dev/zero never ends) and a directory (whose read fails) are
 * refused too, and a read that fails is an error, not the end of the table. */
static zcoll_status_t read_file(const char *path, char **text, size_t *len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s: %s", path, strerror(errno));
  struct stat sb;
  char *buf = NULL;
  size_t n = 0;
  zcoll_status_t st = ZCOLL_OK;
  if (fstat(fd, &sb))
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s is %s, not a regular file", path,
                     file_kind(sb.st_mode));
  else if (sb.st_size > TUNING_MAX_BYTES)
    st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s: %lld bytes, more than 1 MiB",
                     path, (long long)sb.st_size);
  else if (!(buf = malloc(TUNING_MAX_BYTES + 1)))
    st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory reading %s", path);
  /* st_size is 0 for the files of /proc: the bound holds for what is read, too. */
  while (st == ZCOLL_OK) {
    ssize_t r = read(fd, buf + n, TUNING_MAX_BYTES + 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s: reading it: %s", path,
                       strerror(errno));
    else if ((n += (size_t)r) > TUNING_MAX_BYTES)
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "ZCOLL_TUNING_FILE %s: more than 1 MiB", path);
    else if (r == 0)
      break;
  }
  close(fd);
  if (st != ZCOLL_OK) {
    free(buf);
    return st;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return ZCOLL_OK;
}

static zcoll_status_t load_file(struct zcoll__selector *sel, const char *path) {
  char *text = NULL;
  size_t len = 0;
  zcoll_status_t st = read_file(path, &text, &len);
  if (st != ZCOLL_OK) return st;
  char line[512];
  int lineno = 0;
  for (const char *p = text, *end = text + len; st == ZCOLL_OK && p < end;) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t chars = (size_t)((eol ? eol : end) - p);
    const char *next = eol ? eol + 1 : end;
    lineno++;
    /* Refused whole: a longer comment's tail read as a line of its own would be a rule. */
    if (chars > sizeof(line) - 2) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ZCOLL_TUNING_FILE %s line %d is longer than %zu characters", path, lineno,
                       sizeof(line) - 2);
      break;
    }
    if (memchr(p, '\0', chars)) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ZCOLL_TUNING_FILE %s line %d has a NUL byte: not a text file", path,
                       lineno);
      break;
    }
    memcpy(line, p, chars);
    line[chars] = '\0';
    p = next;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    /* An optional first word names the collective: "broadcast", or "allreduce". */
    char *rest = line + strspn(line, " \t");
    struct zcoll__rule r = {ZCOLL__SEL_ALLREDUCE, 0, 0, 0, -1, lineno};
    size_t w = strcspn(rest, " \t\n");
    if (w == 9 && !strncmp(rest, "broadcast", 9)) r.coll = ZCOLL__SEL_BCAST;
    if (r.coll == ZCOLL__SEL_BCAST || (w == 9 && !strncmp(rest, "allreduce", 9))) rest += w;
    /* Empty, not garbage, where a short line leaves fields unread. */
    char a[32] = "", b[32] = "", c[32] = "", name[64] = "", extra[8];
    int n = sscanf(rest, "%31s %31s %31s %63s %7s", a, b, c, name, extra);
    if (n <= 0 && rest == line + strspn(line, " \t")) continue;
    char *e1, *e2 = b + strlen(b);
    r.min_ranks = (int)strtol(a, &e1, 10);
    r.max_ranks = strcmp(b, "inf") == 0 ? 1 << 30 : (int)strtol(b, &e2, 10);
    if (n != 4 || *e1 || *e2 || r.min_ranks < 1 || r.max_ranks < r.min_ranks ||
        parse_size(c, &r.max_bytes))
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ZCOLL_TUNING_FILE %s line %d: expected '[broadcast] ranks_min "
                       "ranks_max max_bytes algorithm' (e.g. '2 8 64K butterfly')",
                       path, lineno);
    else if ((r.algo = find_algo(r.coll, name)) < 0)
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                       "ZCOLL_TUNING_FILE %s line %d: unknown %s algorithm '%s'", path, lineno,
                       r.coll == ZCOLL__SEL_BCAST ? "broadcast" : "allreduce", name);
    else if (add_rule(sel, r))
      st = zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory reading %s", path);
  }
  free(text);
  return st;
}

zcoll_status_t zcoll__selector_init(struct zcoll__selector *sel, const char *path) {
  memset(sel, 0, sizeof(*sel));
  if (path && path[0]) {
    snprintf(sel->source, sizeof(sel->source), "%s", path);
    zcoll_status_t st = load_file(sel, path);
    if (st != ZCOLL_OK) zcoll__selector_free(sel);
    return st;
  }
  snprintf(sel->source, sizeof(sel->source), "built-in table");
  for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
    int algo = find_algo(builtin[i].coll, builtin[i].algo);
    if (algo < 0) continue; /* an algorithm this build does not have */
    struct zcoll__rule r = {
        builtin[i].coll, builtin[i].min_ranks, builtin[i].max_ranks, builtin[i].max_bytes, algo, 0};
    if (add_rule(sel, r)) {
      zcoll__selector_free(sel);
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory for the selection table");
    }
  }
  return ZCOLL_OK;
}

void zcoll__selector_free(struct zcoll__selector *sel) {
  free(sel->rules);
  sel->rules = NULL;
  sel->nrules = 0;
}

/* The first rule of coll covering (ranks, bytes), its reason in why; -1 if none. */
static int first_rule(const struct zcoll__selector *sel, int coll, int ranks, size_t bytes,
                      char *why, size_t why_len) {
  for (int i = 0, k = 0; i < sel->nrules; i++) {
    const struct zcoll__rule *r = &sel->rules[i];
    if (r->coll != coll) continue;
    k++; /* the built-in table numbers each collective's rules from 1 */
    if (ranks < r->min_ranks || ranks > r->max_ranks || bytes > r->max_bytes) continue;
    if (why) {
      char lim[48];
      if (r->max_bytes == SIZE_MAX)
        snprintf(lim, sizeof(lim), "any size");
      else
        snprintf(lim, sizeof(lim), "up to %zu bytes", r->max_bytes);
      char top[16] = "any";
      if (r->max_ranks < 1 << 30) snprintf(top, sizeof(top), "%d", r->max_ranks);
      snprintf(why, why_len, "%s%s%d: ranks %d..%s, %s", sel->source, r->line ? " line " : " rule ",
               r->line ? r->line : k, r->min_ranks, top, lim);
    }
    return r->algo;
  }
  return -1;
}

int zcoll__select(const struct zcoll__selector *sel, int ranks, size_t bytes, char *why,
                  size_t why_len) {
  int a = first_rule(sel, ZCOLL__SEL_ALLREDUCE, ranks, bytes, why, why_len);
  if (a >= 0) return a;
  if (why) snprintf(why, why_len, "no rule of %s covers it: ring", sel->source);
  return zcoll__algo_find("ring");
}

int zcoll__select_bcast(const struct zcoll__selector *sel, int ranks, size_t bytes, char *why,
                        size_t why_len) {
  int a = first_rule(sel, ZCOLL__SEL_BCAST, ranks, bytes, why, why_len);
  if (a >= 0) return a;
  /* A tuning file measured for the allreduce says nothing of the broadcast: the defaults. */
  for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
    if (builtin[i].coll == ZCOLL__SEL_BCAST && bytes <= builtin[i].max_bytes &&
        (a = zcoll__bcast_algo_find(builtin[i].algo)) >= 0) {
      if (why)
        snprintf(why, why_len, "no broadcast rule of %s covers it: built-in %s %s 256 KiB",
                 sel->source, builtin[i].algo, bytes < (256 << 10) ? "below" : "from");
      return a;
    }
  if (why) snprintf(why, why_len, "no broadcast rule covers it: chain");
  return zcoll__bcast_algo_find("chain");
}

int zcoll__choose(const struct zcoll__choice *c, size_t bytes, char *why, size_t why_len) {
  if (c->forced >= 0) {
    if (why) snprintf(why, why_len, "forced by ZCOLL_ALGO");
    return c->forced;
  }
  int a = zcoll__select(c->sel, c->ranks, bytes, why, why_len);
  /* Ranks on several hosts with more than one on some: where the table wants bandwidth,
   * the hierarchical schedule moves 1/k of the bytes between hosts that a flat one does.
   * A tuning file is taken as it is: it may say hier itself, for the sizes it measured. */
  if (c->hier_auto && (a == c->ring || a == c->rhd)) {
    if (why) {
      size_t n = strlen(why);
      snprintf(why + n, why_len - n, "; hier instead: %d ranks on %d hosts", c->ranks, c->nhosts);
    }
    return c->hier;
  }
  return a;
}

/* Allgather and reduce-scatter move the same bytes per rank either way ((p - 1)/p of the
 * result or input); recursive doubling or halving does it in log2 p steps instead of
 * p - 1, which pays where latency counts. The ring keeps to neighbour links and the
 * longest pipeline, which pays for big vectors; and it serves any p. */
#define ZCOLL__SEL_LOG_STEPS_MAX ((size_t)256 << 10)

static int pow2_ranks(int p) { return p > 1 && (p & (p - 1)) == 0; }

int zcoll__select_gather(int coll_rs, int ranks, size_t bytes, char *why, size_t why_len) {
  const char *log_algo = coll_rs ? "recursive_halving" : "recursive_doubling";
  if (pow2_ranks(ranks) && bytes <= ZCOLL__SEL_LOG_STEPS_MAX) {
    if (why) snprintf(why, why_len, "a power-of-two size, at most 256 KiB: %s", log_algo);
    return coll_rs ? zcoll__rs_algo_find(log_algo) : zcoll__ag_algo_find(log_algo);
  }
  if (why)
    snprintf(why, why_len, "%s: ring", pow2_ranks(ranks) ? "over 256 KiB" : "not a power of two");
  return 0; /* the ring, first in both tables */
}

int zcoll__select_rooted(int ranks, size_t block_bytes, char *why, size_t why_len) {
  if (ranks >= ZCOLL__SEL_TREE_MIN_RANKS && block_bytes <= ZCOLL__SEL_TREE_MAX_BYTES) {
    if (why)
      snprintf(why, why_len, "blocks of at most %d bytes on %d ranks or more: binomial",
               ZCOLL__SEL_TREE_MAX_BYTES, ZCOLL__SEL_TREE_MIN_RANKS);
    return 1;
  }
  if (why)
    snprintf(why, why_len, "%s: direct",
             ranks < ZCOLL__SEL_TREE_MIN_RANKS ? "few ranks" : "blocks over 2048 bytes");
  return 0;
}

int zcoll__select_alltoall(int ranks, size_t block_bytes, int in_place, char *why, size_t why_len) {
  if (!in_place && ranks >= ZCOLL__SEL_BRUCK_MIN_RANKS &&
      block_bytes <= ZCOLL__SEL_BRUCK_MAX_BYTES) {
    if (why)
      snprintf(why, why_len, "blocks of at most %d bytes on %d ranks or more: bruck",
               ZCOLL__SEL_BRUCK_MAX_BYTES, ZCOLL__SEL_BRUCK_MIN_RANKS);
    return 1;
  }
  if (why)
    snprintf(why, why_len, "%s: pairwise",
             in_place                             ? "in place"
             : ranks < ZCOLL__SEL_BRUCK_MIN_RANKS ? "few ranks"
                                                  : "blocks over 256 bytes");
  return 0;
}
