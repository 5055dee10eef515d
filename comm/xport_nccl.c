/* comm/xport_nccl.c: the GPU transport of the distributed GEMM, for grids whose ranks each
 * drive a GPU: panels land in device memory, where the node runtime reads them as tiles
 * homed on the device (cache: TESS__HOME_DEV). Between ranks of one node they travel GPU to
 * GPU over NCCL (NVLink where there is one), never through host memory; from ranks of
 * other nodes over MPI (host memory: Open MPI here is not CUDA-aware): the owner sends
 * straight from its local array through a derived datatype, the receiver lands the pieces
 * in a pinned host buffer and copies them H2D into the panel once they arrived. The NCCL
 * communicator spans the node (MPI_COMM_TYPE_SHARED; TESSERA_PGEMM_NODE_RANKS=r groups
 * every r consecutive ranks of the grid instead, to run the multi-node path on one node).
 *
 * One exchange (one pipeline unit of pgemm.c) on the transport's stream, for every peer:
 *   pack     the pieces this rank owns and the peer needs: 2D H2D copies from the local
 *            array into a packed send buffer (device), in tess__redist_blocks' order;
 *   self     the pieces this rank owns and needs itself: H2D straight into its panel;
 *   send     ncclSend/ncclRecv of the packed pieces, all peers in one group;
 *   unpack   2D D2D copies from the receive buffer into the panel;
 *   remote   MPI_Isend/MPI_Irecv with the ranks of other nodes, posted with the unit;
 * then an event: when it completes, the unit is in the panel (pgemm.c raises the job's
 * ready count). A unit with remote pieces records its event in tess__nccl_wait, after the
 * MPI requests completed and the H2D copies of the received pieces were queued. With
 * TESSERA_PGEMM_NCCL_STREAMS=2 the H2D copies (self, pack) run on a second stream into one
 * of two send buffers (by unit parity), so unit u+1 is packed while unit u travels: the
 * transfer stream waits for the unit's pack (event `packed`), the pack stream for the end
 * of the send that last read its buffer (event `sent`). Buffers (panel, send, receive) come
 * from the runtime's heap on the rank's first GPU (tess__cache_alloc_work), so they count
 * against the same memory as tiles.
 *
 * Emulated devices (TESSERA_PGEMM_NCCL=2, every rank's first device emulated: the tests).
 * The same units through the same code, but the copies and events go through the backend
 * (host.c: asynchronous stream threads, device pointers checked against the arena) on the
 * device's TESS_COMM_STREAMS streams, and MPI stands in for NCCL: the calling thread waits
 * for the unit's pack, exchanges the packed pieces with MPI_Isend/MPI_Irecv between the
 * arenas (host memory there), then queues the unpack. Only the device primitives below
 * (x_*) tell the two apart; what they share is the block lists, offsets and order of
 * every copy, which is what the tests check against ScaLAPACK.
 *
 * A rank whose device is lost during a unit tells its node's peers, which stop waiting
 * for it (see "A device lost during a unit" below); the transport is then reopened.
 *
 * The transport pins the runtime it was opened on (tess__rt_pin: kept, not freed, while
 * the grid keeps the transport; tess_finalize does not wait for it). A call that runs on
 * another runtime (tess_finalize and a new start since) has every rank close its transport
 * and open one on the call's runtime (tess__nccl_get).
 *
 * Owns the NCCL communicator (one per grid and node, created on first use), the copy of
 * the grid's communicator the lost-device notices travel on, its streams (GPU; the
 * emulated device's comm streams otherwise), events and the pinned receive
 * buffers of remote pieces (one per unit in flight). Stream ownership: only the calling
 * thread of tess_p?gemm queues work on these streams.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redist.h"
#include "node.h"

#if defined(TESS_HAVE_NCCL) && defined(TESS_HAVE_CUDA)
#define XP_GPU 1
#include <cuda_runtime_api.h>
#include <nccl.h>
#else
#define XP_GPU 0
#endif

#define NEV 8 /* units in flight at most */
/* event ids: a unit's own (its slot), the pack and send hand-over, draining, and with
 * TESSERA_TRACE per slot the start, packed, exchanged and remote-arrived points and the
 * time reference */
enum { EV_PACKED = NEV, EV_SENT0, EV_SENT1, EV_DRAIN0, EV_DRAIN1, EV_REF, EV_TS0,
       EV_TP0 = EV_TS0 + NEV, EV_TX0 = EV_TP0 + NEV, EV_TR0 = EV_TX0 + NEV,
       NXEV = EV_TR0 + NEV };
enum { MODE_NONE = 0, MODE_GPU = 1, MODE_EMU = 2 };
enum { X_H2D, X_D2D };
#define TAG_REMOTE 7 /* MPI pieces from ranks of other nodes */
#define TAG_NODE 8   /* emulated devices: the pieces NCCL would carry */
#define TAG_LOST 9   /* on ctl: "my device was lost during pass gen" */

