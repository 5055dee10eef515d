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
 * MPI requests completed and the H2D copies of the received pieces were queued. With TESSERA_PGEMM_NCCL_STREAMS=2 the H2D copies (self, pack) run on a
 * second stream into one of two send buffers (by unit parity), so unit u+1 is packed while
 * unit u travels: the transfer stream waits for the unit's pack (event `packed`), the pack
 * stream for the end of the send that last read its buffer (event `sent`). Buffers (panel, send, receive) come from the runtime's heap on the rank's
 * first GPU (tess__cache_alloc_work), so they count against the same memory as tiles.
 *
 * Owns the NCCL communicator (one per grid and node, created on first use), its stream,
 * events and the pinned receive buffers of remote pieces (one per unit in flight).
 * Stream ownership: only the calling thread of tess_p?gemm queues work on this stream.
 */
#include <stdlib.h>
#include <string.h>

#include "redist.h"

#if defined(TESS_HAVE_NCCL) && defined(TESS_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../node/node.h"

#define NEV 8 /* units in flight at most */

struct tess__nccl {
    ncclComm_t comm;
    struct tess__rt *rt;
    int dev;                 /* runtime device index of the GPU used */
    int ordinal;             /* its CUDA ordinal */
    cudaStream_t stream;
    cudaEvent_t ev[NEV];
    struct tess__blk *sbuf, *rbuf;
    size_t scap, rcap;
    /* TESSERA_PGEMM_NCCL_STREAMS=2: the pack stream, the second send buffer, the events */
    int two;
    cudaStream_t hstream;
    struct tess__blk *sbuf2;
    size_t scap2;
    cudaEvent_t packed, sent[2];
    /* scratch: block lists */
    struct nblk { int op; int64_t sr, sc, tr, tc, rows, cols; } *b;
    size_t nb, capb;
    /* ranks of the grid: NCCL rank on this node, -1 on another node (MPI) */
    int *nrank;
    int size, remote;        /* grid size; whether any rank is on another node */
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

static int cuda_st(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return TESS_OK;
    return tess__fail(TESS_EDEVICE, "pgemm (NCCL transport): %s: %s", what, cudaGetErrorString(e));
}
static int nccl_st(ncclResult_t r, const char *what) {
    if (r == ncclSuccess) return TESS_OK;
    return tess__fail(TESS_ECOMM, "pgemm (NCCL transport): %s: %s", what, ncclGetErrorString(r));
}

/* Whether this rank can take part: knob, a CUDA device as runtime device 0. */
static int local_ok(struct tess__rt **rt) {
    struct tess__config cfg;
    if (tess__config_load(&cfg) || !cfg.pgemm_nccl) return 0;
    if (tess__rt_get(rt)) return 0;
    return (*rt)->ndev > 0 && (*rt)->dev[0]->desc.kind == TESS_DEV_CUDA;
}

int tess__nccl_get(struct tess__comm_grid *g, struct tess__nccl **out) {
    *out = NULL;
    if (g->nccl_state == 2) return TESS_ENOSYS;
    if (g->nccl_state == 1) {
        *out = g->nccl;
        return TESS_OK;
    }
    /* eligible only if every rank has a GPU (the same answer everywhere) */
    struct tess__rt *rt = NULL;
    int ok = local_ok(&rt), size = 0, all = 0;
    MPI_Comm_size(g->comm, &size);
    if (TESS__MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->comm)) || !all) {
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
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (!st && (!n || !who)) st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) {
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
        n->dev = 0;
        n->ordinal = tess__cuda_ordinal(&rt->cfg, 0);
        st = cuda_st(cudaSetDevice(n->ordinal), "cudaSetDevice");
    }
    free(who);
    if (!st) st = cuda_st(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int i = 0; i < NEV && !st; i++)
        st = cuda_st(cudaEventCreateWithFlags(&n->ev[i], cudaEventDisableTiming), "cudaEventCreate");
    if (!st && rt->cfg.pgemm_nccl_streams == 2) {
        n->two = 1;
        st = cuda_st(cudaStreamCreateWithFlags(&n->hstream, cudaStreamNonBlocking), "cudaStreamCreate");
        if (!st) st = cuda_st(cudaEventCreateWithFlags(&n->packed, cudaEventDisableTiming), "cudaEventCreate");
        for (int i = 0; i < 2 && !st; i++)
            st = cuda_st(cudaEventCreateWithFlags(&n->sent[i], cudaEventDisableTiming), "cudaEventCreate");
    }
    if (!st && lrank == 0) st = nccl_st(ncclGetUniqueId(&id), "ncclGetUniqueId");
    st = tess__comm_agree(g, st);
    if (!st) st = TESS__MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, node));
    if (!st) st = nccl_st(ncclCommInitRank(&n->comm, lsize, id, lrank), "ncclCommInitRank");
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    st = tess__comm_agree(g, st);
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
    if (n->ordinal >= 0) cudaSetDevice(n->ordinal);
    if (n->stream) cudaStreamSynchronize(n->stream);
    if (n->hstream) cudaStreamSynchronize(n->hstream);
    if (n->sbuf2) tess__cache_free_work(&n->rt->cache, n->sbuf2);
    if (n->packed) cudaEventDestroy(n->packed);
    for (int i = 0; i < 2; i++)
        if (n->sent[i]) cudaEventDestroy(n->sent[i]);
    if (n->hstream) cudaStreamDestroy(n->hstream);
    if (n->sbuf) tess__cache_free_work(&n->rt->cache, n->sbuf);
    if (n->rbuf) tess__cache_free_work(&n->rt->cache, n->rbuf);
    if (n->comm) ncclCommDestroy(n->comm);
    for (int i = 0; i < NEV; i++)
        if (n->ev[i]) cudaEventDestroy(n->ev[i]);
    if (n->stream) cudaStreamDestroy(n->stream);
    for (int i = 0; i < NEV; i++) {
        free(n->unit[i].req);
        free(n->unit[i].hoff);
        tess_free_host(n->unit[i].hbuf);
    }
    if (n->elem != MPI_DATATYPE_NULL) MPI_Type_free(&n->elem);
    free(n->nrank);
    free(n->b);
    free(n);
}

