/* launch.c -- rank, size and the rendezvous from the launcher in use. */
#include "launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "pmix_client.h"
#include "sock.h"

/* Rank and size from the launcher, when ZCOLL_RANK/ZCOLL_SIZE are not given. */
static const struct {
  const char *rank, *size, *local_rank, *local_size, *name;
} launchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "Slurm"},
};

static int env_int(const char *name, int *out) {
  const char *v = name ? getenv(name) : NULL;
  if (!v || !*v) return 0;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > 1 << 30) return -1;
  *out = (int)x;
  return 1;
}

/* 1: found, 0: not under a PMIx server (or no libpmix), else the error. */
static zcoll_status_t from_pmix(zcoll_config_t *cfg, struct zcoll__launch *l, int *found) {
  *found = 0;
  if (!zcoll__pmix_present()) return ZCOLL_OK;
  struct zcoll__pmix_job j;
  zcoll_status_t st = zcoll__pmix_job(&j);
  if (st == ZCOLL_ERR_UNSUPPORTED) return ZCOLL_OK;
  if (st != ZCOLL_OK) return st;
  cfg->rank = j.rank;
  cfg->size = j.size;
  if (cfg->local_rank < 0) cfg->local_rank = j.local_rank;
  if (cfg->local_size < 0) cfg->local_size = j.local_size;
  l->name = "PMIx";
  l->pmix = 1;
  *found = 1;
  zcoll_log_info("launched through PMIx: rank %d of %d (namespace %s, %d on this host)", j.rank,
                 j.size, j.nspace, j.local_size);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__launch_resolve(zcoll_config_t *cfg, struct zcoll__launch *out) {
  struct zcoll__launch l = {"ZCOLL_RANK", 0, 0};
  if (cfg->rank < 0 && cfg->size < 0) {
    int found;
    zcoll_status_t st = from_pmix(cfg, &l, &found);
    if (st != ZCOLL_OK) return st;
    for (size_t i = 0; !found && i < sizeof(launchers) / sizeof(launchers[0]); i++) {
      int r, s;
      int hr = env_int(launchers[i].rank, &r), hs = env_int(launchers[i].size, &s);
      if (hr < 0 || hs < 0)
        return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bad %s or %s in the environment",
                           launchers[i].rank, launchers[i].size);
      if (hr && hs) {
        cfg->rank = r;
        cfg->size = s;
        if (cfg->local_size < 0) env_int(launchers[i].local_size, &cfg->local_size);
        if (cfg->local_rank < 0) env_int(launchers[i].local_rank, &cfg->local_rank);
        l.name = launchers[i].name;
        found = 1;
        zcoll_log_debug("rank %d of %d from %s's variables", r, s, launchers[i].name);
      }
    }
  }
  if (cfg->rank < 0 && cfg->size < 0) {
    if (cfg->root[0])
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "ZCOLL_ROOT is set but not this process's rank: set ZCOLL_RANK and "
                         "ZCOLL_SIZE, or start it with zcoll_run, mpirun or srun");
    /* torchrun (and torch's env:// launchers) say there are other ranks, but give no
     * rendezvous zcoll can use: a job of one here has each rank reduce only itself. */
    const char *ws = getenv("WORLD_SIZE");
    int n;
    if (env_int("WORLD_SIZE", &n) > 0 && n > 1)
      return zcoll__fail(ZCOLL_ERR_INVALID_ARG,
                         "WORLD_SIZE=%s is set (torchrun's?) but no zcoll launcher is: this "
                         "would be a job of one; start the ranks with zcoll_run (or mpirun, "
                         "srun), move a unique id (zcoll_comm_init_rank; Python: "
                         "zcoll.Comm(unique_id=..., rank=..., size=...), through torch's "
                         "store), use the torch.distributed backend \"zcoll\", or set "
                         "ZCOLL_RANK=0 ZCOLL_SIZE=1 for a job of one on purpose",
                         ws);
    /* Nothing says there are other ranks: a job of one, like an MPI singleton. */
    cfg->rank = 0;
    cfg->size = 1;
    l.name = "none";
  }
  if (cfg->rank < 0 || cfg->size < 1 || cfg->rank >= cfg->size)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "rank %d of size %d is not a valid rank", cfg->rank,
                       cfg->size);
  *out = l;
  return ZCOLL_OK;
}

/* ---- the rendezvous through PMIx ---------------------------------------------------- */

static int is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a);
  }
  return 1;
}

static void format_host(const struct sockaddr *sa, char *out, size_t len) {
  char a[INET6_ADDRSTRLEN] = "";
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
    snprintf(out, len, "%s:0", a);
  } else {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
    snprintf(out, len, "[%s]:0", a);
  }
}

/* An address of this host that ranks on other hosts reach: the host name's, as the
 * cluster's name service gives it, unless that is a loopback one (Debian maps the host
 * name to 127.0.1.1); else the first interface that is up, IPv4 first. */
static zcoll_status_t reachable_address(char *out, size_t len) {
  char name[256];
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG}, *res;
  if (gethostname(name, sizeof(name)) == 0 && getaddrinfo(name, NULL, &hints, &res) == 0) {
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
      if (!is_loopback(ai->ai_addr)) {
        format_host(ai->ai_addr, out, len);
        freeaddrinfo(res);
        return ZCOLL_OK;
      }
    freeaddrinfo(res);
  }
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) != 0)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "getifaddrs: %s", strerror(errno));
  for (int family = AF_INET, pass = 0; pass < 2; pass++, family = AF_INET6)
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == family && (i->ifa_flags & IFF_UP) &&
          !(i->ifa_flags & IFF_LOOPBACK) && !is_loopback(i->ifa_addr)) {
        format_host(i->ifa_addr, out, len);
        freeifaddrs(ifs);
        return ZCOLL_OK;
      }
  freeifaddrs(ifs);
  return zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "rank 0 has no address that ranks on other hosts reach (only loopback "
                     "interfaces are up): set ZCOLL_ROOT=host:port");
}

