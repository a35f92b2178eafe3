/* hca.c -- ZCOLL_IB_HCA's lists (hca.h). */
#include "hca.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Device names are the kernel's: letters, digits, '_', '-', '.'. */
static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

int zcoll__hca_parse(const char *text, struct zcoll__hca_spec *spec, char *why, size_t why_len) {
  memset(spec, 0, sizeof(*spec));
  const char *s = text;
  if (*s == '^') spec->exclude = 1, s++;
  if (*s == '=') spec->exact = 1, s++;
  if (!*s) {
    if (s == text) return 0; /* "": every device */
    snprintf(why, why_len, "a list of devices must follow '%.*s'", (int)(s - text), text);
    return -1;
  }
  for (;;) {
    if (spec->n == ZCOLL_HCA_MAX) {
      snprintf(why, why_len, "more than %d devices", ZCOLL_HCA_MAX);
      return -1;
    }
    size_t len = 0;
    while (name_char(s[len])) len++;
    if (len == 0 || len >= sizeof(spec->e[0].name)) {
      snprintf(why, why_len, "entry %d: %s", spec->n + 1,
               len ? "a device name longer than 63 characters"
                   : "a device name (letters, digits, '_', '-', '.') expected");
      return -1;
    }
    memcpy(spec->e[spec->n].name, s, len);
    spec->e[spec->n].name[len] = '\0';
    s += len;
    if (*s == ':') {
      char *end;
      long port = strtol(s + 1, &end, 10);
      if (end == s + 1 || port < 1 || port > 255 || (*end && *end != ',')) {
        snprintf(why, why_len, "entry %d (%s): the port must be a number 1..255", spec->n + 1,
                 spec->e[spec->n].name);
        return -1;
      }
      spec->e[spec->n].port = (int)port;
      s = end;
    }
    spec->n++;
    if (!*s) return 0;
    if (*s != ',') {
      snprintf(why, why_len, "entry %d: unexpected '%c'", spec->n, *s);
      return -1;
    }
    s++;
  }
}

int zcoll__hca_match(const struct zcoll__hca_spec *spec, const char *dev, int port) {
  if (spec->n == 0) return 1;
  int listed = 0;
  for (int i = 0; i < spec->n && !listed; i++) {
    const char *name = spec->e[i].name;
    int same = spec->exact ? strcmp(dev, name) == 0 : strncmp(dev, name, strlen(name)) == 0;
    listed = same && (spec->e[i].port == 0 || spec->e[i].port == port);
  }
  return spec->exclude ? !listed : listed;
}