int tess__nccl_device(const struct tess__nccl *n) { return n->dev; }
int tess__nccl_units_in_flight(const struct tess__nccl *n) { return n->remote ? 2 : NEV; }

size_t tess__nccl_heap_bytes(const struct tess__nccl *n) { return n->rt->dev[n->dev]->heap_bytes; }

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
    cudaSetDevice(n->ordinal);
    cudaStreamSynchronize(n->stream);
    if (n->hstream) cudaStreamSynchronize(n->hstream);
    tess__cache_free_work(&n->rt->cache, handle);
}

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

static int grow(struct tess__nccl *n, struct tess__blk **b, size_t *cap, size_t need) {
    if (need <= *cap) return TESS_OK;
    int st = cuda_st(cudaStreamSynchronize(n->stream), "cudaStreamSynchronize");
    if (!st && n->hstream) st = cuda_st(cudaStreamSynchronize(n->hstream), "cudaStreamSynchronize");
    if (st) return st;
    if (*b) tess__cache_free_work(&n->rt->cache, *b);
    *b = NULL;
    *cap = 0;
    if (tess__cache_alloc_work(&n->rt->cache, n->dev, need, b))
        return tess__fail(TESS_ENOMEM, "pgemm: %zu bytes of device memory for the exchange buffers", need);
    *cap = need;
    return TESS_OK;
}

/* Post the MPI half of a unit: receives into the unit's pinned buffer, packed in
 * tess__redist_blocks' order; sends straight from the local arrays through a datatype that
 * lists the same blocks in the same order (tess__redist_types). */
