/* comm/xport_nccl.c: the device transport's primitives on a GPU: CUDA copies and events on
 * the transport's own streams (non-blocking, on the rank's runtime device 0), and NCCL
 * among the ranks of the node (one communicator per grid and node, its id from the node's
 * rank 0). While it waits on an event or a stream it takes the notices of a peer's lost
 * device (xport_lost.c): a peer's NCCL calls that never run would end none of ours.
 * Owns the NCCL communicator, the streams and the events (created with the transport,
 * destroyed when it closes); only the caller of tess_p?gemm queues work on the streams.
 * Built where the build has NCCL (and so CUDA).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nccl.h>

#include "cuda_check.h"
#include "xport_dev.h"

struct gpu {
    ncclComm_t comm;
    int ordinal;        /* its CUDA ordinal */
    cudaStream_t cs[2]; /* [0] transfer, [1] pack (two streams only) */
    cudaEvent_t cev[NXEV];
    double t_ref; /* timed: host time (tess__now) of EV_REF */
};

static struct gpu *G(const struct tess__xdev *n) { return n->hwst; }

static int gpu_fail(void *ctx, const char *msg) {
    (void)ctx;
    return tess__fail(TESS_EDEVICE, "pgemm (GPU transport): %s", msg);
}
#define CUDA(call) TESS_CUDA_CHECK(call, gpu_fail, NULL)

static int nccl_check(ncclResult_t r, const char *call, const char *file, int line) {
    if (r == ncclSuccess) return TESS_OK;
    return tess__fail(TESS_ECOMM, "pgemm (GPU transport): %s at %s:%d: %s", call,
                      tess__src_file(file), line, ncclGetErrorString(r));
}
#define NCCL(call) nccl_check((call), #call, __FILE__, __LINE__)

static int gpu_open(struct tess__xdev *n, MPI_Comm node, int lrank, int lsize) {
    struct gpu *x = calloc(1, sizeof *x);
    int st = x ? TESS_OK : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (x) {
        n->hwst = x;
        x->ordinal = tess__node_cuda_ordinal(n->rt, 0);
        st = CUDA(cudaSetDevice(x->ordinal));
    }
    for (int w = 0; w <= (int)n->two && !st; w++)
        st = CUDA(cudaStreamCreateWithFlags(&x->cs[w], cudaStreamNonBlocking));
    for (int i = 0; i < NXEV && !st; i++)
        st = CUDA(cudaEventCreateWithFlags(&x->cev[i],
                                           n->timed ? cudaEventDefault : cudaEventDisableTiming));
    if (!st && n->timed) { /* the reference: device time 0 is host time t_ref */
        st = CUDA(cudaEventRecord(x->cev[EV_REF], x->cs[0]));
        if (!st) st = CUDA(cudaEventSynchronize(x->cev[EV_REF]));
        x->t_ref = tess__now();
    }
    if (!st && lrank == 0) st = NCCL(ncclGetUniqueId(&id));
    st = tess__comm_agree(n->base.g, st);
    if (!st) st = TESS__MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, node));
    if (!st) st = NCCL(ncclCommInitRank(&x->comm, lsize, id, lrank));
    return st;
}

static bool gpu_opened(const struct tess__xdev *n) {
    const struct gpu *x = G(n);
    return x && x->cs[0] && x->cev[NXEV - 1] && (!n->two || x->cs[1]);
}

static void gpu_close(struct tess__xdev *n) {
    struct gpu *x = G(n);
    if (!x) return;
    if (x->comm) (n->base.dead ? ncclCommAbort : ncclCommDestroy)(x->comm);
    for (int i = 0; i < NXEV; i++)
        if (x->cev[i]) cudaEventDestroy(x->cev[i]);
    for (int w = 0; w < 2; w++)
        if (x->cs[w]) cudaStreamDestroy(x->cs[w]);
    free(x);
    n->hwst = NULL;
}

static void gpu_abort(struct tess__xdev *n) {
    struct gpu *x = G(n);
    if (x && x->comm) {
        ncclCommAbort(x->comm);
        x->comm = NULL;
    }
}

static int gpu_setdev(struct tess__xdev *n) { return CUDA(cudaSetDevice(G(n)->ordinal)); }

static int gpu_copy(struct tess__xdev *n, int s, int kind, void *dst, size_t dpitch,
                    const void *src, size_t spitch, size_t width, size_t height, const char *what) {
    enum cudaMemcpyKind k = kind == TESS__H2D   ? cudaMemcpyHostToDevice
                            : kind == TESS__D2H ? cudaMemcpyDeviceToHost
                                                : cudaMemcpyDeviceToDevice;
    cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, k, G(n)->cs[s]);
    return tess__cuda_check(e, what, __FILE__, __LINE__, gpu_fail, NULL);
}

static int gpu_record(struct tess__xdev *n, int s, int ev) {
    return CUDA(cudaEventRecord(G(n)->cev[ev], G(n)->cs[s]));
}

static int gpu_stream_wait(struct tess__xdev *n, int s, int ev) {
    return CUDA(cudaStreamWaitEvent(G(n)->cs[s], G(n)->cev[ev], 0));
}

/* Poll until q() stops saying cudaErrorNotReady, taking notices of a peer's lost device
 * meanwhile (its NCCL operations would never end ours). */