struct tess__nccl {
    int mode;                /* MODE_GPU or MODE_EMU */
    struct tess__rt *rt;
    int dev;                 /* runtime device index of the GPU used */
    int two;                 /* TESSERA_PGEMM_NCCL_STREAMS=2: a pack stream */
    int pack_d2d;            /* TESSERA_PGEMM_PACK_D2D */
    int timed;               /* TESSERA_TRACE: the units' phases go to the timeline */
    double t_ref;            /* GPU, timed: host time (tess__now) of EV_REF */
    double t_q0[NEV], t_q1[NEV]; /* timed: when each slot's unit was queued (caller) */
    uint64_t packed_d2d;     /* bytes packed from the own panel, since opened */
#if XP_GPU
    ncclComm_t comm;
    int ordinal;             /* its CUDA ordinal, -1 before it is known */
    cudaStream_t cs[2];      /* [0] transfer, [1] pack (two only) */
    cudaEvent_t cev[NXEV];
#endif
    /* MODE_EMU: the backend device and its first comm stream */
    const struct tess__dev_ops *ops;
    void *bd;
    int es0;
    tess__event *eev[NXEV];
    struct tess__blk *sbuf, *rbuf, *sbuf2;
    size_t scap, rcap, scap2;
    /* scratch: block lists */
    struct nblk { int op; int64_t sr, sc, tr, tc, rows, cols; } *b, *self;
    size_t nb, capb, nself, capself;
    /* ranks of the grid: rank in this node's group, -1 on another node (MPI) */
    int *nrank;
    int size, remote;        /* grid size; whether any rank is on another node */
    int err;                 /* the first local error of this pass after its unit's agreement */
    /* a device lost mid-exchange (see "A device lost during a unit" below) */
    MPI_Comm ctl;            /* the grid's ranks, for the notices */
    int gen;                 /* passes since opened: a notice names the pass it belongs to */
    int dead;                /* the exchange of this transport is over (own device or a peer's lost) */
    int fault_unit;          /* TESSERA_FAULT=xport:U: this rank's device is lost at unit U of a pass */
    const struct tess__comm_grid *g; /* the grid of the pass in progress */
    MPI_Datatype elem;       /* one element (es bytes), for the MPI pieces */
    size_t es;
    /* per unit in flight with remote pieces: what to unpack once its requests are done */
    struct nunit {
        const struct tess__redist_op *ops;
        const struct tess__comm_grid *g;
        const int *prow, *pcol;
        int64_t k0, k1, kbase, s0, s1;
        MPI_Request *req;    /* 2 per rank */
        int nreq;
        char *hbuf;          /* pinned: the received pieces, rank by rank */
        size_t hcap;
        size_t *hoff;        /* per rank: where its pieces start in hbuf */
        int pending;         /* the event is still to be recorded in tess__nccl_wait */
    } unit[NEV];
};

/* ---- device primitives: CUDA + NCCL, or the backend of an emulated device + MPI ---------- */

#if XP_GPU
static int cuda_st(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return TESS_OK;
    return tess__fail(TESS_EDEVICE, "pgemm (NCCL transport): %s: %s", what, cudaGetErrorString(e));
}
static int nccl_st(ncclResult_t r, const char *what) {
    if (r == ncclSuccess) return TESS_OK;
    return tess__fail(TESS_ECOMM, "pgemm (NCCL transport): %s: %s", what, ncclGetErrorString(r));
}
#endif

/* Stream `which` (0 transfer, 1 pack; 1 is 0 without a pack stream). */
static int x_stream(const struct tess__nccl *n, int which) { return n->two ? which : 0; }

/* ---- A device lost during a unit --------------------------------------------------------
 * A rank whose device fails after a unit's agreement (a CUDA error while queueing or
 * waiting, or TESSERA_FAULT=xport:U) may be unable to run its part of the node's exchange
 * at all: its ncclSend/ncclRecv never run, and its peers would wait forever in theirs. So
 * it tells every peer of its node (TAG_LOST on ctl, the pass number) and stops its
 * exchange (GPU: ncclCommAbort). Each peer, while it waits on the transport (polling its
 * events and streams, or the emulated exchange's MPI requests), takes the notice, aborts
 * its own communicator (emulated: cancels its receives from the lost rank; its sends to it
 * are drained there) and returns TESS_EDEVICE. The pass's agreements then carry the error
 * to every rank, and tess__nccl_after_failure closes the transport everywhere, to be opened
 * afresh by the next call. Notices of an earlier pass are taken and dropped. */
static int lost_peer(struct tess__nccl *n) {
    int who = -1;
    for (;;) {
        int flag = 0, gen = -1;
        MPI_Status s;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_LOST, n->ctl, &flag, &s) != MPI_SUCCESS || !flag) break;
        if (MPI_Recv(&gen, 1, MPI_INT, s.MPI_SOURCE, TAG_LOST, n->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            break;
        if (gen == n->gen) who = s.MPI_SOURCE;
    }
    return who;
}

/* The exchange of this transport is over: tell the node's peers if this rank's device was
 * lost, and abort the communicator (GPU). Returns st. */
static int x_lose(struct tess__nccl *n, int st, int tell) {
    if (n->dead) return st;
    n->dead = 1;
    for (int j = 0; tell && n->g && j < n->size; j++)
        if (j != n->g->rank && n->nrank[j] >= 0)
            (void)MPI_Send(&n->gen, 1, MPI_INT, j, TAG_LOST, n->ctl); /* one int: eager */
#if XP_GPU
    if (n->mode == MODE_GPU && n->comm) {
        ncclCommAbort(n->comm);
        n->comm = NULL;
    }
#endif
    return st;
}

static int lost_status(struct tess__nccl *n, int who) {
    return x_lose(n, tess__fail(TESS_EDEVICE, "pgemm: the device of rank %d was lost during the "
                                "exchange", who), 0);
}

static int x_setdev(struct tess__nccl *n) {
#if XP_GPU
    if (n->mode == MODE_GPU) return cuda_st(cudaSetDevice(n->ordinal), "cudaSetDevice");
#endif
    (void)n;
    return TESS_OK;
}

/* A 2D copy (host -> device or device -> device) queued on stream `which`. */
static int x_copy(struct tess__nccl *n, int which, int kind, void *dst, size_t dpitch,
                  const void *src, size_t spitch, size_t width, size_t height, const char *what) {
    int s = x_stream(n, which);
#if XP_GPU
    if (n->mode == MODE_GPU)
        return cuda_st(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height,
                                         kind == X_H2D ? cudaMemcpyHostToDevice
                                                       : cudaMemcpyDeviceToDevice,
                                         n->cs[s]),
                       what);
#endif
    (void)what;
    return n->ops->copy2d(n->bd, n->es0 + s, kind == X_H2D ? TESS__H2D : TESS__D2D, dst, dpitch,
                          src, spitch, width, height, NULL);
}

static int x_record(struct tess__nccl *n, int which, int ev) {
    int s = x_stream(n, which);
#if XP_GPU
    if (n->mode == MODE_GPU) return cuda_st(cudaEventRecord(n->cev[ev], n->cs[s]), "cudaEventRecord");
#endif
    return n->ops->event_record(n->bd, n->es0 + s, n->eev[ev]);
}

/* Stream `which` waits for event ev. */
static int x_wait(struct tess__nccl *n, int which, int ev) {
    int s = x_stream(n, which);
#if XP_GPU
    if (n->mode == MODE_GPU)
        return cuda_st(cudaStreamWaitEvent(n->cs[s], n->cev[ev], 0), "cudaStreamWaitEvent");
#endif
    return n->ops->stream_wait(n->bd, n->es0 + s, n->eev[ev]);
}