static int remote_post(struct tess__nccl *n, struct nunit *u, uint64_t *sent, uint64_t *recvd) {
    const struct tess__comm_grid *g = u->g;
    int me_r = g->at.myrow, me_c = g->at.mycol, st = TESS_OK, size = n->size;
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
    u->nreq = 0;
    for (int j = 0; j < size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        size_t rb = u->hoff[j + 1] - u->hoff[j];
        if (rb) {
            st = TESS__MPI(MPI_Irecv(u->hbuf + u->hoff[j], (int)(rb / n->es), n->elem, j, 7, g->comm,
                                     &u->req[u->nreq]));
            if (!st) u->nreq++, *recvd += rb;
        }
        MPI_Datatype t = MPI_DATATYPE_NULL;
        if (!st)
            st = tess__redist_types(u->ops, 2, me_r, me_c, u->prow[j], u->pcol[j], u->k0, u->k1,
                                    u->kbase, u->s0, u->s1, true, n->elem, &t);
        if (!st && t != MPI_DATATYPE_NULL) {
            MPI_Count sz = 0;
            MPI_Type_size_x(t, &sz);
            st = TESS__MPI(MPI_Isend(MPI_BOTTOM, 1, t, j, 7, g->comm, &u->req[u->nreq]));
            if (!st) u->nreq++, *sent += (uint64_t)sz;
            MPI_Type_free(&t);
        }
    }
    return st;
}

