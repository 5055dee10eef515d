/* src/backend/backend.h: the device interface. Each backend is one const ops table; the node
 * runtime (node/) and the cache (cache/) drive every device through it and nothing else.
 * Backends: cuda.c (cuBLAS, CUDA streams and events, P2P) and the host backend (host.c: the
 * CPU worker, in place on host memory, and the emulated devices).
 * Semantics every backend keeps, CUDA's: work on one stream runs in order, streams in no
 * order relative to each other; a hook that queues work returns at once, its effect visible
 * once an event recorded behind it completes; an event records a stream's position at
 * event_record, and stream_wait captures the event as it is at that call; event_query
 * answers TESS_OK, TESS_EAGAIN or an error; a stream may wait on another device's event of
 * the same backend; errors are sticky per device (TESS_EDEVICE, events never OK). Only the
 * device's worker queues work on its streams; event_query/event_sync from any thread.
 */
#ifndef TESS_BACKEND_H
#define TESS_BACKEND_H

#include "internal.h"

/* Direction of a 2D copy. P2P: src is in the memory of device `peer`, dst in this one. */
enum tess__copy_kind { TESS__H2D = 0, TESS__D2H = 1, TESS__D2D = 2, TESS__P2P = 3 };
/* Or'ed into a copy's kind: queue it only if the calling thread need not wait for host
 * resources to do so (CUDA: a free staging page for a pageable host side); else
 * TESS_EAGAIN, nothing queued and no error recorded. For optional copies (write-behind);
 * a copy its caller needs never asks it. */
#define TESS__COPY_NOWAIT 0x100

/* Capabilities of a device instance. */
enum {
    TESS__CAP_UNIFIED = 1u << 0, /* device memory is host memory: operands are used in place */
    TESS__CAP_P2P = 1u << 1,     /* can copy from peers of the same backend (see can_peer) */
    TESS__CAP_SHARED = 1u << 2   /* one compute engine: a kernel alone runs at the device's
                                     whole rate and concurrent ones share it (GPUs, the CPU
                                     worker, emulated devices with shared_engine); the end
                                     game (node/balance.c) relies on it */
};

typedef struct tess__event tess__event; /* backend-defined */

/* Tile kernels, with CBLAS column-major semantics (side 'L'/'R', uplo 'U'/'L', trans
 * 'N'/'T'/'C', diag 'U'/'N'):
 *   GEMM   C = alpha op(A) op(B) + beta C                 (m x n, k; ta, tb)
 *   SYMM   C = alpha A B + beta C (side L) or alpha B A + beta C (side R), A symmetric
 *   HEMM   as SYMM, A Hermitian
 *   SYRK   C = alpha op(A) op(A)^T + beta C, C n x n, op(A) n x k (ta 'N' or 'T'); uplo
 *   HERK   C = alpha op(A) op(A)^H + beta C, alpha and beta real (.s/.d of the scalar)
 *   SYR2K  C = alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C
 *   HER2K  C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C, beta real
 *   TRMM   C = alpha op(A) C (side L) or alpha C op(A) (side R), in place on C (B unused)
 *   TRSM   C = alpha op(A)^-1 C (side L) or alpha C op(A)^-1 (side R), in place on C
 *   POTRF  C = chol(C) in place, C n x n (m = n) Hermitian positive definite: uplo 'L'
 *          C = L L^H, 'U' C = U^H U, the factor in that triangle; A, B, alpha, beta unused;
 *          *info gets LAPACK's INFO (0, or j > 0: the leading minor of order j is not
 *          positive definite), visible once an event recorded after the kernel completed
 *   GETRF  C = P L U in place, C m x n (LAPACK's xGETRF: partial pivoting, L unit lower
 *          trapezoidal, U upper); ipiv[0 .. min(m, n) - 1] gets its 1-based pivots (row i
 *          of C was interchanged with row ipiv[i]) and *info its INFO (0, or j > 0: U(j, j)
 *          is exactly zero, the factorization completed), host ints visible once an event
 *          recorded after the kernel completed; A, B, alpha, beta unused
 *   LASWP  LAPACK's xLASWP with k1 = 1, k2 = k, incx = 1 on C, m x n: for i = 0 .. k - 1 in
 *          order, row i of C is interchanged with row ipiv[i] - 1 (every ipiv[i] <= m); ipiv
 *          is host memory, final when the kernel is queued, and read before the call returns
 * Only the triangle `uplo` of C is referenced by SYRK/HERK/SYR2K/HER2K, only that of A by
 * SYMM/HEMM/TRMM/TRSM. beta = 0 never reads C. */
enum tess__kernel_kind {
    TESS__K_GEMM = 0,
    TESS__K_SYMM,
    TESS__K_HEMM,
    TESS__K_SYRK,
    TESS__K_HERK,
    TESS__K_SYR2K,
    TESS__K_HER2K,
    TESS__K_TRMM,
    TESS__K_TRSM,
    TESS__K_POTRF,
    TESS__K_GETRF,
    TESS__K_LASWP
};

struct tess__kernel {
    enum tess__kernel_kind kind;
    tess_dtype_t dt;
    char side, uplo, ta, tb, diag;
    int64_t m, n, k;
    const void *alpha, *beta; /* host scalars of precision dt, read before the call returns */
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    int *info; /* POTRF, GETRF: host int for LAPACK's INFO (see above); NULL for the others */
    int *ipiv; /* GETRF: host ints it writes; LASWP: host ints it reads (see above) */
};