#if XP_GPU
/* Poll until q() stops saying cudaErrorNotReady, taking notices of a peer's lost device
 * meanwhile (its NCCL operations would never end ours). */
static int gpu_poll(struct tess__nccl *n, cudaError_t (*q)(void *), void *arg, const char *what) {
    double t0 = 0;
    for (unsigned spin = 0;; spin++) {
        cudaError_t e = q(arg);
        if (e != cudaErrorNotReady) return cuda_st(e, what);
        if (!n->dead && n->g) {
            int who = lost_peer(n);
            if (who >= 0) return lost_status(n, who);
        }
        if (n->dead) { /* aborted: NCCL ends what it had running; bounded all the same */
            if (t0 == 0) t0 = tess__now();
            else if (tess__now() - t0 > 10)
                return tess__fail(TESS_EDEVICE, "pgemm: the transport's streams did not drain "
                                  "within 10 s of the abort");
        }
        if (spin > 64) usleep(20);
    }
}
static cudaError_t ev_query(void *e) { return cudaEventQuery((cudaEvent_t)e); }
static cudaError_t st_query(void *s) { return cudaStreamQuery((cudaStream_t)s); }
#endif

/* The calling thread waits for event ev. */
static int x_sync(struct tess__nccl *n, int ev) {
#if XP_GPU
    if (n->mode == MODE_GPU) return gpu_poll(n, ev_query, n->cev[ev], "cudaEventQuery");
#endif
    return n->ops->event_sync(n->bd, n->eev[ev]);
}

/* Everything queued on the transport's streams is done. */
static int x_drain(struct tess__nccl *n) {
    int st = TESS_OK;
    for (int w = 0; w <= n->two && !st; w++) {
#if XP_GPU
        if (n->mode == MODE_GPU) {
            st = gpu_poll(n, st_query, n->cs[w], "cudaStreamQuery");
            continue;
        }
#endif
        st = x_record(n, w, EV_DRAIN0 + w);
        if (!st) st = x_sync(n, EV_DRAIN0 + w);
    }
    return st;
}

/* The exchange among the ranks of this node, on the transfer stream after everything
 * queued there: soff/roff give each grid rank's part of sbuf/rbuf (empty for itself and
 * for ranks of other nodes). */
static int x_exchange(struct tess__nccl *n, const struct tess__comm_grid *g, int size,
                      char *sbuf, const size_t *soff, char *rbuf, const size_t *roff) {
    int st = TESS_OK;
#if XP_GPU
    if (n->mode == MODE_GPU) {
        if ((st = nccl_st(ncclGroupStart(), "ncclGroupStart"))) return st;
        for (int j = 0; j < size && !st; j++) {
            if (j == g->rank || n->nrank[j] < 0) continue;
            size_t sb = soff[j + 1] - soff[j], rb = roff[j + 1] - roff[j];
            if (sb) st = nccl_st(ncclSend(sbuf + soff[j], sb, ncclChar, n->nrank[j], n->comm, n->cs[0]), "ncclSend");
            if (!st && rb) st = nccl_st(ncclRecv(rbuf + roff[j], rb, ncclChar, n->nrank[j], n->comm, n->cs[0]), "ncclRecv");
        }
        /* ends the group whatever happened, so that NCCL's group state stays balanced */
        int st2 = nccl_st(ncclGroupEnd(), "ncclGroupEnd");
        return st ? st : st2;
    }
#endif
    /* a lost device (GPU): its communicator is aborted, the peers abort theirs */
    if (n->dead && n->mode == MODE_GPU) return st;
    /* emulated: the packed pieces must be in sbuf before MPI reads them; every rank of the
     * node posts all its receives and sends, then waits for them. A rank whose device is
     * lost (n->dead) posts its receives only, as a drain for its peers' sends, and sends
     * nothing, as NCCL on a lost device would not; its peers cancel their receives from
     * it once they have its notice. */
    st = x_record(n, 0, EV_DRAIN0);
    if (!st) st = x_sync(n, EV_DRAIN0);
    MPI_Request *req = malloc(sizeof *req * (size_t)size * 2);
    int *src = malloc(sizeof *src * (size_t)size * 2); /* a receive's source, -1 for a send */
    if (!req || !src) {
        free(req), free(src);
        return st ? st : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    }
    int nreq = 0;
    for (int j = 0; j < size; j++) { /* counts fit an int: checked before the agreement */
        if (j == g->rank || n->nrank[j] < 0) continue;
        size_t sb = soff[j + 1] - soff[j], rb = roff[j + 1] - roff[j];
        /* a rank whose pack failed still sends (unused bytes) so that no peer hangs */
        int s2 = TESS_OK;
        if (rb) s2 = TESS__MPI(MPI_Irecv(rbuf + roff[j], (int)rb, MPI_BYTE, j, TAG_NODE, g->comm, &req[nreq]));
        if (!s2 && rb) src[nreq++] = j;
        if (!s2 && sb && !n->dead)
            s2 = TESS__MPI(MPI_Isend(sbuf + soff[j], (int)sb, MPI_BYTE, j, TAG_NODE, g->comm, &req[nreq]));
        if (!s2 && sb && !n->dead) src[nreq++] = -1;
        if (!st) st = s2;
    }
    int lost = -1;
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        if (MPI_Testall(nreq, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            if (!st) st = tess__fail(TESS_ECOMM, "pgemm: MPI_Testall failed in the node exchange");
            break;
        }
        if (done) break;
        int who = n->dead ? -1 : lost_peer(n);
        if (who >= 0) { /* its pieces never come: cancel those receives, wait for the rest */
            lost = who;
            for (int i = 0; i < nreq; i++)
                if (src[i] == who && req[i] != MPI_REQUEST_NULL) MPI_Cancel(&req[i]);
        }
        if (spin > 64) usleep(20);
    }
    free(req), free(src);
    if (lost >= 0) st = lost_status(n, lost);
    return st;
}

/* An error NCCL reported asynchronously. */
static int x_async_error(struct tess__nccl *n) {
#if XP_GPU
    if (n->mode == MODE_GPU) {
        ncclResult_t ar = ncclSuccess;
        if (ncclCommGetAsyncError(n->comm, &ar) == ncclSuccess && ar != ncclSuccess)
            return nccl_st(ar, "asynchronous NCCL error");
    }
#endif
    (void)n;
    return TESS_OK;
}

