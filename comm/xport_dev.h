/* comm/xport_dev.h: the device transport's parts (xport_dev.c and the files it names), its
 * state by owner, and the device primitives a kind of device gives it (xport_nccl.c for
 * GPUs, xport_emu.c for emulated devices). Only these files include it.
 *
 * Streams: 0 transfers (exchange, unpack), 1 packs (self copies into the panel, packing
 * for peers) when TESSERA_PGEMM_NCCL_STREAMS=2, else stream 0 does both. Only the thread
 * that calls tess_p?gemm queues work on them. Events: a unit's own (its slot mod NEV), the
 * pack and send hand-over, draining, and with TESSERA_TRACE per slot the start, packed,
 * exchanged and remote-arrived points and the time reference.
 */
#ifndef TESS_XPORT_DEV_H
#define TESS_XPORT_DEV_H

#include "node_comm.h"
#include "redist.h"
#include "xport.h"

#define NEV 8 /* units in flight at most */
enum {
    EV_PACKED = NEV,
    EV_SENT0,
    EV_SENT1,
    EV_DRAIN0,
    EV_DRAIN1,
    EV_REF,
    EV_TS0,
    EV_TP0 = EV_TS0 + NEV,
    EV_TX0 = EV_TP0 + NEV,
    EV_TR0 = EV_TX0 + NEV,
    NXEV = EV_TR0 + NEV
};
enum {
    TAG_REMOTE = 7, /* MPI pieces from ranks of other nodes */
    TAG_NODE = 8,   /* emulated devices: the pieces NCCL would carry */
    TAG_LOST = 9,   /* on ctl: "my device was lost during pass gen" */
};

struct tess__xdev;

/* The device primitives of one kind of device. Streams s are 0 or 1 (x_stream). */
struct tess__xdev_hw {
    const char *name;
    bool lose_on_error; /* a device error while queueing or waiting may leave this rank's
                            part of the node's exchange unrun: tell the peers (GPU) */
    bool int_counts;    /* the node's pieces travel in MPI calls of int counts */
    int64_t min_unit;   /* least bytes per unit */
    /* Streams, events (and the node's communicator over `node`, lsize ranks, this one
     * lrank). Agrees over the grid exactly once, whatever happens. */
    int (*open)(struct tess__xdev *n, MPI_Comm node, int lrank, int lsize);
    bool (*opened)(const struct tess__xdev *n); /* streams and events exist */
    void (*close)(struct tess__xdev *n);        /* after the streams drained */
    int (*setdev)(struct tess__xdev *n);        /* make the device current (thread) */
    /* A 2D copy queued on stream s; kind: TESS__H2D, TESS__D2H or TESS__D2D. */
    int (*copy)(struct tess__xdev *n, int s, int kind, void *dst, size_t dpitch, const void *src,
                size_t spitch, size_t width, size_t height, const char *what);
    int (*record)(struct tess__xdev *n, int s, int ev);
    int (*stream_wait)(struct tess__xdev *n, int s, int ev); /* stream s waits for ev */
    int (*sync)(struct tess__xdev *n, int ev);               /* the caller waits for ev */
    int (*drain)(struct tess__xdev *n); /* everything queued on the streams is done */
    /* The exchange among the ranks of this node, on stream 0 after what is queued there:
     * soff/roff give each grid rank's part of sbuf/rbuf (empty for itself and for ranks of
     * other nodes). */
    int (*exchange)(struct tess__xdev *n, char *sbuf, const size_t *soff, char *rbuf,
                    const size_t *roff);
    /* Pieces to and from ranks of this node (grid ranks), on stream 0 after what is queued
     * there: the sends and receives of one call are one group; the ranks a piece names
     * call with the matching pieces, calls in the same order (comm/dpanel.c). */
    int (*pieces)(struct tess__xdev *n, const struct tess__dpiece *send, int ns,
                  const struct tess__dpiece *recv, int nr);
    int (*async_error)(struct tess__xdev *n); /* an error reported asynchronously; NULL none */
    int (*time)(struct tess__xdev *n, int ev, double *t); /* ev reached, tess__now() clock */
    void (*abort)(struct tess__xdev *n); /* stop this rank's part of the exchange */
};

/* xport_unit.c: the block lists of one (owner, destination) pair, and the self blocks a
 * unit took (for packing from the own panel, TESSERA_PGEMM_PACK_D2D). */
struct tess__xblk {
    int op;
    int64_t sr, sc, tr, tc, rows, cols;
};
struct tess__xblocks {
    struct tess__xblk *b, *self;
    size_t nb, capb, nself, capself;
};

/* xport_unit.c: the device buffers of the exchange, from the runtime's heap. */
struct tess__xbufs {
    void *sbuf, *rbuf, *sbuf2; /* addresses */
    void *sh, *rh, *sh2;       /* their handles (tess__node_work_free) */
    size_t scap, rcap, scap2;
};

/* xport_remote.c: per unit in flight with pieces from ranks of other nodes: what to unpack
 * once its MPI requests are done. */
