/*
 * bootstrap_wire.h -- the rendezvous wire format, written down once.
 *
 * Every message is a frame: a 16-byte header and at most a per-context maximum of
 * payload bytes. All integers are little-endian.
 *
 *   header   u32 magic "ZCLB" | u16 version | u16 type | u32 payload length | u32 zero
 *
 * The handshake (rank r connects to rank 0; the job key K never crosses the wire):
 *
 *   r -> 0   HELLO      u32 rank | u32 size | job id digest[32] | nonce_r[32]
 *   0 -> r   CHALLENGE  nonce_0[32] | HMAC(K, "root->rank" label, fields)[32]
 *   r -> 0   PROOF      HMAC(K, "rank->root" label, fields)[32]
 *   0 -> r   WELCOME (empty) or REJECT (reason text)
 *
 * where fields = job id digest | rank | size | nonce_r | nonce_0. Each side proves it
 * knows K over a nonce the other side just chose, and the two directions use different
 * labels, so neither a recorded nor a reflected MAC verifies. The job id digest is not
 * a secret: it only lets two jobs that share a port tell each other's hellos apart.
 *
 * After the handshake: GATHER/GATHERED (allgather through rank 0), ABORT (u32 origin,
 * u32 status, text), BYE (u64 collectives made) / BYE_ACK (the final barrier), LEFT
 * (rank 0 to the others: u32 rank | u64 collectives -- that rank is in
 * zcoll_comm_destroy after making that many collectives, and will make no more).
 *
 * The parsers here are pure (bytes in, struct or a reason out), so that a fuzzer can
 * drive them and the socket code never interprets bytes itself.
 */
#ifndef ZCOLL_BOOTSTRAP_WIRE_H
#define ZCOLL_BOOTSTRAP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define ZCOLL_BS_MAGIC 0x5a434c42u /* "ZCLB" */
/* 3: BYE carries the collectives made, LEFT exists; a version-2 rank would send an empty
 * BYE (refused at destroy) and take a LEFT for rank 0's answer to its goodbye (leaving
 * the final barrier early). 2: the challenge-response handshake; 1 sent the key itself. */
#define ZCOLL_BS_VERSION 3u
#define ZCOLL_BS_HDR_BYTES 16u
#define ZCOLL_BS_NONCE_BYTES 32u
#define ZCOLL_BS_MAC_BYTES 32u
#define ZCOLL_BS_JOBID_BYTES 32u

enum zcoll__bs_type {
  ZCOLL_BS_HELLO = 1,
  ZCOLL_BS_WELCOME,
  ZCOLL_BS_REJECT,
  ZCOLL_BS_GATHER,
  ZCOLL_BS_GATHERED,
  ZCOLL_BS_ABORT,
  ZCOLL_BS_BYE,
  ZCOLL_BS_BYE_ACK,
  ZCOLL_BS_CHALLENGE,
  ZCOLL_BS_PROOF,
  ZCOLL_BS_CTL, /* a message of a layer above (tasks.c), between rank 0 and one rank */
  ZCOLL_BS_LEFT
};

#define ZCOLL_BS_BYE_BYTES 8u
#define ZCOLL_BS_LEFT_BYTES 12u

#define ZCOLL_BS_HELLO_BYTES (8u + ZCOLL_BS_JOBID_BYTES + ZCOLL_BS_NONCE_BYTES)
#define ZCOLL_BS_CHALLENGE_BYTES (ZCOLL_BS_NONCE_BYTES + ZCOLL_BS_MAC_BYTES)
#define ZCOLL_BS_PROOF_BYTES ZCOLL_BS_MAC_BYTES
/* The largest frame a stranger may make rank 0 buffer before it has authenticated. */
#define ZCOLL_BS_MAX_HANDSHAKE_FRAME (ZCOLL_BS_HDR_BYTES + ZCOLL_BS_HELLO_BYTES)

struct zcoll__bs_hdr {
  uint32_t magic;
  uint16_t version, type;
  uint32_t len;
};

struct zcoll__bs_hello {
  uint32_t rank, size;
  uint8_t jobid[ZCOLL_BS_JOBID_BYTES];
  uint8_t nonce[ZCOLL_BS_NONCE_BYTES];
};

struct zcoll__bs_challenge {
  uint8_t nonce[ZCOLL_BS_NONCE_BYTES];
  uint8_t mac[ZCOLL_BS_MAC_BYTES];
};

struct zcoll__bs_abort {
  uint32_t origin, status;
  char text[200]; /* NUL-terminated */
};

void zcoll__bs_put_hdr(uint8_t out[ZCOLL_BS_HDR_BYTES], uint16_t type, uint32_t len);
/* Parses a header from the first ZCOLL_BS_HDR_BYTES of buf (n >= that). Returns 0, or
 * -1 with *why set: bad magic, another protocol version, a payload over max. */
int zcoll__bs_parse_hdr(const uint8_t *buf, size_t n, uint32_t max, struct zcoll__bs_hdr *out,
                        const char **why);
/* For reading a frame piecewise: how many bytes the frame that starts at buf needs in
 * all, given the `have` bytes received so far (ZCOLL_BS_HDR_BYTES until the header is
 * in). -1 with *why set if the header is already unacceptable. */
long zcoll__bs_frame_need(const uint8_t *buf, size_t have, uint32_t max, const char **why);

void zcoll__bs_put_hello(uint8_t out[ZCOLL_BS_HELLO_BYTES], const struct zcoll__bs_hello *h);
int zcoll__bs_parse_hello(const uint8_t *p, size_t len, struct zcoll__bs_hello *out,
                          const char **why);
int zcoll__bs_parse_challenge(const uint8_t *p, size_t len, struct zcoll__bs_challenge *out,
                              const char **why);
int zcoll__bs_parse_proof(const uint8_t *p, size_t len, uint8_t mac[ZCOLL_BS_MAC_BYTES],
                          const char **why);
/* Any length is accepted (a short one keeps the defaults); the text is terminated. */
void zcoll__bs_parse_abort(const uint8_t *p, size_t len, uint32_t default_origin,
                           struct zcoll__bs_abort *out);
void zcoll__bs_put_abort(uint8_t out[sizeof(struct zcoll__bs_abort)],
                         const struct zcoll__bs_abort *a);
void zcoll__bs_put_bye(uint8_t out[ZCOLL_BS_BYE_BYTES], uint64_t ncolls);
int zcoll__bs_parse_bye(const uint8_t *p, size_t len, uint64_t *ncolls, const char **why);
void zcoll__bs_put_left(uint8_t out[ZCOLL_BS_LEFT_BYTES], uint32_t rank, uint64_t ncolls);
int zcoll__bs_parse_left(const uint8_t *p, size_t len, uint32_t *rank, uint64_t *ncolls,
                         const char **why);
/* text into an abort's, whole if it fits, else cut at a word boundary and ended with "…":
 * the peers read it as the reason, and a reason cut mid-word reads as a wrong one. */
void zcoll__bs_abort_text(struct zcoll__bs_abort *a, const char *text);

#endif