/* When event ev (recorded, complete) was reached, in tess__now()'s clock. */
static int x_time(struct tess__nccl *n, int ev, double *t) {
#if XP_GPU
    if (n->mode == MODE_GPU) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, n->cev[EV_REF], n->cev[ev]) != cudaSuccess) {
            (void)cudaGetLastError();
            return TESS_EAGAIN;
        }
        *t = n->t_ref + 1e-3 * ms;
        return TESS_OK;
    }
#endif
    return n->ops->event_time(n->bd, n->eev[ev], t);
}

/* The timeline of unit `unit` (complete), on the device's comm tracks: the pack stream's
 * copies into the panel and the send buffer, the exchange, the wait for the pieces of
 * other nodes (MPI), the unpack (D2D, and H2D of remote pieces), and the caller's queueing
 * of the unit and its wait [w0, w1]. */
static void trace_unit(struct tess__nccl *n, int unit, double w0, double w1) {
    int s = unit % NEV, base = TESS__TRACE_COMM_TID(n->rt->dev[n->dev], 0);
    double ts, tp, tx, tr, te;
    if (x_time(n, EV_TS0 + s, &ts) || x_time(n, EV_TP0 + s, &tp) || x_time(n, EV_TX0 + s, &tx) ||
        x_time(n, EV_TR0 + s, &tr) || x_time(n, s, &te))
        return;
    tess__trace_add(n->rt, n->dev, base + (n->two ? 1 : 0), ts, tp, "pack %d", unit);
    tess__trace_add(n->rt, n->dev, base, tp, tx, "exchange %d", unit);
    if (n->remote) tess__trace_add(n->rt, n->dev, base, tx, tr, "remote %d", unit);
    tess__trace_add(n->rt, n->dev, base, tr, te, "unpack %d", unit);
    tess__trace_add(n->rt, n->dev, base + 2, n->t_q0[s], n->t_q1[s], "queue unit %d", unit);
    tess__trace_add(n->rt, n->dev, base + 2, w0, w1, "wait unit %d", unit);
}

/* ---- setup ------------------------------------------------------------------------------ */

/* What this rank can take part with: MODE_GPU (knob, a CUDA device as runtime device 0,
 * NCCL in the build), MODE_EMU (TESSERA_PGEMM_NCCL=2, an emulated device 0) or MODE_NONE.
 * *rt: a call reference on the runtime (the caller's tess__pgemm_run's), NULL if none. */
static int local_mode(struct tess__rt **rt) {
    struct tess__config cfg;
    if (tess__config_load(&cfg) || !cfg.pgemm_nccl) return MODE_NONE;
    if (tess__rt_get(rt) || (*rt)->ndev == 0) return MODE_NONE;
    const struct tess__dev *d = (*rt)->dev[0];
    if (XP_GPU && d->desc.kind == TESS_DEV_CUDA) return MODE_GPU;
    if (cfg.pgemm_nccl == 2 && d->desc.kind == TESS_DEV_EMULATED && d->comm_stream >= 0)
        return MODE_EMU;
    return MODE_NONE;
}

/* Streams, events and the NCCL communicator (GPU; the node's group, lsize ranks, id from
 * its rank 0) or the backend's events (emulated). Agrees over the grid once, in both
 * modes (a rank that failed before calls tess__comm_agree instead). */
static int open_device(struct tess__nccl *n, MPI_Comm node, int lrank, int lsize,
                       struct tess__comm_grid *g) {
    int st = TESS_OK;
#if XP_GPU
    if (n->mode == MODE_GPU) {
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        n->ordinal = tess__cuda_ordinal(&n->rt->cfg, 0);
        st = cuda_st(cudaSetDevice(n->ordinal), "cudaSetDevice");
        for (int w = 0; w <= n->two && !st; w++)
            st = cuda_st(cudaStreamCreateWithFlags(&n->cs[w], cudaStreamNonBlocking), "cudaStreamCreate");
        for (int i = 0; i < NXEV && !st; i++)
            st = cuda_st(cudaEventCreateWithFlags(&n->cev[i], n->timed ? cudaEventDefault
                                                                      : cudaEventDisableTiming),
                         "cudaEventCreate");
        if (!st && n->timed) { /* the reference: device time 0 is host time t_ref */
            st = cuda_st(cudaEventRecord(n->cev[EV_REF], n->cs[0]), "cudaEventRecord");
            if (!st) st = cuda_st(cudaEventSynchronize(n->cev[EV_REF]), "cudaEventSynchronize");
            n->t_ref = tess__now();
        }
        if (!st && lrank == 0) st = nccl_st(ncclGetUniqueId(&id), "ncclGetUniqueId");
        st = tess__comm_agree(g, st);
        if (!st) st = TESS__MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, node));
        if (!st) st = nccl_st(ncclCommInitRank(&n->comm, lsize, id, lrank), "ncclCommInitRank");
        return st;
    }
#endif
    (void)node, (void)lrank, (void)lsize;
    const struct tess__dev *d = n->rt->dev[n->dev];
    n->ops = d->ops;
    n->bd = d->bd;
    n->es0 = d->comm_stream;
    for (int i = 0; i < NXEV && !st; i++) st = n->ops->event_create(n->bd, &n->eev[i]);
    return tess__comm_agree(g, st); /* one agreement in both modes: the caller counts on it */
}

/* Whether the streams and events exist (open_device got that far). */
static int x_opened(const struct tess__nccl *n) {
#if XP_GPU
    if (n->mode == MODE_GPU) return n->cs[0] && n->cev[NXEV - 1] && (!n->two || n->cs[1]);
#endif
    return n->eev[NXEV - 1] != NULL;
}

