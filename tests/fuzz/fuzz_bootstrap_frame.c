/*
 * libFuzzer target: the rendezvous frame, handshake, goodbye and departure parsers
 * (lib/boot/bootstrap_wire.c).
 * These read bytes from anyone who can reach rank 0's port, before any authentication,
 * so they must never read out of bounds, hang or crash, whatever they are fed.
 *
 * The input is read the way rank 0 reads a stranger: piecewise through
 * zcoll__bs_frame_need, then as a whole frame dispatched on its type; every payload
 * parser is also run on the raw bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "boot/bootstrap_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The limits rank 0 uses before a peer has authenticated, and after. */
static const uint32_t limits[] = {ZCOLL_BS_HELLO_BYTES, 4096, 64u << 20};

static void payloads(const uint8_t *p, size_t len) {
  const char *why = NULL;
  struct zcoll__bs_hello h;
  struct zcoll__bs_challenge c;
  struct zcoll__bs_abort a;
  uint8_t mac[ZCOLL_BS_MAC_BYTES];
  if (!zcoll__bs_parse_hello(p, len, &h, &why)) {
    uint8_t again[ZCOLL_BS_HELLO_BYTES];
    zcoll__bs_put_hello(again, &h);
    if (memcmp(again, p, sizeof(again)) != 0) __builtin_trap(); /* lossless round trip */
  }
  zcoll__bs_parse_challenge(p, len, &c, &why);
  zcoll__bs_parse_proof(p, len, mac, &why);
  zcoll__bs_parse_abort(p, len, 7, &a);
  if (strnlen(a.text, sizeof(a.text)) == sizeof(a.text)) __builtin_trap(); /* terminated */
  uint64_t n;
  uint32_t rank;
  if (!zcoll__bs_parse_bye(p, len, &n, &why)) {
    uint8_t again[ZCOLL_BS_BYE_BYTES];
    zcoll__bs_put_bye(again, n);
    if (memcmp(again, p, sizeof(again)) != 0) __builtin_trap();
  }
  if (!zcoll__bs_parse_left(p, len, &rank, &n, &why)) {
    uint8_t again[ZCOLL_BS_LEFT_BYTES];
    zcoll__bs_put_left(again, rank, n);
    if (memcmp(again, p, sizeof(again)) != 0) __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
    const char *why = NULL;
    /* Piecewise, as bytes trickle in. */
    for (size_t have = 0; have <= size && have <= ZCOLL_BS_MAX_HANDSHAKE_FRAME; have++) {
      long need = zcoll__bs_frame_need(data, have, limits[l], &why);
      if (need < 0 || (size_t)need <= have) break;
      if (need < (long)ZCOLL_BS_HDR_BYTES || need > (long)ZCOLL_BS_HDR_BYTES + (long)limits[l])
        __builtin_trap(); /* a frame never asks for more than its limit */
    }
    struct zcoll__bs_hdr h;
    if (zcoll__bs_parse_hdr(data, size, limits[l], &h, &why)) continue;
    if (h.len > limits[l]) __builtin_trap();
    if (size - ZCOLL_BS_HDR_BYTES < h.len) continue; /* incomplete */
    payloads(data + ZCOLL_BS_HDR_BYTES, h.len);
  }
  payloads(data, size);
  return 0;
}
