/*
 * wire.h -- wiring a new communicator: hosts, transports, channels (comm_setup.c,
 * comm_hosts.c, comm_summary.c).
 */
#ifndef ZCOLL_WIRE_H
#define ZCOLL_WIRE_H

#include <stdint.h>

#include "core/comm.h"

/* Wires a new communicator (comm_setup.c): finds each rank's host, picks and opens the
 * transport for each peer, and sets up the channels. */
zcoll_status_t zcoll__comm_wire(zcoll_comm_t *comm);
/* The first rounds of the wiring (comm_hosts.c): comm->host_of and nhosts, what every
 * rank can run (masks, of zcoll__transports indices) on its own host, and rank 0's
 * geometry; *net_round: whether some pair needs a network transport, then
 * zcoll__wire_nets (collective: every rank calls it, probing only where `need`) adds what
 * each can run across hosts and gives the geometry anew. */
zcoll_status_t zcoll__wire_hosts(zcoll_comm_t *comm, unsigned *masks, uint64_t *chunk,
                                 uint32_t *depth, int *net_round);
zcoll_status_t zcoll__wire_nets(zcoll_comm_t *comm, unsigned *masks, int need, uint64_t *chunk,
                                uint32_t *depth);
/* The line a ready communicator logs at info (comm_summary.c): each peer's transport and
 * device, chunk and depth, and why the transports probed and refused cannot run. */
void zcoll__comm_log_summary(const zcoll_comm_t *comm);

#endif