int tess__nccl_get(struct tess__comm_grid *g, struct tess__nccl **out) {
    *out = NULL;
    if (g->nccl_state == 2) return TESS_ENOSYS;
    if (g->nccl_state == 1) {
        /* opened on a runtime that tess_finalize let go since (this call runs on another):
         * every rank closes its transport and opens one anew (the state is the same on
         * every rank: collective) */
        struct tess__rt *cur = NULL;
        int stale = tess__rt_get(&cur) || cur != g->nccl->rt, any = 0;
        tess__rt_put(cur);
        int st = TESS__MPI(MPI_Allreduce(&stale, &any, 1, MPI_INT, MPI_MAX, g->comm));
        if (st) return tess__comm_agree(g, st);
        if (!any) {
            *out = g->nccl;
            return TESS_OK;
        }
        tess__nccl_close(g->nccl);
        g->nccl = NULL;
        g->nccl_state = 0;
    }
    /* eligible only if every rank can, in the same mode (the same answer everywhere) */
    struct tess__rt *rt = NULL;
    int mode = local_mode(&rt), size = 0, mm[2] = {mode, -mode}, all[2] = {0, 0};
    MPI_Comm_size(g->comm, &size);
    if (TESS__MPI(MPI_Allreduce(mm, all, 2, MPI_INT, MPI_MIN, g->comm)) || all[0] == MODE_NONE ||
        all[0] != -all[1]) {
        tess__rt_put(rt);
        g->nccl_state = 2;
        return TESS_ENOSYS;
    }
    /* the node: shared memory, or groups of TESSERA_PGEMM_NODE_RANKS consecutive ranks */
    MPI_Comm node = MPI_COMM_NULL;
    int per = rt->cfg.pgemm_node_ranks, st;
    if (per > 0)
        st = TESS__MPI(MPI_Comm_split(g->comm, g->rank / per, g->rank, &node));
    else
        st = TESS__MPI(MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int lrank = 0, lsize = 1, leader = g->rank;
    if (!st) {
        MPI_Comm_rank(node, &lrank);
        MPI_Comm_size(node, &lsize);
        st = TESS__MPI(MPI_Allreduce(&g->rank, &leader, 1, MPI_INT, MPI_MIN, node));
    }
    struct tess__nccl *n = calloc(1, sizeof *n);
    int *who = calloc((size_t)size * 2, sizeof(int)); /* (leader, lrank) of every rank */
    if (!st && (!n || !who)) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) {
        n->mode = mode;
#if XP_GPU
        n->ordinal = -1;
#endif
        n->nrank = calloc((size_t)size, sizeof(int));
        n->elem = MPI_DATATYPE_NULL;
        if (!n->nrank) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    }
    if (!st) {
        int me[2] = {leader, lrank};
        st = TESS__MPI(MPI_Allgather(me, 2, MPI_INT, who, 2, MPI_INT, g->comm));
    }
    if (!st) {
        n->size = size;
        for (int j = 0; j < size; j++) {
            n->nrank[j] = who[2 * j] == leader ? who[2 * j + 1] : -1;
            n->remote |= n->nrank[j] < 0;
        }
        n->rt = rt;
        tess__rt_pin(rt); /* unpinned by tess__nccl_close */
        n->dev = 0;
        n->two = rt->cfg.pgemm_nccl_streams == 2;
        n->pack_d2d = rt->cfg.pgemm_pack_d2d != 0;
        n->timed = rt->trace.on;
    }
    free(who);
    if (!st) st = open_device(n, node, lrank, lsize, g);
    else st = tess__comm_agree(g, st); /* open_device agrees once inside */
    if (n) n->ctl = MPI_COMM_NULL;
    if (!st) st = TESS__MPI(MPI_Comm_dup(g->comm, &n->ctl)); /* collective: every rank got here */
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    st = tess__comm_agree(g, st);
    tess__rt_put(rt);
    if (st) {
        tess__nccl_close(n);
        g->nccl_state = 2;
        return st;
    }
    g->nccl = n;
    g->nccl_state = 1;
    *out = n;
    return TESS_OK;
}

void tess__nccl_close(struct tess__nccl *n) {
    if (!n) return;
    if (n->rt) {
        if (x_opened(n)) (void)x_setdev(n), (void)x_drain(n);
        if (n->sbuf2) tess__cache_free_work(&n->rt->cache, n->sbuf2);
        if (n->sbuf) tess__cache_free_work(&n->rt->cache, n->sbuf);
        if (n->rbuf) tess__cache_free_work(&n->rt->cache, n->rbuf);
    }
    if (n->ctl != MPI_COMM_NULL) MPI_Comm_free(&n->ctl);
#if XP_GPU
    if (n->comm) (n->dead ? ncclCommAbort : ncclCommDestroy)(n->comm);
    for (int i = 0; i < NXEV; i++)
        if (n->cev[i]) cudaEventDestroy(n->cev[i]);
    for (int w = 0; w < 2; w++)
        if (n->cs[w]) cudaStreamDestroy(n->cs[w]);
#endif
    for (int i = 0; i < NXEV; i++)
        if (n->eev[i]) n->ops->event_destroy(n->bd, n->eev[i]);
    /* (the emulated device's comm streams are the backend's: closed with the device) */
    for (int i = 0; i < NEV; i++) {
        free(n->unit[i].req);
        free(n->unit[i].hoff);
        tess_free_host(n->unit[i].hbuf);
    }
    if (n->elem != MPI_DATATYPE_NULL) MPI_Type_free(&n->elem);
    tess__rt_unpin(n->rt); /* last: the events above were the runtime's device's */
    free(n->nrank);
    free(n->b);
    free(n->self);
    free(n);
}

/* After a failed call (status agreed): if any rank's transport is over (a device lost
 * during an exchange), every rank closes its own (aborting its communicator) and the next
 * call opens a new one. Collective over the grid. */
int tess__nccl_after_failure(struct tess__comm_grid *g) {
    struct tess__nccl *n = g->nccl_state == 1 ? g->nccl : NULL;
    int dead = n && n->dead, any = 0;
    int st = TESS__MPI(MPI_Allreduce(&dead, &any, 1, MPI_INT, MPI_MAX, g->comm));
    if (!st && any && n) {
        n->dead = 1;
        tess__nccl_close(n);
        g->nccl = NULL;
        g->nccl_state = 0;
    }
    return st;
}

uint64_t tess__nccl_packed_d2d(const struct tess__nccl *n) { return n->packed_d2d; }

int tess__nccl_device(const struct tess__nccl *n) { return n->dev; }
int tess__nccl_units_in_flight(const struct tess__nccl *n) { return n->remote ? 2 : NEV; }

size_t tess__nccl_heap_bytes(const struct tess__nccl *n) { return n->rt->dev[n->dev]->heap_bytes; }

/* Buffers of one unit beside the panels: send (two with a pack stream) and receive. */
int tess__nccl_unit_buffers(const struct tess__nccl *n) { return n->two ? 3 : 2; }

