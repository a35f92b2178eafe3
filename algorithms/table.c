/* table.c -- the algorithms zcoll knows, by name. */
#include <string.h>

#include "algorithms.h"

/* Appended only: the index is the algorithm's id on the wire. */
const struct zcoll__algo *const zcoll__algos[] = {&zcoll__algo_ring,  &zcoll__algo_butterfly,
                                                  &zcoll__algo_rhd,   &zcoll__algo_tree,
                                                  &zcoll__algo_chain, &zcoll__algo_hier};
const int zcoll__nalgos = (int)(sizeof(zcoll__algos) / sizeof(zcoll__algos[0]));

int zcoll__algo_find(const char *name) {
  for (int i = 0; i < zcoll__nalgos; i++)
    if (strcmp(name, zcoll__algos[i]->name) == 0) return i;
  return -1;
}

const struct zcoll__algo *const zcoll__bcast_algos[] = {&zcoll__bcast_chain, &zcoll__bcast_tree};
const int zcoll__nbcast_algos = (int)(sizeof(zcoll__bcast_algos) / sizeof(zcoll__bcast_algos[0]));

int zcoll__bcast_algo_find(const char *name) {
  for (int i = 0; i < zcoll__nbcast_algos; i++)
    if (strcmp(name, zcoll__bcast_algos[i]->name) == 0) return i;
  return -1;
}

int zcoll__bcast_algo_name_valid(const char *name) {
  return strcmp(name, "auto") == 0 || zcoll__bcast_algo_find(name) >= 0;
}

int zcoll__algo_name_valid(const char *name) {
  return strcmp(name, "auto") == 0 || zcoll__algo_find(name) >= 0;
}