zcoll_status_t zcoll__listen_at(const char *hostport, char *root, size_t len, int *fd) {
  zcoll_status_t st = zcoll__sock_listen(hostport, fd);
  if (st != ZCOLL_OK) return st;
  struct sockaddr_storage ss = {0};
  socklen_t sl = sizeof(ss);
  if (getsockname(*fd, (struct sockaddr *)&ss, &sl) != 0) {
    close(*fd);
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "getsockname of rank 0's socket: %s", strerror(errno));
  }
  /* getsockname filled ss; the analyzer's model of it does not say so. */
  /* NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage) */
  unsigned port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
  char host[256];
  snprintf(host, sizeof(host), "%s", hostport);
  char *colon = strrchr(host, ':');
  if (colon) *colon = '\0'; /* the port: the one bound, whatever was asked */
  snprintf(root, len, "%s:%u", host, port);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__listen_reachable(int local_only, char *root, size_t len, int *fd) {
  char host[256];
  zcoll_status_t st = ZCOLL_OK;
  if (local_only)
    snprintf(host, sizeof(host), "127.0.0.1:0"); /* every rank is on this host */
  else if ((st = reachable_address(host, sizeof(host))) != ZCOLL_OK)
    return st;
  return zcoll__listen_at(host, root, len, fd);
}

/* Rank 0: a listening socket on a free port; "host:port" of it in root. */
static zcoll_status_t listen_any_port(const zcoll_config_t *cfg, char *root, size_t len, int *fd) {
  return zcoll__listen_reachable(cfg->local_size > 0 && cfg->local_size >= cfg->size, root, len,
                                 fd);
}

zcoll_status_t zcoll__fresh_key(char *out, size_t len) {
  unsigned char k[32];
  size_t got = 0;
  while (got < sizeof(k)) {
    ssize_t n = getrandom(k + got, sizeof(k) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "getrandom: %s", strerror(errno));
    got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof(k) && 2 * i + 2 < len; i++) snprintf(out + 2 * i, 3, "%02x", k[i]);
  return ZCOLL_OK;
}

/* What rank 0 shares: "<host:port> <key>", "-" for either when rank 0 was given its own
 * (an explicit ZCOLL_ROOT or ZCOLL_JOB_KEY is never sent anywhere). */
static zcoll_status_t root_offer(zcoll_config_t *cfg, struct zcoll__launch *l, char *value,
                                 size_t len) {
  char root[256] = "-", key[80] = "-";
  zcoll_status_t st = ZCOLL_OK;
  int fd = -1;
  if (!cfg->job_key[0] && (st = zcoll__fresh_key(key, sizeof(key))) != ZCOLL_OK) return st;
  if (!cfg->root[0] && cfg->root_fd < 0) {
    if ((st = listen_any_port(cfg, root, sizeof(root), &fd)) != ZCOLL_OK) return st;
    snprintf(cfg->root, sizeof(cfg->root), "%s", root);
    cfg->root_fd = fd;
    l->close_root_fd = 1;
  }
  if (key[0] != '-') snprintf(cfg->job_key, sizeof(cfg->job_key), "%s", key);
  snprintf(value, len, "%s %s", root, key);
  return ZCOLL_OK;
}

zcoll_status_t zcoll__launch_rendezvous(zcoll_config_t *cfg, struct zcoll__launch *l) {
  if (!l->pmix || cfg->size == 1) return ZCOLL_OK;
  char value[400] = "", got[400];
  zcoll_status_t st = ZCOLL_OK;
  if (cfg->rank == 0 && (st = root_offer(cfg, l, value, sizeof(value))) != ZCOLL_OK) return st;
  st = zcoll__pmix_share(cfg->rank == 0 ? value : NULL, cfg->timeout, got, sizeof(got));
  if (st != ZCOLL_OK || cfg->rank == 0) goto out;
  char root[256], key[80];
  if (sscanf(got, "%255s %79s", root, key) != 2) {
    st = zcoll__fail(ZCOLL_ERR_BOOTSTRAP,
                     "PMIx: rank 0 shared '%.64s', not an address and "
                     "a key",
                     got);
    goto out;
  }
  if (!cfg->root[0]) {
    if (!strcmp(root, "-")) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "rank 0 was given ZCOLL_ROOT but this rank was "
                                              "not: set it alike on every rank, or on none");
      goto out;
    }
    snprintf(cfg->root, sizeof(cfg->root), "%s", root);
  }
  if (!cfg->job_key[0]) {
    if (!strcmp(key, "-")) {
      st = zcoll__fail(ZCOLL_ERR_INVALID_ARG, "rank 0 was given ZCOLL_JOB_KEY but this rank "
                                              "was not: set it alike on every rank, or on none");
      goto out;
    }
    snprintf(cfg->job_key, sizeof(cfg->job_key), "%s", key);
  }
out:
  explicit_bzero(got, sizeof(got)), explicit_bzero(value, sizeof(value)); /* the key */
  if (st != ZCOLL_OK && l->close_root_fd) {
    close(cfg->root_fd);
    cfg->root_fd = -1;
    l->close_root_fd = 0;
  }
  if (st == ZCOLL_OK) zcoll_log_debug("rendezvous through PMIx: rank 0 at %s", cfg->root);
  return st;
}
