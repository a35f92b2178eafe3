/* config_api.c -- the public configuration calls: configuration (base/config.c) handed
 * what belongs to the layers above it -- the names some fields take (the algorithms'
 * table, the table of transports) and the transports' tables of knobs, gathered with
 * base's into the one list zcoll_info -c prints: base's job fields, each transport's in
 * the table of transports' order, base's other fields. */
#include "algorithms/algorithms.h"
#include "base/config.h"
#include "base/config_fields.h"
#include "transports.h"

/* tl and sec: room for the names and the sections, which nm points into. */
struct names_room {
  const char *tl[ZCOLL_TL_MAX];
  struct zcoll__config_section sec[ZCOLL_TL_MAX + 2];
};

static struct zcoll__config_names names(struct names_room *room) {
  int ns = 0;
  room->sec[ns++] = (struct zcoll__config_section){zcoll__config_fields_job, ZCOLL_CONFIG_NJOB};
  for (int i = 0; i < zcoll__ntransports; i++) {
    room->tl[i] = zcoll__transports[i].name;
    if (zcoll__transports[i].nconfig)
      room->sec[ns++] = (struct zcoll__config_section){zcoll__transports[i].config,
                                                       zcoll__transports[i].nconfig};
  }
  room->sec[ns++] = (struct zcoll__config_section){zcoll__config_fields_run, ZCOLL_CONFIG_NRUN};
  return (struct zcoll__config_names){zcoll__algo_name_valid,
                                      zcoll__bcast_algo_name_valid,
                                      room->tl,
                                      zcoll__ntransports,
                                      room->sec,
                                      ns};
}

zcoll_status_t zcoll_config_create(zcoll_config_t **out) {
  struct names_room room;
  struct zcoll__config_names nm = names(&room);
  return zcoll__config_create(out, &nm);
}

zcoll_status_t zcoll_config_set(zcoll_config_t *cfg, const char *name, const char *value) {
  struct names_room room;
  struct zcoll__config_names nm = names(&room);
  return zcoll__config_set(cfg, name, value, &nm);
}

zcoll_status_t zcoll_config_get(const zcoll_config_t *cfg, const char *name, char *buf,
                                size_t len) {
  struct names_room room;
  struct zcoll__config_names nm = names(&room);
  return zcoll__config_get(cfg, name, buf, len, &nm);
}

int zcoll_config_entries(const zcoll_config_t *cfg, zcoll_config_entry_t *entries, int max) {
  struct names_room room;
  struct zcoll__config_names nm = names(&room);
  return zcoll__config_entries(cfg, entries, max, &nm);
}

int zcoll__config_explicit(const zcoll_config_t *cfg, const char *name) {
  struct names_room room;
  struct zcoll__config_names nm = names(&room);
  return zcoll__config_is_explicit(cfg, name, &nm);
}