static int gpu_poll(struct tess__xdev *n, cudaError_t (*q)(void *), void *arg, const char *what) {
    double t0 = 0;
    for (unsigned spin = 0;; spin++) {
        cudaError_t e = q(arg);
        if (e != cudaErrorNotReady)
            return tess__cuda_check(e, what, __FILE__, __LINE__, gpu_fail, NULL);
        if (!n->base.dead && n->posted) {
            int who = tess__xlost_peer(n);
            if (who >= 0) return tess__xlost_peer_status(n, who);
        }
        if (n->base.dead) { /* aborted: NCCL ends what it had running; bounded all the same */
            if (t0 == 0)
                t0 = tess__now();
            else if (tess__now() - t0 > 10)
                return tess__fail(TESS_EDEVICE, "pgemm: the transport's streams did not drain "
                                                "within 10 s of the abort");
        }
        if (spin > 64) usleep(20);
    }
}
static cudaError_t ev_query(void *e) { return cudaEventQuery((cudaEvent_t)e); }
static cudaError_t st_query(void *s) { return cudaStreamQuery((cudaStream_t)s); }

static int gpu_sync(struct tess__xdev *n, int ev) {
    return gpu_poll(n, ev_query, G(n)->cev[ev], "cudaEventQuery");
}

static int gpu_drain(struct tess__xdev *n) {
    int st = TESS_OK;
    for (int w = 0; w <= (int)n->two && !st; w++)
        st = gpu_poll(n, st_query, G(n)->cs[w], "cudaStreamQuery");
    return st;
}

/* All peers of the node in one NCCL group on the transfer stream. A lost device's
 * communicator is aborted (its peers abort theirs): nothing to queue. */
static int gpu_exchange(struct tess__xdev *n, char *sbuf, const size_t *soff, char *rbuf,
                        const size_t *roff) {
    struct gpu *x = G(n);
    if (n->base.dead) return TESS_OK;
    const int me = n->base.g->rank;
    int st = NCCL(ncclGroupStart());
    if (st) return st;
    for (int j = 0; j < n->base.size && !st; j++) {
        if (j == me || n->nrank[j] < 0) continue;
        size_t sb = soff[j + 1] - soff[j], rb = roff[j + 1] - roff[j];
        if (sb) st = NCCL(ncclSend(sbuf + soff[j], sb, ncclChar, n->nrank[j], x->comm, x->cs[0]));
        if (!st && rb)
            st = NCCL(ncclRecv(rbuf + roff[j], rb, ncclChar, n->nrank[j], x->comm, x->cs[0]));
    }
    /* ends the group whatever happened, so that NCCL's group state stays balanced */
    int st2 = NCCL(ncclGroupEnd());
    return st ? st : st2;
}

static int gpu_pieces(struct tess__xdev *n, const struct tess__dpiece *send, int ns,
                      const struct tess__dpiece *recv, int nr) {
    struct gpu *x = G(n);
    if (n->base.dead) return TESS_OK;
    int st = NCCL(ncclGroupStart());
    if (st) return st;
    for (int i = 0; i < ns && !st; i++)
        if (send[i].bytes)
            st = NCCL(ncclSend(send[i].ptr, send[i].bytes, ncclChar, n->nrank[send[i].rank],
                               x->comm, x->cs[0]));
    for (int i = 0; i < nr && !st; i++)
        if (recv[i].bytes)
            st = NCCL(ncclRecv(recv[i].ptr, recv[i].bytes, ncclChar, n->nrank[recv[i].rank],
                               x->comm, x->cs[0]));
    int st2 = NCCL(ncclGroupEnd()); /* whatever happened: NCCL's group state stays balanced */
    return st ? st : st2;
}

static int gpu_async_error(struct tess__xdev *n) {
    ncclResult_t ar = ncclSuccess;
    if (G(n)->comm && ncclCommGetAsyncError(G(n)->comm, &ar) == ncclSuccess && ar != ncclSuccess)
        return tess__fail(TESS_ECOMM, "pgemm (GPU transport): asynchronous NCCL error: %s",
                          ncclGetErrorString(ar));
    return TESS_OK;
}

static int gpu_time(struct tess__xdev *n, int ev, double *t) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, G(n)->cev[EV_REF], G(n)->cev[ev]) != cudaSuccess) {
        (void)cudaGetLastError();
        return TESS_EAGAIN;
    }
    *t = G(n)->t_ref + 1e-3 * ms;
    return TESS_OK;
}

/* Units of at least 512 MiB: NCCL's rate. */
const struct tess__xdev_hw tess__xdev_gpu = {
    .name = "nccl",
    .lose_on_error = true,
    .int_counts = false,
    .min_unit = (int64_t)512 << 20,
    .open = gpu_open,
    .opened = gpu_opened,
    .close = gpu_close,
    .setdev = gpu_setdev,
    .copy = gpu_copy,
    .record = gpu_record,
    .stream_wait = gpu_stream_wait,
    .sync = gpu_sync,
    .drain = gpu_drain,
    .exchange = gpu_exchange,
    .pieces = gpu_pieces,
    .async_error = gpu_async_error,
    .time = gpu_time,
    .abort = gpu_abort,
};
