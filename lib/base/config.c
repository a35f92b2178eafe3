/* config.c -- zcoll_config: create (defaults, then the environment), set, get, list,
 * copy; the fields themselves are tables (base's in config_fields.c, the transports'
 * beside them) that parse the environment and zcoll_config_set alike, and list them for
 * zcoll_info, handed in as one list of sections (config.h's struct zcoll__config_names). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

extern char **environ;

/* What is shown instead of a secret's value. */
static const char *shown(const struct zcoll__config_field *f, const char *value) {
  if (!f->secret) return value;
  return value && value[0] ? "(set)" : "(unset)";
}

/* The i-th field of the list, in zcoll_info's order (NULL past its end). */
static const struct zcoll__config_field *field_at(const struct zcoll__config_names *nm, int i) {
  for (int k = 0; k < nm->nsections; i -= nm->sections[k].n, k++)
    if (i < nm->sections[k].n) return &nm->sections[k].fields[i];
  return NULL;
}

/* The index of the field of that name (with or without ZCOLL_), -1 if there is none. */
static int find_field(const char *name, const struct zcoll__config_names *nm) {
  if (!name) return -1;
  if (strncasecmp(name, "ZCOLL_", 6) == 0) name += 6;
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS; i++)
    if (strcasecmp(name, field_at(nm, i)->name) == 0) return i;
  return -1;
}

/* Parses into a scratch copy first so that a bad value leaves the field unchanged. */
static zcoll_status_t set_field(zcoll_config_t *cfg, int i, const char *value, const char *origin,
                                const struct zcoll__config_names *nm) {
  const struct zcoll__config_field *f = field_at(nm, i);
  char why[160] = "";
  unsigned char scratch[512];
  if (f->size > sizeof(scratch) || f->parse(value, scratch, f->size, why, sizeof(why), nm))
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "bad value '%s' for ZCOLL_%s%s: %s", shown(f, value),
                       f->name, origin, why);
  char *copy = strdup(value);
  if (!copy) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory copying ZCOLL_%s", f->name);
  memcpy((char *)cfg + f->offset, scratch, f->size);
  free(cfg->text[i]);
  cfg->text[i] = copy;
  cfg->explicit_[i] = strcmp(origin, " (built-in default)") != 0;
  return ZCOLL_OK;
}

/* Logging is the process's, not a communicator's: the last configuration made or set
 * decides it, as for the level before there were other logging fields. */
static void apply_log(const zcoll_config_t *cfg) {
  zcoll__log_set_level((zcoll__log_level_t)cfg->log_level);
  zcoll__log_set_subsys(cfg->log_subsys);
  zcoll__log_set_file(cfg->log_file);
}

zcoll_status_t zcoll__config_create(zcoll_config_t **out, const struct zcoll__config_names *nm) {
  if (!out) return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_config_create: cfg is NULL");
  zcoll_config_t *cfg = calloc(1, sizeof(*cfg));
  if (!cfg) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory allocating a configuration");
  zcoll_status_t st = ZCOLL_OK;
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS && st == ZCOLL_OK; i++)
    st = set_field(cfg, i, field_at(nm, i)->deflt, " (built-in default)", nm);
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS && st == ZCOLL_OK; i++) {
    char var[64];
    snprintf(var, sizeof(var), "ZCOLL_%s", field_at(nm, i)->name);
    const char *v = getenv(var);
    if (v) st = set_field(cfg, i, v, " (from the environment)", nm);
  }
  if (st != ZCOLL_OK) {
    zcoll_config_free(cfg);
    return st;
  }
  /* The logging settings apply from here on, so that init itself logs as asked. */
  apply_log(cfg);
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "ZCOLL_", 6) != 0) continue;
    const char *eq = strchr(*e, '=');
    char name[64];
    size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
    if (n >= sizeof(name)) n = sizeof(name) - 1;
    memcpy(name, *e, n);
    name[n] = '\0';
    /* ZCOLL_TEST_* and ZCOLL_RXE_* belong to the test suite and the soft-RoCE harness,
     * ZCOLL_LIBRARY to the Python binding (the library it loads: python/zcoll/_lib.py). */
    if (find_field(name, nm) < 0 && strncmp(name, "ZCOLL_TEST_", 11) != 0 &&
        strncmp(name, "ZCOLL_RXE", 9) != 0 && strcmp(name, "ZCOLL_LIBRARY") != 0)
      zcoll_log_warn("unknown variable %s is ignored", name);
  }
  *out = cfg;
  return ZCOLL_OK;
}

