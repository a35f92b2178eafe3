/*
 * knomial.h -- the k-nomial tree rooted at rank 0 that the tree allreduce (tree.c) and
 * the tree broadcast (broadcast.c) share: the same edges, so the same channels.
 *
 * Rank r's parent clears its lowest non-zero base-k digit; its children are r + j k^i
 * for every level i below that digit (all levels for the root) and j = 1..k-1. The
 * subtree of the child r + j k^i is the ranks [r + j k^i, r + (j+1) k^i) below p.
 */
#ifndef ZCOLL_KNOMIAL_H
#define ZCOLL_KNOMIAL_H

#include "algorithms.h"

/* (k-1) * ceil(31 / log2 k) is at most 378 (k = 64): enough for any int rank count. */
#define ZCOLL_KNOMIAL_MAX_CHILDREN 512

static inline int zcoll__knomial_arity(const struct zcoll__algo_params *params) {
  int k = params ? params->tree_arity : 4;
  return k >= 2 && k <= 64 ? k : 4;
}

/* Rank r's parent (-1 for the root) and children, smallest subtrees first. */
static inline int zcoll__knomial_family(int r, int p, int k, int *parent, int *kids) {
  int n = 0;
  *parent = -1;
  for (long long stride = 1; stride < p; stride *= k) {
    int digit = (int)((r / stride) % k);
    if (digit) {
      *parent = r - digit * (int)stride;
      break;
    }
    for (int j = 1; j < k && r + j * stride < p; j++) kids[n++] = r + j * (int)stride;
  }
  return n;
}

/* How many ranks the subtree of kid (a child of r) spans: its level's k^i. */
static inline int zcoll__knomial_span(int r, int kid, int k) {
  int d = kid - r, s = 1;
  while (d % (s * k) == 0) s *= k;
  return s;
}

#endif
