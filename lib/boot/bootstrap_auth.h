/*
 * bootstrap_auth.h -- the cryptography of the rendezvous handshake (bootstrap_wire.h
 * lays out the messages): nonces, the two direction-separated HMAC-SHA256 proofs, and
 * the job id digest.
 *
 * The job key is the only secret. The job id is public (a launcher's job id, or
 * ZCOLL_JOB_ID): it keeps two jobs that happen to share a port apart, nothing more.
 */
#ifndef ZCOLL_BOOTSTRAP_AUTH_H
#define ZCOLL_BOOTSTRAP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_wire.h"
#include "zcoll.h"

enum zcoll__bs_dir { ZCOLL_BS_ROOT_TO_RANK, ZCOLL_BS_RANK_TO_ROOT };

/* Fresh random bytes from getrandom(2). */
zcoll_status_t zcoll__bs_nonce(uint8_t out[ZCOLL_BS_NONCE_BYTES]);

/* HMAC-SHA256 under the key over the direction's label and every handshake field. */
zcoll_status_t zcoll__bs_mac(const char *key, enum zcoll__bs_dir dir,
                             const uint8_t jobid[ZCOLL_BS_JOBID_BYTES], uint32_t rank,
                             uint32_t size, const uint8_t nonce_rank[ZCOLL_BS_NONCE_BYTES],
                             const uint8_t nonce_root[ZCOLL_BS_NONCE_BYTES],
                             uint8_t out[ZCOLL_BS_MAC_BYTES]);

/* Constant-time comparison of two MACs; 1 if equal. */
int zcoll__bs_mac_equal(const uint8_t a[ZCOLL_BS_MAC_BYTES], const uint8_t b[ZCOLL_BS_MAC_BYTES]);

/* The job id text: `explicit_id` if not empty, else the launcher's (Open MPI's job id,
 * the PMIx namespace, Slurm's job and step), else "" (every such job alike). Ranks
 * placed by hand (ZCOLL_RANK, PMI_RANK) get "": they may come from different steps. */
void zcoll__bs_job_id(const char *explicit_id, char *out, size_t outlen);
/* Its digest, as carried in the hello. */
zcoll_status_t zcoll__bs_job_digest(const char *job_id, uint8_t out[ZCOLL_BS_JOBID_BYTES]);

#endif
