/* config_fields.h -- base's table of ZCOLL_* variables (config_fields.c), in two parts
 * between which the transports' tables are listed (comm/config_api.c gathers them), so
 * that zcoll_info -c keeps its order: the job and how it reaches its peers, then how its
 * collectives run. */
#ifndef ZCOLL_CONFIG_FIELDS_H
#define ZCOLL_CONFIG_FIELDS_H

#include <stddef.h>

#include "config.h"

#define ZCOLL_CONFIG_NJOB 10
#define ZCOLL_CONFIG_NRUN 18

/* RANK to TRANSPORT */
extern const struct zcoll__config_field zcoll__config_fields_job[ZCOLL_CONFIG_NJOB];
/* ALGO to FLIGHT_RECORDER_FILE */
extern const struct zcoll__config_field zcoll__config_fields_run[ZCOLL_CONFIG_NRUN];

#endif
