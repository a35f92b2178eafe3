/* config_fields.h -- the table of ZCOLL_* variables (config_fields.c), which config.c's
 * zcoll_config calls read and write through. Private to lib/base/config*.c. */
#ifndef ZCOLL_CONFIG_FIELDS_H
#define ZCOLL_CONFIG_FIELDS_H

#include <stddef.h>

#include "config.h"

/* nm: the names of other layers' things that some fields take (config.h). */
typedef int (*zcoll__config_parse_fn)(const char *text, void *dst, size_t dst_size, char *why,
                                      size_t why_len, const struct zcoll__config_names *nm);

struct zcoll__config_field {
  const char *name; /* without the ZCOLL_ prefix */
  const char *deflt;
  const char *doc;
  size_t offset;
  size_t size;
  zcoll__config_parse_fn parse;
  int secret; /* its value is never shown: zcoll_info, zcoll_config_get, messages */
};

/* Every field, in the order zcoll_info and zcoll_config_entries list them. */
extern const struct zcoll__config_field zcoll__config_fields[ZCOLL_CONFIG_NFIELDS];

#endif
