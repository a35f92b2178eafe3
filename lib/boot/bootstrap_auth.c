/* bootstrap_auth.c -- nonces, HMAC proofs and the job id of the rendezvous handshake. */
#include "bootstrap_auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/log.h"

/* Distinct labels per direction: rank 0's proof can never pass for a rank's. */
static const char label_root[] = "zcoll rendezvous v2: rank 0 to rank";
static const char label_rank[] = "zcoll rendezvous v2: rank to rank 0";

zcoll_status_t zcoll__bs_nonce(uint8_t out[ZCOLL_BS_NONCE_BYTES]) {
  size_t got = 0;
  while (got < ZCOLL_BS_NONCE_BYTES) {
    ssize_t n = getrandom(out + got, ZCOLL_BS_NONCE_BYTES - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: getrandom failed: %s", strerror(errno));
    got += (size_t)n;
  }
  return ZCOLL_OK;
}

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

zcoll_status_t zcoll__bs_mac(const char *key, enum zcoll__bs_dir dir,
                             const uint8_t jobid[ZCOLL_BS_JOBID_BYTES], uint32_t rank,
                             uint32_t size, const uint8_t nonce_rank[ZCOLL_BS_NONCE_BYTES],
                             const uint8_t nonce_root[ZCOLL_BS_NONCE_BYTES],
                             uint8_t out[ZCOLL_BS_MAC_BYTES]) {
  const char *label = dir == ZCOLL_BS_ROOT_TO_RANK ? label_root : label_rank;
  uint8_t msg[sizeof(label_root) + ZCOLL_BS_JOBID_BYTES + 8 + (size_t)2 * ZCOLL_BS_NONCE_BYTES];
  size_t off = 0;
  memcpy(msg, label, sizeof(label_root)), off += sizeof(label_root); /* with its NUL */
  memcpy(msg + off, jobid, ZCOLL_BS_JOBID_BYTES), off += ZCOLL_BS_JOBID_BYTES;
  put32(msg + off, rank), off += 4;
  put32(msg + off, size), off += 4;
  memcpy(msg + off, nonce_rank, ZCOLL_BS_NONCE_BYTES), off += ZCOLL_BS_NONCE_BYTES;
  memcpy(msg + off, nonce_root, ZCOLL_BS_NONCE_BYTES), off += ZCOLL_BS_NONCE_BYTES;
  unsigned int len = 0;
  /* An empty key is a valid HMAC key: the unauthenticated mode runs the same code. */
  static const unsigned char none[1];
  size_t keylen = strlen(key);
  if (!HMAC(EVP_sha256(), keylen ? (const void *)key : none, (int)keylen, msg, off, out, &len) ||
      len != ZCOLL_BS_MAC_BYTES)
    return zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: HMAC-SHA256 failed (libcrypto)");
  return ZCOLL_OK;
}

int zcoll__bs_mac_equal(const uint8_t a[ZCOLL_BS_MAC_BYTES], const uint8_t b[ZCOLL_BS_MAC_BYTES]) {
  return CRYPTO_memcmp(a, b, ZCOLL_BS_MAC_BYTES) == 0;
}

void zcoll__bs_job_id(const char *explicit_id, char *out, size_t outlen) {
  const char *v;
  if (explicit_id && explicit_id[0]) {
    snprintf(out, outlen, "%s", explicit_id);
  } else if ((v = getenv("OMPI_MCA_ess_base_jobid")) && v[0]) {
    /* First: mpirun's ranks inside a Slurm allocation carry Slurm's variables too,
     * with different step ids on the mpirun node and the others. */
    snprintf(out, outlen, "ompi:%s", v);
  } else if (getenv("ZCOLL_RANK") || getenv("PMI_RANK")) { /* NOLINT(bugprone-branch-clone) */
    /* The same as the last branch, but first: it must win over PMIX_NAMESPACE and Slurm's. */
    /* Ranks placed by hand (perhaps one srun step each) or by MPICH's hydra share no
     * launcher id that we know of: guessing one could split a job. */
    snprintf(out, outlen, "%s", "");
  } else if ((v = getenv("PMIX_NAMESPACE")) && v[0]) {
    snprintf(out, outlen, "pmix:%s", v);
  } else if ((v = getenv("SLURM_JOB_ID")) && v[0] && getenv("SLURM_PROCID")) {
    /* Steps of one allocation are separate jobs: two srun steps may share a port. */
    const char *step = getenv("SLURM_STEP_ID");
    snprintf(out, outlen, "slurm:%s.%s", v, step ? step : "");
  } else {
    snprintf(out, outlen, "%s", "");
  }
}

zcoll_status_t zcoll__bs_job_digest(const char *job_id, uint8_t out[ZCOLL_BS_JOBID_BYTES]) {
  static const char label[] = "zcoll job id";
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
           EVP_DigestUpdate(ctx, label, sizeof(label)) &&
           EVP_DigestUpdate(ctx, job_id, strlen(job_id)) && EVP_DigestFinal_ex(ctx, out, &len) &&
           len == ZCOLL_BS_JOBID_BYTES;
  EVP_MD_CTX_free(ctx);
  return ok ? ZCOLL_OK : zcoll__fail(ZCOLL_ERR_BOOTSTRAP, "bootstrap: SHA-256 failed (libcrypto)");
}
