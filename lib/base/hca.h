/*
 * hca.h -- ZCOLL_IB_HCA, the RDMA devices and ports a rank may use, in NCCL_IB_HCA's
 * syntax, which cluster users already write:
 *
 *   mlx5_0:1,mlx5_1     these (a name without a port: every port of it)
 *   mlx5                every device whose name starts so (a prefix, as NCCL matches)
 *   =mlx5_0             exactly these names, no prefix match
 *   ^mlx5_2             every device but these (^= : exactly these names excluded)
 *
 * The configuration checks the text (config.c); the verbs transport matches devices
 * against it (transports/verbs/iface.c).
 */
#ifndef ZCOLL_HCA_H
#define ZCOLL_HCA_H

#include <stddef.h>

#define ZCOLL_HCA_MAX 16 /* entries in one list */

struct zcoll__hca_spec {
  int exclude, exact, n;
  struct {
    char name[64];
    int port; /* 0: every port */
  } e[ZCOLL_HCA_MAX];
};

/* 0, or -1 with the reason in why. "" is the empty list: every device. */
int zcoll__hca_parse(const char *text, struct zcoll__hca_spec *spec, char *why, size_t why_len);
/* Does the list let a rank use this device's port? */
int zcoll__hca_match(const struct zcoll__hca_spec *spec, const char *dev, int port);

#endif /* ZCOLL_HCA_H */