/* Units of at least 512 MiB on GPUs (NCCL's rate); emulated devices follow
 * TESSERA_PGEMM_CHUNK down to 64 KiB, so that the tests run several units. */
int64_t tess__nccl_min_unit(const struct tess__nccl *n) {
    return n->mode == MODE_GPU ? (int64_t)512 << 20 : (int64_t)64 << 10;
}

int tess__nccl_alloc(struct tess__nccl *n, size_t bytes, void **ptr, void **handle) {
    struct tess__blk *b;
    int rc = tess__cache_alloc_work(&n->rt->cache, n->dev, bytes ? bytes : 256, &b);
    if (rc) return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of device memory for the panels", bytes);
    *ptr = b->ptr;
    *handle = b;
    return TESS_OK;
}

void tess__nccl_free(struct tess__nccl *n, void *handle) {
    /* a pass that stopped early may leave remote requests posted: finish them (the peers
     * posted the same units) before their buffers and types go */
    for (int i = 0; i < NEV; i++) {
        for (int r = 0; r < n->unit[i].nreq; r++) tess__mpi_wait(&n->unit[i].req[r]);
        n->unit[i].nreq = 0;
        n->unit[i].pending = 0;
    }
    if (!handle) return;
    (void)x_setdev(n);
    (void)x_drain(n);
    tess__cache_free_work(&n->rt->cache, handle);
}

/* ---- one unit ------------------------------------------------------------------------------ */

static void collect(void *arg, int op, int64_t sr, int64_t sc, int64_t tr, int64_t tc,
                    int64_t rows, int64_t cols) {
    struct tess__nccl *n = arg;
    if (n->nb == n->capb) {
        size_t cap = n->capb ? 2 * n->capb : 256;
        void *p = realloc(n->b, cap * sizeof *n->b);
        if (!p) return; /* noticed by the caller: nb stays below the count */
        n->b = p;
        n->capb = cap;
    }
    n->b[n->nb++] = (struct nblk){op, sr, sc, tr, tc, rows, cols};
}

/* The blocks of pair (o -> d) into n->b; returns their bytes, or -1 out of memory. */
static int64_t blocks(struct tess__nccl *n, const struct tess__redist_op *ops, int orow, int ocol,
                      int drow, int dcol, int64_t k0, int64_t k1, int64_t kbase, int64_t s0,
                      int64_t s1) {
    n->nb = 0;
    if (tess__redist_blocks(ops, 2, orow, ocol, drow, dcol, k0, k1, kbase, s0, s1, collect, n))
        return -1;
    int64_t bytes = 0;
    for (size_t i = 0; i < n->nb; i++)
        bytes += n->b[i].rows * n->b[i].cols * (int64_t)ops[n->b[i].op].es;
    return bytes;
}

enum { FROM_LOCAL, FROM_PACKED, FROM_HOST_PACKED, FROM_PANEL }; /* where copy_blocks reads */

/* Copy the nb blocks of list on stream `which`, from the local arrays (FROM_LOCAL: H2D), a
 * packed buffer `packed` in device memory (FROM_PACKED: D2D) or host memory
 * (FROM_HOST_PACKED: H2D), or where the blocks lie in the panel (FROM_PANEL: D2D), into
 * the panel or, with `pack`, packed into pack. */
static int copy_blocks(struct tess__nccl *n, const struct nblk *list, size_t nb,
                       const struct tess__redist_op *ops, int which, int from, const char *packed,
                       char *pack, const char *what) {
    int st = TESS_OK;
    size_t o = 0;
    for (size_t i = 0; i < nb && !st; i++) {
        const struct nblk *b = &list[i];
        const struct tess__redist_op *op = &ops[b->op];
        size_t es = op->es, w = (size_t)b->rows * es, lbuf = (size_t)op->ldbuf * es;
        char *inpanel = (char *)op->buf + (size_t)(b->tr + b->tc * op->ldbuf) * es;
        int fp = from == FROM_PACKED || from == FROM_HOST_PACKED;
        const char *src = fp ? packed + o
                          : from == FROM_PANEL ? inpanel
                          : (const char *)op->X + (size_t)(b->sr + b->sc * op->ldx) * es;
        size_t spitch = fp ? w : from == FROM_PANEL ? lbuf : (size_t)op->ldx * es;
        int h2d = from == FROM_LOCAL || from == FROM_HOST_PACKED;
        st = x_copy(n, which, h2d ? X_H2D : X_D2D, pack ? pack + o : inpanel,
                    pack ? w : lbuf, src, spitch, w, (size_t)b->cols, what);
        o += w * (size_t)b->cols;
    }
    if (!st && from == FROM_PANEL) n->packed_d2d += o;
    return st;
}

/* Keep the self blocks (n->b) as n->self. */
static int keep_self(struct tess__nccl *n) {
    if (n->nb > n->capself) {
        void *p = realloc(n->self, n->nb * sizeof *n->self);
        if (!p) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        n->self = p;
        n->capself = n->nb;
    }
    if (n->nb) memcpy(n->self, n->b, n->nb * sizeof *n->b);
    n->nself = n->nb;
    return TESS_OK;
}

/* Whether the blocks in n->b read the same pieces of the local arrays, in the same order,
 * as the self blocks kept by keep_self (then they are in the own panel already). */
static int same_sources(const struct tess__nccl *n) {
    if (n->nb != n->nself || n->nb == 0) return 0;
    for (size_t i = 0; i < n->nb; i++) {
        const struct nblk *a = &n->b[i], *b = &n->self[i];
        if (a->op != b->op || a->sr != b->sr || a->sc != b->sc || a->rows != b->rows ||
            a->cols != b->cols)
            return 0;
    }
    return 1;
}

static int grow(struct tess__nccl *n, struct tess__blk **b, size_t *cap, size_t need) {
    if (need <= *cap) return TESS_OK;
    int st = x_drain(n);
    if (st) return st;
    if (*b) tess__cache_free_work(&n->rt->cache, *b);
    *b = NULL;
    *cap = 0;
    if (tess__cache_alloc_work(&n->rt->cache, n->dev, need, b))
        return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of device memory for the exchange buffers", need);
    *cap = need;
    return TESS_OK;
}

