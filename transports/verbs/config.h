/* config.h -- the verbs transport's table of knobs (config.c), for the table of transports
 * (comm/transports.c) to hand to configuration. Needs no libibverbs. */
#ifndef ZCOLL_VERBS_CONFIG_H
#define ZCOLL_VERBS_CONFIG_H

#include "base/config.h"

#define ZCOLL_VERBS_NCONFIG 9

/* Work requests a verbs queue pair needs at least, per direction: the 256 writes in flight
 * to one peer the executor allows (transport.h's put), as many credit returns, and
 * flushes. */
#define ZCOLL_IB_QP_DEPTH_MIN (2 * 256 + 64)

/* IB_DEV to IB_QP_DEPTH, in zcoll_info's order. */
extern const struct zcoll__config_field zcoll__verbs_config[ZCOLL_VERBS_NCONFIG];

#endif
