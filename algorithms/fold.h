/*
 * fold.h -- the standard fold of a non-power-of-two rank count onto a power of two,
 * shared by the butterfly and halving-doubling schedules.
 *
 * With p2 = 2^floor(log2 p) and extra = p - p2, the first 2*extra ranks pair up: each
 * odd one is a helper of its even neighbour, which stands in as virtual rank r/2; the
 * other ranks are virtual ranks r - extra. The p2 virtual ranks run the power-of-two
 * algorithm.
 */
#ifndef ZCOLL_FOLD_H
#define ZCOLL_FOLD_H

struct zcoll__fold {
  int p2, extra, steps; /* steps = log2(p2) */
};

static inline struct zcoll__fold zcoll__fold_of(int p) {
  struct zcoll__fold f = {1, 0, 0};
  while (f.p2 * 2 <= p) f.p2 *= 2, f.steps++;
  f.extra = p - f.p2;
  return f;
}

/* Real rank of virtual rank v; its helper (-1 if none). */
static inline int zcoll__fold_real(const struct zcoll__fold *f, int v) {
  return v < f->extra ? 2 * v : v + f->extra;
}
static inline int zcoll__fold_helper(const struct zcoll__fold *f, int v) {
  return v < f->extra ? 2 * v + 1 : -1;
}
static inline int zcoll__fold_is_helper(const struct zcoll__fold *f, int r) {
  return r < 2 * f->extra && r % 2;
}
static inline int zcoll__fold_virt(const struct zcoll__fold *f, int r) {
  return r < 2 * f->extra ? r / 2 : r - f->extra;
}

#endif