/* Prepare the MPI half of a unit (before its agreement: what can fail for want of memory
 * fails here, where every rank can still drop the unit): the request array, where each
 * remote rank's pieces land in the unit's pinned receive buffer, the buffer. */
static int remote_prepare(struct tess__nccl *n, struct nunit *u) {
    const struct tess__comm_grid *g = u->g;
    int me_r = g->at.myrow, me_c = g->at.mycol, size = n->size;
    if (!u->req) u->req = malloc(sizeof *u->req * (size_t)size * 2);
    if (!u->hoff) u->hoff = malloc(sizeof *u->hoff * ((size_t)size + 1));
    if (!u->req || !u->hoff) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    size_t off = 0;
    for (int j = 0; j < size; j++) {
        u->hoff[j] = off;
        if (n->nrank[j] >= 0) continue;
        int64_t rb = blocks(n, u->ops, u->prow[j], u->pcol[j], me_r, me_c, u->k0, u->k1, u->kbase,
                            u->s0, u->s1);
        if (rb < 0) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        off += (size_t)rb;
    }
    u->hoff[size] = off;
    if (off > u->hcap) {
        tess_free_host(u->hbuf);
        u->hcap = 0;
        if (!(u->hbuf = tess_malloc_host(off)))
            return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of pinned receive buffer", off);
        u->hcap = off;
    }
    if ((off / n->es) > INT32_MAX)
        return tess__fail(TESS_ENOSYS, "pgemm: a unit over MPI's int counts (lower TESSERA_PGEMM_CHUNK)");
    return TESS_OK;
}

/* Post the MPI half of a unit: receives into the unit's pinned buffer, packed in
 * tess__redist_blocks' order; sends straight from the local arrays through a datatype that
 * lists the same blocks in the same order (tess__redist_types). */
static int remote_post(struct tess__nccl *n, struct nunit *u, uint64_t *sent, uint64_t *recvd) {
    const struct tess__comm_grid *g = u->g;
    int me_r = g->at.myrow, me_c = g->at.mycol, st = TESS_OK, size = n->size;
    u->nreq = 0;
    for (int j = 0; j < size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        size_t rb = u->hoff[j + 1] - u->hoff[j];
        if (rb) {
            st = TESS__MPI(MPI_Irecv(u->hbuf + u->hoff[j], (int)(rb / n->es), n->elem, j, TAG_REMOTE,
                                     g->comm, &u->req[u->nreq]));
            if (!st) u->nreq++, *recvd += rb;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (!st)
            st = tess__redist_types(u->ops, 2, me_r, me_c, u->prow[j], u->pcol[j], u->k0, u->k1,
                                    u->kbase, u->s0, u->s1, true, n->elem, &t);
        if (!st && t != MPI_DATATYPE_NULL) {
            MPI_Count sz = 0;
            MPI_Type_size_x(t, &sz);
            st = TESS__MPI(MPI_Isend(MPI_BOTTOM, 1, t, j, TAG_REMOTE, g->comm, &u->req[u->nreq]));
            if (!st) u->nreq++, *sent += (uint64_t)sz;
            MPI_Type_free(&t);
        }
    }
    return st;
}

int tess__nccl_unit(struct tess__nccl *n, const struct tess__comm_grid *g,
                    const struct tess__redist_op *ops, const int *prow, const int *pcol, int size,
                    int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1, int slot,
                    int prior, uint64_t *sent, uint64_t *recvd) {
    int me_r = g->at.myrow, me_c = g->at.mycol, st = x_setdev(n), es = slot % NEV;
    double tq0 = n->timed ? tess__now() : 0;
    n->g = g;
    if (slot == 0) { /* a new pass; TESSERA_FAULT=xport:U read for it */
        n->err = TESS_OK;
        n->gen++;
        struct tess__config cfg;
        n->fault_unit = tess__config_load(&cfg) ? 0 : (int)tess__fault_at(cfg.emu_fault, "xport");
    }
    if (!st && n->remote && n->es != ops[0].es) { /* the element of this call's precision */
        if (n->elem != MPI_DATATYPE_NULL) MPI_Type_free(&n->elem);
        n->es = ops[0].es;
        st = TESS__MPI(MPI_Type_contiguous((int)n->es, MPI_BYTE, &n->elem));
        if (!st) st = TESS__MPI(MPI_Type_commit(&n->elem));
    }
    /* what goes to and comes from every rank of this node: offsets into the packed buffers */
    size_t *soff = calloc((size_t)size * 2 + 2, sizeof *soff), *roff = soff ? soff + size + 1 : NULL;
    size_t stot = 0, rtot = 0;
    if (!st && !soff) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    for (int j = 0; j < size && !st; j++) {
        soff[j] = stot, roff[j] = rtot;
        if (j == g->rank || n->nrank[j] < 0) continue;
        int64_t sb = blocks(n, ops, me_r, me_c, prow[j], pcol[j], k0, k1, kbase, s0, s1);
        int64_t rb = blocks(n, ops, prow[j], pcol[j], me_r, me_c, k0, k1, kbase, s0, s1);
        if (sb < 0 || rb < 0) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        else if (n->mode == MODE_EMU && (sb > INT_MAX || rb > INT_MAX)) /* MPI's int counts */
            st = tess__fail(TESS_ENOSYS, "pgemm: a unit over MPI's int counts (lower TESSERA_PGEMM_CHUNK)");
        stot += (size_t)sb, rtot += (size_t)rb;
    }
    if (!st) soff[size] = stot, roff[size] = rtot;
    /* ranks of other nodes: MPI, prepared now, posted once the unit is agreed, unpacked in
     * tess__nccl_wait */
    struct nunit *u = &n->unit[slot % NEV];
    u->pending = 0;
    if (!st && n->remote) {
        *u = (struct nunit){.ops = ops, .g = g, .prow = prow, .pcol = pcol, .k0 = k0, .k1 = k1,
                            .kbase = kbase, .s0 = s0, .s1 = s1, .req = u->req, .hbuf = u->hbuf,
                            .hcap = u->hcap, .hoff = u->hoff};
        st = remote_prepare(n, u);
    }
    /* the send buffer of this unit (two alternate with a pack stream) */
    int bi = n->two ? slot % 2 : 0;
    struct tess__blk **sbp = bi ? &n->sbuf2 : &n->sbuf;
    size_t *scap = bi ? &n->scap2 : &n->scap;
    if (!st) st = grow(n, sbp, scap, stot);
    if (!st) st = grow(n, &n->rbuf, &n->rcap, rtot);
    /* Every rank goes on with this unit or none does: the last wait's status, an error of
     * the units before (n->err) and this unit's preparation, agreed. From here on a local
     * error does not stop this rank's part of the exchange (its peers count on it); it is
     * kept in n->err and agreed at the next unit or returned by tess__nccl_wait. */
    st = tess__comm_agree(g, st ? st : prior ? prior : n->err);
    if (st) {
        free(soff);
        return st;
    }
    if (n->dead) /* lost in an earlier unit of this pass, whose agreement had not seen it */
        st = tess__fail(TESS_EDEVICE, "pgemm: the transport's device was lost");
    if (!st && n->fault_unit > 0 && slot + 1 == n->fault_unit)
        st = x_lose(n, tess__fail(TESS_EDEVICE, "pgemm: injected: this rank's device lost at "
                                  "unit %d of the pass (TESSERA_FAULT=xport:%d)", slot + 1,
                                  n->fault_unit), 1);
    if (n->remote) {
        u->pending = 1;
        int rst = remote_post(n, u, sent, recvd);
        if (!st) st = rst;
    }
    char *sbuf = stot ? (*sbp)->ptr : NULL, *rbuf = rtot ? n->rbuf->ptr : NULL;
    /* two streams: nothing is packed into this buffer before its last send has ended */
    if (!st && n->two) st = x_wait(n, 1, EV_SENT0 + bi);
    if (!st && n->timed) st = x_record(n, 1, EV_TS0 + es);
    *sent += stot;
    *recvd += rtot;
    /* self: straight into the panel */
    if (!st && blocks(n, ops, me_r, me_c, me_r, me_c, k0, k1, kbase, s0, s1) < 0)
        st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) st = copy_blocks(n, n->b, n->nb, ops, 1, FROM_LOCAL, NULL, NULL, "H2D into the panel");
    if (!st && n->pack_d2d) st = keep_self(n);
    /* pack what the peers of this node need: from the own panel (D2D, after the self
     * copies on the same stream) when they need exactly what this rank took for itself,
     * from the local arrays (H2D) otherwise */
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (blocks(n, ops, me_r, me_c, prow[j], pcol[j], k0, k1, kbase, s0, s1) < 0)
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        else if (n->pack_d2d && same_sources(n)) /* where the self copies put them */
            st = copy_blocks(n, n->self, n->nself, ops, 1, FROM_PANEL, NULL, sbuf + soff[j],
                             "D2D pack");
        else
            st = copy_blocks(n, n->b, n->nb, ops, 1, FROM_LOCAL, NULL, sbuf + soff[j], "H2D pack");
    }
    if (!st && n->timed) st = x_record(n, 1, EV_TP0 + es);
    /* two streams: the transfer stream takes over once the unit is packed (and in the panel) */
    if (!st && n->two) st = x_record(n, 1, EV_PACKED);
    if (!st && n->two) st = x_wait(n, 0, EV_PACKED);
    /* a device error queueing this unit: the exchange may not run on this rank (a lost
     * device): the peers are told and abort theirs */
    if (st && n->mode == MODE_GPU) st = x_lose(n, st, 1);
    /* the exchange among the ranks of this node, whatever happened above */
    if (stot + rtot > 0) {
        int xst = x_exchange(n, g, size, sbuf, soff, rbuf, roff);
        if (!st) st = xst;
    }
    if (!st && n->timed) st = x_record(n, 0, EV_TX0 + es);
    if (!st && n->timed && !n->remote) st = x_record(n, 0, EV_TR0 + es); /* nothing to wait for */
    if (!st && n->two) st = x_record(n, 0, EV_SENT0 + bi);
    /* unpack into the panel */
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (blocks(n, ops, prow[j], pcol[j], me_r, me_c, k0, k1, kbase, s0, s1) < 0)
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        else
            st = copy_blocks(n, n->b, n->nb, ops, 0, FROM_PACKED, rbuf + roff[j], NULL, "D2D unpack");
    }
    free(soff);
    if (!st && !u->pending) st = x_record(n, 0, es);
    if (st && !n->err) n->err = st;
    if (n->timed) n->t_q0[es] = tq0, n->t_q1[es] = tess__now();
    return TESS_OK;
}

