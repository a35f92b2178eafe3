/*
 * tasks.h -- the vector interface's control protocol (tasks.c, tasks_seq.c).
 *
 * Ranks agree on the order of the keys' allreduces through rank 0, over the rendezvous
 * connections (zcoll__bootstrap_ctl_*): every rank tells rank 0 of each key it
 * initializes (INIT: what it is, how many tasks it hosts), each round it has all its
 * tasks' commits for (READY) and each key it frees (FREE); when every rank has
 * initialized a key alike and is ready for its next round, rank 0 tells every rank, in
 * one order, to start that round's allreduce (GO, with the global number of tasks), or
 * that the ranks disagree on the key (REFUSE). Every rank starts the allreduces in the
 * order of the GOs, which is the same everywhere: the order collectives need.
 */
#ifndef ZCOLL_VEC_H
#define ZCOLL_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "zcoll.h"

#define ZCOLL_VEC_KEY_MAX 64 /* with its NUL */

enum { ZCOLL_VM_INIT = 1, ZCOLL_VM_READY, ZCOLL_VM_FREE, ZCOLL_VM_GO, ZCOLL_VM_REFUSE };

struct zcoll__vec_msg {
  uint32_t kind, round, tasks, dtype, op, op_tag;
  uint64_t count, total; /* total: GO's global number of tasks */
  char key[ZCOLL_VEC_KEY_MAX];
  char why[256]; /* REFUSE */
};
#define ZCOLL_VM_BYTES (6 * 4 + 2 * 8 + ZCOLL_VEC_KEY_MAX + 256)

void zcoll__vm_pack(const struct zcoll__vec_msg *m, uint8_t wire[ZCOLL_VM_BYTES]);
/* 0, or -1 if the bytes are not a message of this version. */
int zcoll__vm_unpack(const void *wire, uint32_t len, struct zcoll__vec_msg *m);

/* Rank 0's sequencer (tasks_seq.c). */
struct zcoll__vec_seq;
typedef zcoll_status_t (*zcoll__vm_send_fn)(void *arg, int to, const struct zcoll__vec_msg *m);
/* Takes rank from's INIT, READY or FREE; sends GOs and REFUSEs to every rank (to 0: this
 * rank itself) through send. *seq is created on first use. */
zcoll_status_t zcoll__vec_seq_take(struct zcoll__vec_seq **seq, int size, int from,
                                   const struct zcoll__vec_msg *m, zcoll__vm_send_fn send,
                                   void *arg);
/* What the key's round still waits for, for a timeout's message. */
void zcoll__vec_seq_why(const struct zcoll__vec_seq *seq, int size, const char *key, uint32_t round,
                        char *buf, size_t len);
void zcoll__vec_seq_free(struct zcoll__vec_seq *seq);

/* The vector interface (tasks.c): one pass of its sequencer and requests (entered, or
 * under the progress thread's lock); and its release at destroy or abort. */
struct zcoll__vecs;
zcoll_status_t zcoll__vecs_pump(zcoll_comm_t *comm, int *progress);
void zcoll__vecs_release(zcoll_comm_t *comm);

#endif