zcoll_status_t zcoll__config_set(zcoll_config_t *cfg, const char *name, const char *value,
                                 const struct zcoll__config_names *nm) {
  if (!cfg || !value)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_config_set: %s is NULL",
                       !cfg ? "cfg" : "value");
  int i = find_field(name, nm);
  if (i < 0)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_config_set: no configuration field '%s'",
                       name ? name : "(null)");
  const struct zcoll__config_field *f = field_at(nm, i);
  zcoll_status_t st = set_field(cfg, i, value, "", nm);
  if (st == ZCOLL_OK && (f->offset == offsetof(struct zcoll_config, log_level) ||
                         f->offset == offsetof(struct zcoll_config, log_subsys) ||
                         f->offset == offsetof(struct zcoll_config, log_file)))
    apply_log(cfg);
  return st;
}

zcoll_status_t zcoll__config_get(const zcoll_config_t *cfg, const char *name, char *buf, size_t len,
                                 const struct zcoll__config_names *nm) {
  if (!cfg || !buf || !len)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_config_get: NULL or empty argument");
  int i = find_field(name, nm);
  if (i < 0)
    return zcoll__fail(ZCOLL_ERR_INVALID_ARG, "zcoll_config_get: no configuration field '%s'",
                       name ? name : "(null)");
  snprintf(buf, len, "%s", shown(field_at(nm, i), cfg->text[i]));
  return ZCOLL_OK;
}

void zcoll_config_free(zcoll_config_t *cfg) {
  if (!cfg) return;
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS; i++) free(cfg->text[i]);
  free(cfg);
}

int zcoll__config_entries(const zcoll_config_t *cfg, zcoll_config_entry_t *entries, int max,
                          const struct zcoll__config_names *nm) {
  static char names[ZCOLL_CONFIG_NFIELDS][48];
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS && i < max && entries; i++) {
    const struct zcoll__config_field *f = field_at(nm, i);
    /* Names are built once; racing threads write the same bytes. */
    if (!names[i][0]) snprintf(names[i], sizeof(names[i]), "ZCOLL_%s", f->name);
    entries[i].name = names[i];
    entries[i].value = shown(f, cfg ? cfg->text[i] : f->deflt);
    entries[i].default_value = shown(f, f->deflt);
    entries[i].doc = f->doc;
  }
  return ZCOLL_CONFIG_NFIELDS;
}

int zcoll__config_is_explicit(const zcoll_config_t *cfg, const char *name,
                              const struct zcoll__config_names *nm) {
  int i = find_field(name, nm);
  return i >= 0 && cfg->explicit_[i];
}

/* A private deep copy, so that a communicator keeps its settings whatever the caller
 * does with the object it passed in. */
zcoll_status_t zcoll__config_dup(const zcoll_config_t *src, zcoll_config_t **out) {
  zcoll_config_t *cfg = malloc(sizeof(*cfg));
  if (!cfg) return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory copying a configuration");
  *cfg = *src;
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS; i++) cfg->text[i] = NULL;
  for (int i = 0; i < ZCOLL_CONFIG_NFIELDS; i++)
    if (!(cfg->text[i] = strdup(src->text[i] ? src->text[i] : ""))) {
      zcoll_config_free(cfg);
      return zcoll__fail(ZCOLL_ERR_NO_MEMORY, "out of memory copying a configuration");
    }
  *out = cfg;
  return ZCOLL_OK;
}
