/* bootstrap_wire.c -- encoding and pure parsers of the rendezvous frames (layout in
 * bootstrap_wire.h). No I/O and no logging here: callers word the error. */
#include "bootstrap_wire.h"

#include <string.h>

#include "zcoll.h"

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void zcoll__bs_put_hdr(uint8_t out[ZCOLL_BS_HDR_BYTES], uint16_t type, uint32_t len) {
  put32(out, ZCOLL_BS_MAGIC);
  out[4] = (uint8_t)ZCOLL_BS_VERSION, out[5] = (uint8_t)(ZCOLL_BS_VERSION >> 8);
  out[6] = (uint8_t)type, out[7] = (uint8_t)(type >> 8);
  put32(out + 8, len);
  put32(out + 12, 0);
}

int zcoll__bs_parse_hdr(const uint8_t *buf, size_t n, uint32_t max, struct zcoll__bs_hdr *out,
                        const char **why) {
  if (n < ZCOLL_BS_HDR_BYTES) {
    *why = "truncated message header";
    return -1;
  }
  struct zcoll__bs_hdr h = {get32(buf), (uint16_t)(buf[4] | buf[5] << 8),
                            (uint16_t)(buf[6] | buf[7] << 8), get32(buf + 8)};
  if (h.magic != ZCOLL_BS_MAGIC) {
    *why = "not a zcoll rendezvous message (bad magic number)";
    return -1;
  }
  /* The version is checked before anything else is read: another version may lay
   * out everything after the header differently. */
  if (h.version != ZCOLL_BS_VERSION) {
    *why = "another zcoll rendezvous protocol version";
    return -1;
  }
  if (h.len > max) {
    *why = "message longer than allowed here";
    return -1;
  }
  *out = h;
  return 0;
}

long zcoll__bs_frame_need(const uint8_t *buf, size_t have, uint32_t max, const char **why) {
  if (have < ZCOLL_BS_HDR_BYTES) return ZCOLL_BS_HDR_BYTES;
  struct zcoll__bs_hdr h;
  if (zcoll__bs_parse_hdr(buf, have, max, &h, why)) return -1;
  return (long)ZCOLL_BS_HDR_BYTES + (long)h.len;
}

void zcoll__bs_put_hello(uint8_t out[ZCOLL_BS_HELLO_BYTES], const struct zcoll__bs_hello *h) {
  put32(out, h->rank);
  put32(out + 4, h->size);
  memcpy(out + 8, h->jobid, ZCOLL_BS_JOBID_BYTES);
  memcpy(out + 8 + ZCOLL_BS_JOBID_BYTES, h->nonce, ZCOLL_BS_NONCE_BYTES);
}

int zcoll__bs_parse_hello(const uint8_t *p, size_t len, struct zcoll__bs_hello *out,
                          const char **why) {
  if (len != ZCOLL_BS_HELLO_BYTES) {
    *why = "a hello of the wrong length";
    return -1;
  }
  out->rank = get32(p);
  out->size = get32(p + 4);
  memcpy(out->jobid, p + 8, ZCOLL_BS_JOBID_BYTES);
  memcpy(out->nonce, p + 8 + ZCOLL_BS_JOBID_BYTES, ZCOLL_BS_NONCE_BYTES);
  return 0;
}

int zcoll__bs_parse_challenge(const uint8_t *p, size_t len, struct zcoll__bs_challenge *out,
                              const char **why) {
  if (len != ZCOLL_BS_CHALLENGE_BYTES) {
    *why = "a challenge of the wrong length";
    return -1;
  }
  memcpy(out->nonce, p, ZCOLL_BS_NONCE_BYTES);
  memcpy(out->mac, p + ZCOLL_BS_NONCE_BYTES, ZCOLL_BS_MAC_BYTES);
  return 0;
}

int zcoll__bs_parse_proof(const uint8_t *p, size_t len, uint8_t mac[ZCOLL_BS_MAC_BYTES],
                          const char **why) {
  if (len != ZCOLL_BS_PROOF_BYTES) {
    *why = "a proof of the wrong length";
    return -1;
  }
  memcpy(mac, p, ZCOLL_BS_MAC_BYTES);
  return 0;
}

void zcoll__bs_parse_abort(const uint8_t *p, size_t len, uint32_t default_origin,
                           struct zcoll__bs_abort *out) {
  memset(out, 0, sizeof(*out));
  out->origin = default_origin;
  out->status = ZCOLL_ERR_PEER_FAILED;
  strcpy(out->text, "no reason given");
  if (len >= 4) out->origin = get32(p);
  if (len >= 8) out->status = get32(p + 4);
  if (len > 8) {
    size_t n = len - 8 < sizeof(out->text) - 1 ? len - 8 : sizeof(out->text) - 1;
    memcpy(out->text, p + 8, n);
    out->text[n] = '\0';
  }
}

void zcoll__bs_put_abort(uint8_t out[sizeof(struct zcoll__bs_abort)],
                         const struct zcoll__bs_abort *a) {
  put32(out, a->origin);
  put32(out + 4, a->status);
  memcpy(out + 8, a->text, sizeof(a->text));
}

void zcoll__bs_put_bye(uint8_t out[ZCOLL_BS_BYE_BYTES], uint64_t ncolls) {
  put32(out, (uint32_t)ncolls);
  put32(out + 4, (uint32_t)(ncolls >> 32));
}

int zcoll__bs_parse_bye(const uint8_t *p, size_t len, uint64_t *ncolls, const char **why) {
  if (len != ZCOLL_BS_BYE_BYTES) {
    *why = "a goodbye of the wrong length";
    return -1;
  }
  *ncolls = (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
  return 0;
}

void zcoll__bs_put_left(uint8_t out[ZCOLL_BS_LEFT_BYTES], uint32_t rank, uint64_t ncolls) {
  put32(out, rank);
  zcoll__bs_put_bye(out + 4, ncolls);
}

int zcoll__bs_parse_left(const uint8_t *p, size_t len, uint32_t *rank, uint64_t *ncolls,
                         const char **why) {
  if (len != ZCOLL_BS_LEFT_BYTES) {
    *why = "a departure notice of the wrong length";
    return -1;
  }
  *rank = get32(p);
  return zcoll__bs_parse_bye(p + 4, len - 4, ncolls, why);
}

void zcoll__bs_abort_text(struct zcoll__bs_abort *a, const char *text) {
  static const char more[] = "\xe2\x80\xa6"; /* U+2026, in UTF-8 */
  size_t n = strlen(text), room = sizeof(a->text) - 1;
  if (n <= room) {
    memcpy(a->text, text, n + 1);
    return;
  }
  size_t cut = room - (sizeof(more) - 1);
  size_t at = cut;
  while (at > cut / 2 && text[at] != ' ') at--; /* text[cut] is a space: a whole word fits */
  if (text[at] != ' ') /* one long word: cut it, but not inside a UTF-8 sequence */
    for (at = cut; at > 0 && ((unsigned char)text[at] & 0xc0) == 0x80; at--) {
    }
  while (at > 0 && (text[at - 1] == ' ' || text[at - 1] == ',')) at--;
  memcpy(a->text, text, at);
  memcpy(a->text + at, more, sizeof(more));
}