int tess__nccl_unit(struct tess__nccl *n, const struct tess__comm_grid *g,
                    const struct tess__redist_op *ops, const int *prow, const int *pcol, int size,
                    int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1, int slot,
                    uint64_t *sent, uint64_t *recvd) {
    int me_r = g->at.myrow, me_c = g->at.mycol, st;
    if ((st = cuda_st(cudaSetDevice(n->ordinal), "cudaSetDevice"))) return st;
    if (n->remote && n->es != ops[0].es) { /* the element of this call's precision */
        if (n->elem != MPI_DATATYPE_NULL) MPI_Type_free(&n->elem);
        n->es = ops[0].es;
        st = TESS__MPI(MPI_Type_contiguous((int)n->es, MPI_BYTE, &n->elem));
        if (!st) st = TESS__MPI(MPI_Type_commit(&n->elem));
        if (st) return st;
    }
    /* sizes of everything sent and received over NCCL (ranks of this node) */
    size_t stot = 0, rtot = 0;
    for (int j = 0; j < size; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        int64_t sb = blocks(n, ops, me_r, me_c, prow[j], pcol[j], k0, k1, kbase, s0, s1);
        int64_t rb = blocks(n, ops, prow[j], pcol[j], me_r, me_c, k0, k1, kbase, s0, s1);
        if (sb < 0 || rb < 0) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        stot += (size_t)sb, rtot += (size_t)rb;
    }
    /* ranks of other nodes: MPI, posted now, unpacked in tess__nccl_wait */
    struct nunit *u = &n->unit[slot % NEV];
    u->pending = 0;
    if (n->remote) {
        *u = (struct nunit){.ops = ops, .g = g, .prow = prow, .pcol = pcol, .k0 = k0, .k1 = k1,
                            .kbase = kbase, .s0 = s0, .s1 = s1, .req = u->req, .hbuf = u->hbuf,
                            .hcap = u->hcap, .hoff = u->hoff, .pending = 1};
        if ((st = remote_post(n, u, sent, recvd))) return st;
    }
    /* the send buffer of this unit (two alternate with a pack stream), the H2D stream */
    int bi = n->two ? slot % 2 : 0;
    struct tess__blk **sbp = bi ? &n->sbuf2 : &n->sbuf;
    size_t *scap = bi ? &n->scap2 : &n->scap;
    cudaStream_t hs = n->two ? n->hstream : n->stream;
    if ((st = grow(n, sbp, scap, stot)) || (st = grow(n, &n->rbuf, &n->rcap, rtot)))
        return st;
    struct tess__blk *sbuf = *sbp;
    /* two streams: nothing is packed into this buffer before its last send has ended */
    if (n->two) st = cuda_st(cudaStreamWaitEvent(hs, n->sent[bi], 0), "cudaStreamWaitEvent");
    *sent += stot;
    *recvd += rtot;
    /* self: straight into the panel */
    if (blocks(n, ops, me_r, me_c, me_r, me_c, k0, k1, kbase, s0, s1) < 0)
        return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    for (size_t i = 0; i < n->nb && !st; i++) {
        const struct nblk *b = &n->b[i];
        const struct tess__redist_op *op = &ops[b->op];
        size_t es = op->es;
        st = cuda_st(cudaMemcpy2DAsync((char *)op->buf + (size_t)(b->tr + b->tc * op->ldbuf) * es,
                                       (size_t)op->ldbuf * es,
                                       (const char *)op->X + (size_t)(b->sr + b->sc * op->ldx) * es,
                                       (size_t)op->ldx * es, (size_t)b->rows * es, (size_t)b->cols,
                                       cudaMemcpyHostToDevice, hs),
                     "H2D into the panel");
    }
    /* pack what the peers of this node need */
    size_t off = 0;
    size_t *soff = calloc((size_t)size * 2 + 2, sizeof *soff);
    if (!soff) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    size_t *roff = soff + size + 1;
    for (int j = 0; j < size && !st; j++) {
        soff[j] = off;
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (blocks(n, ops, me_r, me_c, prow[j], pcol[j], k0, k1, kbase, s0, s1) < 0) {
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
            break;
        }
        for (size_t i = 0; i < n->nb && !st; i++) {
            const struct nblk *b = &n->b[i];
            const struct tess__redist_op *op = &ops[b->op];
            size_t es = op->es, w = (size_t)b->rows * es;
            st = cuda_st(cudaMemcpy2DAsync((char *)sbuf->ptr + off, w,
                                           (const char *)op->X + (size_t)(b->sr + b->sc * op->ldx) * es,
                                           (size_t)op->ldx * es, w, (size_t)b->cols,
                                           cudaMemcpyHostToDevice, hs),
                         "H2D pack");
            off += w * (size_t)b->cols;
        }
    }
    soff[size] = off;
    /* two streams: the transfer stream takes over once the unit is packed (and in the panel) */
    if (!st && n->two) st = cuda_st(cudaEventRecord(n->packed, hs), "cudaEventRecord");
    if (!st && n->two)
        st = cuda_st(cudaStreamWaitEvent(n->stream, n->packed, 0), "cudaStreamWaitEvent");
    /* the exchange among the ranks of this node */
    off = 0;
    for (int j = 0; j < size && !st; j++) {
        roff[j] = off;
        if (j == g->rank || n->nrank[j] < 0) continue;
        int64_t rb = blocks(n, ops, prow[j], pcol[j], me_r, me_c, k0, k1, kbase, s0, s1);
        off += (size_t)rb;
    }
    roff[size] = off;
    if (!st) st = nccl_st(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        size_t sb = soff[j + 1] - soff[j], rb = roff[j + 1] - roff[j];
        if (sb) st = nccl_st(ncclSend((char *)sbuf->ptr + soff[j], sb, ncclChar, n->nrank[j], n->comm, n->stream), "ncclSend");
        if (!st && rb) st = nccl_st(ncclRecv((char *)n->rbuf->ptr + roff[j], rb, ncclChar, n->nrank[j], n->comm, n->stream), "ncclRecv");
    }
    if (!st) st = nccl_st(ncclGroupEnd(), "ncclGroupEnd");
    if (!st && n->two) st = cuda_st(cudaEventRecord(n->sent[bi], n->stream), "cudaEventRecord");
    /* unpack into the panel */
    for (int j = 0; j < size && !st; j++) {
        if (j == g->rank || n->nrank[j] < 0) continue;
        if (blocks(n, ops, prow[j], pcol[j], me_r, me_c, k0, k1, kbase, s0, s1) < 0) {
            st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
            break;
        }
        size_t o = roff[j];
        for (size_t i = 0; i < n->nb && !st; i++) {
            const struct nblk *b = &n->b[i];
            const struct tess__redist_op *op = &ops[b->op];
            size_t es = op->es, w = (size_t)b->rows * es;
            st = cuda_st(cudaMemcpy2DAsync((char *)op->buf + (size_t)(b->tr + b->tc * op->ldbuf) * es,
                                           (size_t)op->ldbuf * es, (const char *)n->rbuf->ptr + o, w,
                                           w, (size_t)b->cols, cudaMemcpyDeviceToDevice, n->stream),
                         "D2D unpack");
            o += w * (size_t)b->cols;
        }
    }
    free(soff);
    if (!st && !u->pending) st = cuda_st(cudaEventRecord(n->ev[slot % NEV], n->stream), "cudaEventRecord");
    return st;
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
    for (int j = 0; j < n->size && !st; j++) {
        if (n->nrank[j] >= 0) continue;
        if (blocks(n, u->ops, u->prow[j], u->pcol[j], me_r, me_c, u->k0, u->k1, u->kbase, u->s0,
                   u->s1) < 0)
            return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
        size_t o = u->hoff[j];
        for (size_t i = 0; i < n->nb && !st; i++) {
            const struct nblk *b = &n->b[i];
            const struct tess__redist_op *op = &u->ops[b->op];
            size_t es = op->es, w = (size_t)b->rows * es;
            st = cuda_st(cudaMemcpy2DAsync((char *)op->buf + (size_t)(b->tr + b->tc * op->ldbuf) * es,
                                           (size_t)op->ldbuf * es, u->hbuf + o, w, w, (size_t)b->cols,
                                           cudaMemcpyHostToDevice, n->stream),
                         "H2D of remote pieces");
            o += w * (size_t)b->cols;
        }
    }
    u->pending = 0;
    if (!st) st = cuda_st(cudaEventRecord(n->ev[slot % NEV], n->stream), "cudaEventRecord");
    return st;
}

