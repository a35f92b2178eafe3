/* config_api.c -- zcoll_config_create and zcoll_config_set: configuration (base/config.c)
 * handed the names that some fields take, which belong to the layers above it: the
 * algorithms' table and the table of transports. */
#include "algorithms/algorithms.h"
#include "base/config.h"
#include "transports.h"

static struct zcoll__config_names names(const char **tl) {
  for (int i = 0; i < zcoll__ntransports; i++) tl[i] = zcoll__transports[i].name;
  return (struct zcoll__config_names){zcoll__algo_name_valid, zcoll__bcast_algo_name_valid, tl,
                                      zcoll__ntransports};
}

zcoll_status_t zcoll_config_create(zcoll_config_t **out) {
  const char *tl[ZCOLL_TL_MAX];
  struct zcoll__config_names nm = names(tl);
  return zcoll__config_create(out, &nm);
}

zcoll_status_t zcoll_config_set(zcoll_config_t *cfg, const char *name, const char *value) {
  const char *tl[ZCOLL_TL_MAX];
  struct zcoll__config_names nm = names(tl);
  return zcoll__config_set(cfg, name, value, &nm);
}
