/*
 * reduce_isa.h -- choosing the instruction-set variant of the reduction kernels.
 *
 * Normally the variant is detected once per process (zcoll__reduce_isa names it). This
 * override exists so that tests can check every variant the machine can run against
 * the same reference, and so that a slower variant can be forced when diagnosing.
 */
#ifndef ZCOLL_REDUCE_ISA_H
#define ZCOLL_REDUCE_ISA_H

#include <stddef.h>

/* Forces "generic", "avx2" or "avx512" for later calls; NULL goes back to detection.
 * Returns 0, or -1 if the name is unknown or this CPU cannot run that variant (the
 * choice is then unchanged). Not to be called while another thread is reducing. */
int zcoll__reduce_set_isa(const char *name);

/* The variants this build has, by space ("generic avx2 avx512"), whatever this CPU runs. */
void zcoll__reduce_isas_built(char *buf, size_t len);

#endif