struct tess__xremote_unit {
    int64_t k0, k1, kbase, s0, s1;
    MPI_Request *req; /* 2 per rank */
    int nreq;
    char *hbuf; /* pinned: the received pieces, rank by rank */
    size_t hcap;
    size_t *hoff; /* per rank: where its pieces start in hbuf */
    int pending;  /* the unit's event is still to be recorded in its wait */
};
struct tess__xremote {
    MPI_Datatype elem; /* one element (es bytes), for the MPI pieces */
    size_t es;
    struct tess__xremote_unit unit[NEV];
};

/* xport_lost.c: a device lost during a unit. */
struct tess__xlost {
    MPI_Comm ctl;   /* a copy of the grid's communicator, for the notices */
    int gen;        /* passes since opened: a notice names the pass it belongs to */
    int fault_unit; /* TESSERA_FAULT=xport:U: this rank's device is lost at unit U */
};

struct tess__xdev {
    struct tess__xport base; /* first; base.dead: the exchange is over */
    const struct tess__xdev_hw *hw;
    void *hwst;                  /* the primitives' own state */
    struct tess__rt *rt;         /* pinned while open */
    bool two;                    /* TESSERA_PGEMM_NCCL_STREAMS=2: a pack stream */
    bool pack_d2d;               /* TESSERA_PGEMM_PACK_D2D */
    bool timed;                  /* TESSERA_TRACE: units' phases on the timeline */
    bool posted;                 /* a unit was posted since opened */
    int *nrank;                  /* per grid rank: its rank in this node's group, -1 on
                                        another node */
    bool remote;                 /* some rank is on another node */
    int err;                     /* the first local error of this pass after its
                                        unit's agreement */
    struct tess__redist_op *ops; /* the call's operands (begin) */
    double t_q0[NEV], t_q1[NEV]; /* timed: when each slot's unit was queued */
    struct tess__xblocks bl;
    struct tess__xbufs buf;
    struct tess__xremote rem;
    struct tess__xlost lost;
};

/* The primitives of each kind; tess__xdev_gpu only where the build has NCCL and CUDA. */
extern const struct tess__xdev_hw tess__xdev_emu;
#ifdef TESS_HAVE_NCCL
extern const struct tess__xdev_hw tess__xdev_gpu;
#endif

static inline int x_stream(const struct tess__xdev *n, int which) { return n->two ? which : 0; }
static inline int x_record(struct tess__xdev *n, int which, int ev) {
    return n->hw->record(n, x_stream(n, which), ev);
}
static inline int x_sync(struct tess__xdev *n, int ev) { return n->hw->sync(n, ev); }

/* xport_unit.c */
int tess__xdev_post(struct tess__xport *x, const struct tess__xport_unit *u, int prior);
int tess__xdev_wait(struct tess__xport *x, int slot);
/* The blocks of pair (orow, ocol) -> (drow, dcol) of unit u into n->bl.b; their bytes, or
 * -1 out of host memory. */
int64_t tess__xdev_blocks(struct tess__xdev *n, int orow, int ocol, int drow, int dcol,
                          const struct tess__xport_unit *u);
enum { FROM_LOCAL, FROM_PACKED, FROM_HOST_PACKED, FROM_PANEL }; /* where a copy reads */
int tess__xdev_copy_blocks(struct tess__xdev *n, const struct tess__xblk *list, size_t nb,
                           int which, int from, const char *packed, char *pack, const char *what);
void tess__xdev_unit_free(struct tess__xdev *n);

/* xport_remote.c: the pieces of ranks of other nodes (MPI, then H2D) */
int tess__xremote_prepare(struct tess__xdev *n, struct tess__xremote_unit *u);
int tess__xremote_post(struct tess__xdev *n, struct tess__xremote_unit *u);
int tess__xremote_finish(struct tess__xdev *n, struct tess__xremote_unit *u, int slot);
int tess__xremote_element(struct tess__xdev *n, size_t es);
void tess__xremote_drop(struct tess__xdev *n); /* finish requests left posted */
void tess__xremote_free(struct tess__xdev *n);

/* xport_lost.c */
int tess__xlost_open(struct tess__xdev *n);
void tess__xlost_close(struct tess__xdev *n);
/* A new pass (slot 0): its number, and TESSERA_FAULT=xport:U read for it. */
void tess__xlost_pass(struct tess__xdev *n);
/* The rank whose notice for this pass arrived (notices of earlier passes are dropped), or
 * -1. */
int tess__xlost_peer(struct tess__xdev *n);
/* The exchange of this transport is over: tell the node's peers when `tell` (this rank's
 * device was lost) and stop this rank's part (hw->abort). Returns st. */
int tess__xlost_lose(struct tess__xdev *n, int st, bool tell);
/* Rank `who`'s device was lost: TESS_EDEVICE, and the exchange is over here too. */
int tess__xlost_peer_status(struct tess__xdev *n, int who);
/* Unit `slot` is where TESSERA_FAULT=xport:U loses this rank's device: the status. */
int tess__xlost_injected(struct tess__xdev *n, int slot);

#endif
