/* comm/xport.h: the transport interface: how the pieces of the distributed GEMM's operand
 * panels travel from the ranks that own them to the ranks that need them, one pipeline
 * unit at a time. Implementations, each in its own file:
 *   xport_mpi.c   MPI through host memory: one MPI_Ialltoallw per unit (redist.c's datatypes)
 *   xport_dev.c   panels in device memory, units packed, sent and unpacked on the device's
 *                 streams (xport_unit.c; ranks of other nodes: xport_remote.c; a device
 *                 lost mid-unit: xport_lost.c), on one of two sets of device primitives:
 *                 xport_nccl.c (GPUs: CUDA copies, NCCL) or xport_emu.c (emulated devices,
 *                 CI: the backend's copies, MPI standing in for NCCL)
 * A grid's transport (g->xport, xport.c) is chosen at its first exchange, the same kind on
 * every rank. A call: alloc panels, begin, units posted in order (slot 0 starts a pass)
 * with at most in_flight not waited for, each waited for in order, end, free. Used by one
 * thread at a time (the caller of tess_p?gemm).
 */
#ifndef TESS_XPORT_H
#define TESS_XPORT_H

#include "comm.h"

struct tess__redist_op;

/* One unit: k in [k0, k1) (panel index k - kbase) and selected panel positions [s0, s1)
 * of every operand that moves; slot: its number in the pass. */
struct tess__xport_unit {
    int64_t k0, k1, kbase, s0, s1;
    int slot;
};

struct tess__xport;
struct tess__xport_ops {
    const char *name;
    /* Whether it must be opened anew (the runtime it holds is gone); NULL: never. Local;
     * tess__xport_get agrees on it. */
    bool (*stale)(const struct tess__xport *x);
    /* Panel memory of `bytes` (0: *ptr may be NULL): host or device[dev]; *handle for free
     * (NULL: nothing to free). */
    int (*alloc)(struct tess__xport *x, size_t bytes, void **ptr, void **handle);
    void (*free)(struct tess__xport *x, void *handle);
    /* A call's exchange of the nops operands ops (their buf, ldbuf set before each pass). */
    int (*begin)(struct tess__xport *x, struct tess__redist_op *ops, int nops);
    /* Queue unit u. Collective over the grid. prior: the caller's last wait status; a
     * transport that agrees per unit (device) returns the agreed status of prior, earlier
     * units and this one's preparation, and then nothing of it was queued anywhere; the MPI
     * one returns prior unposted. */
    int (*post)(struct tess__xport *x, const struct tess__xport_unit *u, int prior);
    /* Wait for unit `slot`: it is in the panels. */
    int (*wait)(struct tess__xport *x, int slot);
    void (*end)(struct tess__xport *x);
    void (*close)(struct tess__xport *x);
};

/* What every transport tells its caller; set when opened unless said otherwise. */
struct tess__xport {
    const struct tess__xport_ops *ops;
    struct tess__comm_grid *g;
    int size;             /* ranks in g->comm */
    int *prow, *pcol;     /* each rank's grid coordinates */
    int dev;              /* runtime device whose memory holds the panels; -1: host memory */
    size_t heap;          /* that device's heap bytes; 0 for host memory */
    int in_flight;        /* units posted before the oldest is waited for */
    int unit_buffers;     /* device buffers of one unit beside the panels (<= unit bytes) */
    int64_t min_unit;     /* least bytes per unit (TESSERA_PGEMM_CHUNK is raised to it) */
    bool dead;            /* its exchange is over (a device lost): closed after the call */
    uint64_t sent, recvd; /* bytes to and from other ranks since begin */
    uint64_t packed_d2d;  /* bytes packed for peers from the own panel since opened */
};

/* The grid's transport (collective over g->comm): opened at the grid's first exchange, the
 * device transport where every rank can take it, else MPI; an error opening it is agreed
 * (and MPI carries the grid's later calls). */
int tess__xport_get(struct tess__comm_grid *g, struct tess__xport **out);
/* After a call that failed (status agreed): if a device was lost during an exchange
 * anywhere, every rank closes the grid's transport; the next call opens one. Collective. */
int tess__xport_after_failure(struct tess__comm_grid *g);
/* Close the grid's transport (tess_grid_free). */
void tess__xport_drop(struct tess__comm_grid *g);

/* One transport of a kind, opened for the caller (collective, status agreed). The device
 * transport answers TESS_ENOSYS on every rank when any rank cannot use it (no NCCL/CUDA in
 * the build or knob off, TESSERA_PGEMM_NCCL=0, no GPU as runtime device 0; emulated devices
 * with TESSERA_PGEMM_NCCL=2) or ranks differ in that. */
int tess__xport_open_mpi(struct tess__comm_grid *g, struct tess__xport **out);
int tess__xport_open_dev(struct tess__comm_grid *g, struct tess__xport **out);
void tess__xport_close(struct tess__xport *x); /* NULL: nothing */

/* For the implementations: fill size, prow, pcol of x from its grid. */
int tess__xport_base_init(struct tess__xport *x, struct tess__comm_grid *g);
void tess__xport_base_free(struct tess__xport *x);

static inline int tess__xport_alloc(struct tess__xport *x, size_t bytes, void **ptr,
                                    void **handle) {
    return x->ops->alloc(x, bytes, ptr, handle);
}
static inline void tess__xport_free(struct tess__xport *x, void *handle) {
    x->ops->free(x, handle);
}
static inline int tess__xport_begin(struct tess__xport *x, struct tess__redist_op *ops, int nops) {
    x->sent = x->recvd = 0;
    return x->ops->begin(x, ops, nops);
}
static inline int tess__xport_post(struct tess__xport *x, const struct tess__xport_unit *u,
                                   int prior) {
    return x->ops->post(x, u, prior);
}
static inline int tess__xport_wait(struct tess__xport *x, int slot) {
    return x->ops->wait(x, slot);
}
static inline void tess__xport_end(struct tess__xport *x) { x->ops->end(x); }

#endif