int tess__nccl_wait(struct tess__nccl *n, int slot) {
    cudaSetDevice(n->ordinal);
    int st = TESS_OK;
    struct nunit *u = &n->unit[slot % NEV];
    if (u->pending) st = remote_finish(n, u, slot);
    if (!st) st = cuda_st(cudaEventSynchronize(n->ev[slot % NEV]), "cudaEventSynchronize");
    if (!st) {
        ncclResult_t ar = ncclSuccess;
        if (ncclCommGetAsyncError(n->comm, &ar) == ncclSuccess && ar != ncclSuccess)
            st = nccl_st(ar, "asynchronous NCCL error");
    }
    return st;
}

#else /* no NCCL in this build: the MPI transport carries everything */

int tess__nccl_get(struct tess__comm_grid *g, struct tess__nccl **out) {
    (void)g;
    *out = NULL;
    return TESS_ENOSYS;
}
void tess__nccl_close(struct tess__nccl *n) { (void)n; }
int tess__nccl_device(const struct tess__nccl *n) { (void)n; return -1; }
int tess__nccl_units_in_flight(const struct tess__nccl *n) { (void)n; return 1; }
size_t tess__nccl_heap_bytes(const struct tess__nccl *n) { (void)n; return 0; }
int tess__nccl_alloc(struct tess__nccl *n, size_t bytes, void **ptr, void **handle) {
    (void)n, (void)bytes, (void)ptr, (void)handle;
    return TESS_ENOSYS;
}
void tess__nccl_free(struct tess__nccl *n, void *handle) { (void)n, (void)handle; }
int tess__nccl_unit(struct tess__nccl *n, const struct tess__comm_grid *g,
                    const struct tess__redist_op *ops, const int *prow, const int *pcol, int size,
                    int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1, int slot,
                    uint64_t *sent, uint64_t *recvd) {
    (void)n, (void)g, (void)ops, (void)prow, (void)pcol, (void)size, (void)k0, (void)k1;
    (void)kbase, (void)s0, (void)s1, (void)slot, (void)sent, (void)recvd;
    return TESS_ENOSYS;
}
int tess__nccl_wait(struct tess__nccl *n, int slot) { (void)n, (void)slot; return TESS_ENOSYS; }

#endif