/* Streams kept for a factorization's critical path (task.urgent) on a device of nstreams:
 * the first ones, two where eight or so leave room for the updates, one of two, none of
 * one. The CUDA backend creates them at the greatest stream priority. */
static inline int tess__crit_streams(int nstreams) {
    return nstreams > 2 ? 2 : nstreams > 1 ? 1 : 0;
}

/* What the runtime asks of one device when opening it. */
struct tess__dev_params {
    int ordinal;       /* backend-local index: CUDA device number, or emulated device index */
    int nstreams;      /* streams to create (1..TESS_MAX_STREAMS; emulated: up to
                             TESS_COMM_STREAMS more, the distributed layer's; and
                             TESS_AUX_STREAMS more, the worker's write-behind) */
    size_t mem_cap;    /* bytes wanted for the device heap arena; 0 = backend default */
    double link_gbs;   /* emulated: copy bandwidth in GB/s (0 = unthrottled) */
    double gflops;     /* emulated: kernel rate in GFLOP/s (0 = unthrottled) */
    int64_t fault_at;  /* emulated: the k-th copy/gemm (1-based) fails; 0 = never */
    int jitter_us;     /* emulated: random delay up to this before each op */
    int shared_engine; /* emulated: the streams' kernels take turns on one engine (its
                             gflops in all), as on a GPU; 0: each stream computes at gflops */
    int timing;        /* events carry completion times (event_time), for the trace */
};

/* Description of an opened device (filled by open). */
struct tess__dev_desc {
    char name[64]; /* "NVIDIA H100 80GB HBM3 (cuda:0)", "emulated:2", "cpu" */
    tess_dev_kind_t kind;
    unsigned caps;    /* TESS__CAP_* */
    size_t mem_total; /* physical memory of the device, bytes (0 if not applicable) */
    double link_gbs;  /* host link bandwidth, informational (0 unknown) */
    int pci_bus;      /* for topology printing, -1 unknown */
};

struct tess__dev_ops {
    const char *name;
    /* Number of devices this backend can open with cfg (CUDA: GPUs visible; emulated:
     * TESSERA_EMULATE; cpu: 1). Never fails; 0 when none. */
    int (*count)(const struct tess__config *cfg);
    /* Open device p->ordinal: create streams, handles, events pool. *bd receives the
     * backend's handle, passed to every other hook. */
    int (*open)(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc);
    /* Wait for all queued work, then free everything of the device (arena included). */
    void (*close)(void *bd);
    /* The one large allocation the device heap is carved from: up to `want` bytes
     * (want = 0: as much as sensible). Returns base and size; called once per device.
     * UNIFIED devices have no arena (return TESS_ENOSYS). */
    int (*arena)(void *bd, size_t want, void **base, size_t *got);
    /* Queue a copy of `height` rows of `width` bytes: row r goes from src + r*spitch to
     * dst + r*dpitch. Host pointers may be pinned or pageable. For P2P, peer is the
     * source device's handle. */
    int (*copy2d)(void *bd, int stream, enum tess__copy_kind kind, void *dst, size_t dpitch,
                  const void *src, size_t spitch, size_t width, size_t height, void *peer);
    /* Queue C = alpha op(A) op(B) + beta C, column-major, ta/tb in 'N','T','C'. alpha and
     * beta point to host scalars of precision dt, read before the call returns. beta = 0
     * must not read C. */
    int (*gemm)(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n,
                int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                int64_t ldb, const void *beta, void *C, int64_t ldc);
    /* Queue one tile kernel (any kind above; GEMM behaves as the gemm hook). */
    int (*kernel)(void *bd, int stream, const struct tess__kernel *k);
    int (*event_create)(void *bd, tess__event **ev);
    void (*event_destroy)(void *bd, tess__event *ev);
    int (*event_record)(void *bd, int stream, tess__event *ev);
    /* TESS_OK once the stream passed the recorded point; TESS_EAGAIN before; <0 on error.
     * An event never recorded reports TESS_OK. */
    int (*event_query)(void *bd, tess__event *ev);
    /* Block until the event is reached (TESS_OK) or the device fails (<0). */
    int (*event_sync)(void *bd, tess__event *ev);
    /* When the stream passed ev's latest record, in tess__now()'s clock: TESS_OK, TESS_EAGAIN
     * (not yet), or TESS_ENOSYS (the device was opened without params.timing). */
    int (*event_time)(void *bd, tess__event *ev, double *t);
    /* Make `stream` wait for ev (ev may belong to another device of this backend). */
    int (*stream_wait)(void *bd, int stream, tess__event *ev);
    /* 1 if this device can copy directly from peer's memory (and access was enabled). */
    int (*can_peer)(void *bd, void *peer);
};

extern const struct tess__dev_ops tess__cpu_ops; /* host.c: the CPU worker */
extern const struct tess__dev_ops tess__emu_ops; /* host.c: emulated devices */
/* host.c's process-wide locks across fork, for the runtime's fork handlers (runtime.c,
 * which holds its life lock around them): prepare takes them, the parent releases them,
 * the child releases them and forgets the parent's stream threads waiting on events. */
void tess__host_fork_prepare(void);
void tess__host_fork_parent(void);
void tess__host_fork_child(void);
#ifdef TESS_HAVE_CUDA
extern const struct tess__dev_ops tess__cuda_ops; /* cuda.c */
/* CUDA ordinal of the i-th GPU selected by cfg->devices, -1 if none. */
int tess__cuda_ordinal(const struct tess__config *cfg, int i);
#endif

#endif /* TESS_BACKEND_H */