/* The remote half of a unit: wait for its MPI requests, then queue the H2D copies of the
 * received pieces into the panel and record the unit's event after them. */
static int remote_finish(struct tess__nccl *n, struct nunit *u, int slot) {
    int st = TESS_OK;
    for (int i = 0; i < u->nreq; i++) {
        int s2 = tess__mpi_wait(&u->req[i]);
        if (!st) st = s2;
    }
    u->nreq = 0;
    const struct tess__comm_grid *g = u->g;
    int me_r = g->at.myrow, me_c = g->at.mycol;
    if (!st && n->timed) st = x_record(n, 0, EV_TR0 + slot % NEV); /* the pieces are here */
    for (int j = 0; j < n->size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        if (blocks(n, u->ops, u->prow[j], u->pcol[j], me_r, me_c, u->k0, u->k1, u->kbase, u->s0,
                   u->s1) < 0)
            return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        /* the received pieces are packed in block order in host memory: an H2D "unpack" */
        st = copy_blocks(n, n->b, n->nb, u->ops, 0, FROM_HOST_PACKED, u->hbuf + u->hoff[j], NULL,
                         "H2D of remote pieces");
    }
    u->pending = 0;
    if (!st) st = x_record(n, 0, slot % NEV);
    return st;
}

int tess__nccl_wait(struct tess__nccl *n, int slot) {
    (void)x_setdev(n);
    int st = TESS_OK;
    double w0 = n->timed ? tess__now() : 0;
    struct nunit *u = &n->unit[slot % NEV];
    if (u->pending) st = remote_finish(n, u, slot);
    if (!st) st = x_sync(n, slot % NEV);
    if (!st) st = x_async_error(n);
    /* this rank's device failed while the unit ran: its peers may wait on it */
    if (st && !n->dead && n->mode == MODE_GPU) st = x_lose(n, st, 1);
    if (!st && !n->err && n->timed) trace_unit(n, slot, w0, tess__now());
    return st ? st : n->err;
}
