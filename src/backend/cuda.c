/* src/backend/cuda.c: the CUDA backend, one NVIDIA GPU per device instance: its streams
 * (non-blocking), one cuBLAS and one cuSOLVER handle per stream, its heap arena (one
 * cudaMalloc), 2D copies straight from host matrices (pageable ones through stage.c), peer
 * copies, the tile kernels (cuBLAS; POTRF and GETRF: cuSOLVER's cusolverDnXpotrf and
 * cusolverDnXgetrf, their INFO and GETRF's pivots delivered to the host ints in stream
 * order; LASWP: the pivots composed on the host into one row permutation, run by
 * cuda_rows.cu's kernel, or cusolverDn<t>laswp where that kernel is not built; either's
 * ints copied at the call into a pinned slot and from there to the device in stream
 * order), pooled events, sticky failure and injected faults. Semantics of every hook:
 * backend.h.
 * Owns: the CUDA/cuBLAS/cuSOLVER objects of each opened GPU (handles, the device's cuSOLVER
 * params, each stream's cuSOLVER workspaces, INFO ints and pinned pivot staging, pinned
 * buffers outgrown while work may still read them) and the peer-access answers.
 * Pinned staging that queued work may still read is never written by the host (GETRF's is
 * written by the stream only; a LASWP slot only once the event behind its copy completed)
 * nor freed before close (outgrown buffers wait on the retired list: cudaFreeHost cannot
 * be put in stream order, as a host function may make no CUDA call).
 * Threads: the worker's hooks make the device current and leave it so; the cold ones (open,
 * close, arena, can_peer, an event-pool miss) restore the caller's device; event_query and
 * event_sync run on any thread without changing it.
 * Failure: every CUDA and cuBLAS call goes through TESS_CU (cuda_check.h): an error marks the
 * device failed for good (later hooks TESS_EDEVICE, events never OK); the few answers that
 * are not failures (no GPU, peer queries, out of memory, not ready, teardown) are checked by
 * hand; a wait on a failed device's event is skipped, as in the host backend.
 * Lifetime: events outlive their device (the record is counted by the device and each
 * event). Lock order: the event-pool mutex is a leaf; so are stage.c's locks.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include "backend.h"
#include "cuda_check.h"
#include "rowperm.h"
#include "stage.h"
#ifdef TESS_HAVE_CUDA_KERNELS
#include "cuda_rows.h"
#endif

/* cuBLAS 12 added the _64 entry points (64-bit m, n, k, ld); before, 32-bit only. */
#if defined(CUBLAS_VER_MAJOR) && CUBLAS_VER_MAJOR >= 12
#define CUDA_GEMM_64 1
#else
#define CUDA_GEMM_64 0
#endif

struct cuda_dev;

#define CUDA_STREAMS (TESS_MAX_STREAMS + TESS_AUX_STREAMS)

/* What POTRF copies back per stream (pinned; cuda_potrf): INFO and the real part of the
 * tile's last diagonal entry; GETRF (cuda_getrf) copies its INFO into info too. */
struct potrf_back {
    int info;
    union {
        float f;
        double d;
    } diag;
};

/* A stream's cuSOLVER scratch (ws_reserve; POTRF, GETRF, LASWP), used by the device's
 * worker thread only and by the stream's work in its order: the device workspace (grown on
 * demand, stream-ordered where the GPU has memory pools; GETRF's int64 pivots lie past
 * cuSOLVER's part, LASWP's ints at its start) and a host one if cuSOLVER asks for that too. */
struct solver_ws {
    void *dev; /* device workspace, dev_bytes */
    size_t dev_bytes;
    void *host; /* host workspace (malloc), host_bytes */
    size_t host_bytes;
};

/* Pinned host memory (cudaMallocHost), grown by pinned_reserve. */
struct pinned {
    void *buf;
    size_t bytes;
};

/* An outgrown pinned buffer that queued work may still read: freed at close (teardown). */
struct pinned_old {
    void *buf;
    struct pinned_old *next;
};

/* LASWP's pivots on their way to the device, per stream (cuda_laswp): a ring of pinned
 * slots. The caller's ints are copied into the next slot at the call, an H2D copy takes
 * them to the stream's device workspace and the slot's event is recorded behind it; a slot
 * is written again only once that event completed (waited for when the ring wraps onto a
 * slot whose copy has not run yet). */
#define LASWP_SLOTS 8
struct piv_ring {
    struct {
        struct pinned p;
        cudaEvent_t ev; /* created at the slot's first use */
        bool busy;      /* ev recorded behind a copy from p, not yet seen complete */
    } slot[LASWP_SLOTS];
    int next;
};

/* One CUDA event of one device. `recorded` lets a pooled event answer "never recorded"
 * (TESS_OK) after reuse without asking CUDA. */
struct tess__event {
    cudaEvent_t ev;
    struct cuda_dev *owner;
    _Atomic int recorded;
    struct tess__event *next_free; /* pool list (owner->evmu) */
};

/* Failure states of a device: healthy, being marked (message being written), failed. */
enum { DEV_OK = 0, DEV_FAILING = 1, DEV_FAILED = 2 };

struct cuda_dev {
    int ord; /* CUDA device number */
    int nstreams;
    cudaStream_t stream[CUDA_STREAMS];
    cublasHandle_t blas[CUDA_STREAMS];        /* blas[i] is bound to stream[i] */
    cusolverDnHandle_t solver[CUDA_STREAMS];  /* solver[i] too */
    cusolverDnParams_t sparams;               /* the device's cusolverDnX* params */
    struct solver_ws sws[CUDA_STREAMS];       /* cuSOLVER workspaces per stream */
    int *dinfo;                               /* device ints [nstreams]: devInfo */
    struct potrf_back *pback;                 /* pinned [nstreams]: INFO etc. copied back */
    struct pinned pivback[CUDA_STREAMS];      /* GETRF: int64 pivots copied back */
    struct piv_ring pivin[CUDA_STREAMS];      /* LASWP: pivots on their way in */
    struct tess__rowperm rperm[CUDA_STREAMS]; /* LASWP: pivots composed (rowperm.h) */
    size_t smem_optin;                        /* cudaDeviceProp.sharedMemPerBlockOptin */
    struct pinned_old *retired;               /* outgrown pinned buffers, freed at close */
    int mempools;                             /* cudaMallocAsync usable (memory pools) */
    void *arena;
    size_t arena_bytes;
    size_t max_pitch;     /* cudaDeviceProp.memPitch; larger: row by row */
    int uva;              /* cudaDeviceProp.unifiedAddressing */
    int64_t fault_at;     /* injected fault: the k-th copy/gemm fails; 0 never */
    _Atomic int64_t ops;  /* copy2d + gemm calls so far */
    _Atomic int state;    /* DEV_* */
    char why[384];        /* first failure, valid once state == DEV_FAILED */
    int ndev;             /* CUDA devices visible at open */
    _Atomic int *peer;    /* [ndev]: 0 not asked, 1 usable, -1 not usable */
    _Atomic int refs;     /* 1 for the open device + 1 per event */
    pthread_mutex_t evmu; /* guards ev_free and closed */
    struct tess__event *ev_free;
    int closed;
    int timing;                /* events time their records (the trace) */
    cudaEvent_t t0_ev;         /* reference event for event_time, reached ... */
    double t0_host;            /* ... at this tess__now() */
    struct tess__stage *stage; /* pageable staging (stage.c), NULL when off */
};

/* ---- failure: the one wrapper every vendor call goes through ------------------------- */

static bool dev_failed(struct cuda_dev *d) {
    return atomic_load_explicit(&d->state, memory_order_acquire) != DEV_OK;
}

/* Mark d failed (the first failure's message is kept) and record the message. */
static int dev_fail(struct cuda_dev *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int dev_fail(struct cuda_dev *d, const char *fmt, ...) {
    char msg[sizeof d->why];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int expect = DEV_OK;
    if (atomic_compare_exchange_strong(&d->state, &expect, DEV_FAILING)) {
        memcpy(d->why, msg, sizeof msg);
        atomic_store_explicit(&d->state, DEV_FAILED, memory_order_release);
    }
    tess__stage_dead(d->stage); /* its staging threads stop touching the user's memory */
    return tess__fail(TESS_EDEVICE, "cuda:%d: %s", d->ord, msg);
}

/* The answer of every hook of a device that failed earlier. */
static int dev_dead(struct cuda_dev *d) {
    int s = atomic_load_explicit(&d->state, memory_order_acquire);
    return tess__fail(TESS_EDEVICE, "cuda:%d: device failed earlier: %s", d->ord,
                      s == DEV_FAILED ? d->why : "(failure being recorded)");
}

static int dev_fail_msg(void *d, const char *msg) { return dev_fail(d, "%s", msg); }

static int cu_check_(struct cuda_dev *d, cudaError_t e, const char *call, const char *file,
                     int line) {
    return tess__cuda_check(e, call, file, line, dev_fail_msg, d);
}

static int cublas_check_(struct cuda_dev *d, cublasStatus_t e, const char *call, const char *file,
                         int line) {
    if (e == CUBLAS_STATUS_SUCCESS) return TESS_OK;
    return dev_fail(d, "%s at %s:%d: %s (%s)", call, tess__src_file(file), line,
                    cublasGetStatusName(e), cublasGetStatusString(e));
}

/* cuSOLVER has no status-name call: the names of cusolver_common.h. */
static const char *cusolver_status_name(cusolverStatus_t e) {
    switch (e) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR: return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
        return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "cuSOLVER status";
    }
}

static int cusolver_check_(struct cuda_dev *d, cusolverStatus_t e, const char *call,
                           const char *file, int line) {
    if (e == CUSOLVER_STATUS_SUCCESS) return TESS_OK;
    return dev_fail(d, "%s at %s:%d: %s (%d)", call, tess__src_file(file), line,
                    cusolver_status_name(e), (int)e);
}

/* TESS_CU(d, call): run a CUDA runtime, cuBLAS or cuSOLVER call once; TESS_OK, or mark d
 * failed and return TESS_EDEVICE with the call, file:line and the library's message. The
 * controlling expression of _Generic is not evaluated, so `call` runs exactly once. */
#define TESS_CU(d, call)                       \
    _Generic((call), cudaError_t               \
             : cu_check_, cublasStatus_t       \
             : cublas_check_, cusolverStatus_t \
             : cusolver_check_)((d), (call), #call, __FILE__, __LINE__)

/* ---- current device ---------------------------------------------------------------- */

/* Cold hooks: make d current, remember the caller's device for leave(). */
static int enter(struct cuda_dev *d, int *prev) {
    if (cudaGetDevice(prev) != cudaSuccess) {
        (void)cudaGetLastError();
        *prev = -1;
    }
    if (*prev == d->ord) return TESS_OK;
    return TESS_CU(d, cudaSetDevice(d->ord));
}

/* Give the caller back its device (ord: the device enter() made current). */
static void leave(int ord, int prev) {
    if (prev >= 0 && prev != ord && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- count: which GPUs cfg->devices selects ----------------------------------------- */

static int visible_gpus(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { /* no driver, no device, ... */
        (void)cudaGetLastError();
        return 0;
    }
    return n > 0 ? n : 0;
}

/* Fill out[] with the CUDA ordinals cfg->devices selects, in its order, without
 * duplicates: "all" (or empty, or no cfg) = every visible GPU, "none" = no GPU, otherwise a
 * comma list of ordinals; ordinals not visible are left out with a warning. */
static int select_gpus(const struct tess__config *cfg, int out[TESS_MAX_DEVICES]) {
    int n = visible_gpus(), cnt = 0;
    const char *s = cfg ? cfg->devices : "";
    while (*s == ' ') s++;
    if (*s == '\0' || strcmp(s, "all") == 0) {
        for (int i = 0; i < n && cnt < TESS_MAX_DEVICES; i++) out[cnt++] = i;
        return cnt;
    }
    if (strcmp(s, "none") == 0) return 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) { /* not a number: skip the entry */
            tess__log(TESS__LOG_WARN, "TESSERA_DEVICES: '%s': entry is not a GPU ordinal",
                      cfg->devices);
            while (*end && *end != ',') end++;
        } else if (v < 0 || v >= n) {
            tess__log(TESS__LOG_WARN, "TESSERA_DEVICES: GPU %ld is not visible (%d GPUs)", v, n);
        } else {
            bool dup = false;
            for (int i = 0; i < cnt; i++) dup = dup || out[i] == (int)v;
            if (!dup && cnt < TESS_MAX_DEVICES) out[cnt++] = (int)v;
        }
        s = end;
        while (*s == ' ' || *s == ',') s++;
    }
    return cnt;
}

static int cuda_count(const struct tess__config *cfg) {
    int ord[TESS_MAX_DEVICES];
    return select_gpus(cfg, ord);
}

int tess__cuda_ordinal(const struct tess__config *cfg, int i) {
    int ord[TESS_MAX_DEVICES];
    int n = select_gpus(cfg, ord);
    return i >= 0 && i < n ? ord[i] : -1;
}

/* ---- open / close -------------------------------------------------------------------- */

static void dev_unref(struct cuda_dev *d) {
    if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&d->evmu);
    free(d->peer);
    free(d);
}

static void event_free(struct tess__event *e) {
    if (cudaEventDestroy(e->ev) != cudaSuccess) (void)cudaGetLastError();
    struct cuda_dev *d = e->owner;
    free(e);
    dev_unref(d);
}

/* Close (and a failed open): wait for the streams, then free handles, streams, pooled
 * events and the arena, with d current. Events still held by the runtime stay valid. */
static void teardown(struct cuda_dev *d) {
    int synced = 1;
    for (int i = 0; i < d->nstreams; i++) {
        if (d->stream[i] && cudaStreamSynchronize(d->stream[i]) != cudaSuccess) {
            (void)cudaGetLastError();
            synced = 0;
        }
    }
    /* staging: its pieces finish, its pages go (kept if a stream could not be synced) */
    struct tess__stage *st = d->stage;
    d->stage = NULL;
    tess__stage_close(st, synced);
    for (int i = 0; i < d->nstreams; i++) {
        if (d->blas[i]) (void)cublasDestroy(d->blas[i]);
        if (d->solver[i]) (void)cusolverDnDestroy(d->solver[i]);
        /* cuSOLVER workspaces: the synchronized stream holds no work that reads them (a
         * pool allocation freed stream-ordered on its stream, before that is destroyed) */
        struct solver_ws *w = &d->sws[i];
        cudaError_t fe = cudaSuccess;
        if (w->dev)
            fe = d->mempools && d->stream[i] ? cudaFreeAsync(w->dev, d->stream[i])
                                             : cudaFree(w->dev);
        if (fe != cudaSuccess) (void)cudaGetLastError();
        free(w->host);
        memset(w, 0, sizeof *w);
        /* pinned pivot staging: nothing queued reads it any more */
        if (d->pivback[i].buf && cudaFreeHost(d->pivback[i].buf) != cudaSuccess)
            (void)cudaGetLastError();
        memset(&d->pivback[i], 0, sizeof d->pivback[i]);
        for (int j = 0; j < LASWP_SLOTS; j++) {
            struct pinned *sp = &d->pivin[i].slot[j].p;
            if (sp->buf && cudaFreeHost(sp->buf) != cudaSuccess) (void)cudaGetLastError();
            cudaEvent_t sev = d->pivin[i].slot[j].ev;
            if (sev && cudaEventDestroy(sev) != cudaSuccess) (void)cudaGetLastError();
        }
        memset(&d->pivin[i], 0, sizeof d->pivin[i]);
        tess__rowperm_free(&d->rperm[i]);
        if (d->stream[i] && cudaStreamDestroy(d->stream[i]) != cudaSuccess)
            (void)cudaGetLastError();
    }
    while (d->retired) {
        struct pinned_old *o = d->retired;
        d->retired = o->next;
        if (cudaFreeHost(o->buf) != cudaSuccess) (void)cudaGetLastError();
        free(o);
    }
    if (d->sparams) (void)cusolverDnDestroyParams(d->sparams);
    d->sparams = NULL;
    if (d->dinfo && cudaFree(d->dinfo) != cudaSuccess) (void)cudaGetLastError();
    if (d->pback && cudaFreeHost(d->pback) != cudaSuccess) (void)cudaGetLastError();
    d->dinfo = NULL;
    d->pback = NULL;
    if (d->t0_ev && cudaEventDestroy(d->t0_ev) != cudaSuccess) (void)cudaGetLastError();
    pthread_mutex_lock(&d->evmu);
    struct tess__event *e = d->ev_free;
    d->ev_free = NULL;
    d->closed = 1;
    pthread_mutex_unlock(&d->evmu);
    while (e) {
        struct tess__event *next = e->next_free;
        event_free(e); /* the device's own reference keeps d alive here */
        e = next;
    }
    if (d->arena && cudaFree(d->arena) != cudaSuccess) (void)cudaGetLastError();
    d->arena = NULL;
}

/* stage.c reports a failed CUDA call of a staged copy through this. */
static int stage_fail(void *ctx, const char *msg) { return dev_fail(ctx, "%s", msg); }

/* Pageable staging per TESSERA_STAGING / TESSERA_STAGING_THREADS, read from the environment
 * through the knob table as the runtime read it at tess_init (dev_params carries no such
 * field). Staging is an optimisation: when it cannot be set up the device copies directly.
 * d is current, its streams idle. */
static void stage_setup(struct cuda_dev *d) {
    struct tess__config cfg;
    if (tess__config_load(&cfg) != TESS_OK) {
        tess__log(TESS__LOG_WARN, "cuda:%d: staging off: %s", d->ord, tess_last_error());
        tess__clear_error();
        return;
    }
    if (cfg.staging <= 0) return;
    /* TESSERA_FAULT's "pin:N" entry (issue 8: a failed pinned allocation) */
    struct tess__stage_params sp = {
        .ord = d->ord,
        .budget = cfg.staging,
        .threads = cfg.staging_threads,
        .summary = cfg.summary,
        .probe = d->stream[0],
        .fail = stage_fail,
        .ctx = d,
        .fail_slab = (int)tess__fault_at(cfg.emu_fault, "pin"),
    };
    if (tess__stage_open(&sp, &d->stage) != TESS_OK) d->stage = NULL;
}

static int cuda_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    *bd = NULL;
    int ndev = visible_gpus();
    if (p->ordinal < 0 || p->ordinal >= ndev)
        return tess__fail(TESS_ENODEV, "cuda: no GPU %d (%d visible)", p->ordinal, ndev);
    if (p->nstreams < 1 || p->nstreams > TESS_MAX_STREAMS + TESS_AUX_STREAMS)
        return tess__fail(TESS_EINVAL, "cuda:%d: %d streams (1..%d)", p->ordinal, p->nstreams,
                          TESS_MAX_STREAMS + TESS_AUX_STREAMS);
    struct cuda_dev *d = calloc(1, sizeof *d);
    _Atomic int *peer = calloc((size_t)ndev, sizeof *peer);
    if (!d || !peer) {
        free(d);
        free(peer);
        return tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", p->ordinal);
    }
    d->ord = p->ordinal;
    d->ndev = ndev;
    d->peer = peer;
    for (int i = 0; i < ndev; i++) atomic_init(&d->peer[i], 0);
    d->fault_at = p->fault_at;
    d->timing = p->timing;
    atomic_init(&d->ops, 0);
    atomic_init(&d->state, DEV_OK);
    atomic_init(&d->refs, 1);
    pthread_mutex_init(&d->evmu, NULL);

    int prev, rc = enter(d, &prev);
    struct cudaDeviceProp prop;
    if (rc == TESS_OK) rc = TESS_CU(d, cudaGetDeviceProperties(&prop, d->ord));
    /* the first streams (tess__crit_streams) at the greatest priority: the worker keeps
     * their slots for a factorization's critical path (node/worker.c), whose blocks then
     * run ahead of the updates' */
    int lowest = 0, greatest = 0;
    if (rc == TESS_OK && cudaDeviceGetStreamPriorityRange(&lowest, &greatest) != cudaSuccess) {
        (void)cudaGetLastError();
        lowest = greatest = 0;
    }
    for (int i = 0; rc == TESS_OK && i < p->nstreams; i++) {
        rc = TESS_CU(d, cudaStreamCreateWithPriority(&d->stream[i], cudaStreamNonBlocking,
                                                     i < tess__crit_streams(p->nstreams) ? greatest
                                                                                         : lowest));
        d->nstreams = i + 1; /* teardown cleans up what exists */
        if (rc == TESS_OK) rc = TESS_CU(d, cublasCreate(&d->blas[i]));
        if (rc == TESS_OK) rc = TESS_CU(d, cublasSetStream(d->blas[i], d->stream[i]));
        /* alpha and beta are host scalars, read before the gemm call returns */
        if (rc == TESS_OK)
            rc = TESS_CU(d, cublasSetPointerMode(d->blas[i], CUBLAS_POINTER_MODE_HOST));
        if (rc == TESS_OK) rc = TESS_CU(d, cusolverDnCreate(&d->solver[i]));
        if (rc == TESS_OK) rc = TESS_CU(d, cusolverDnSetStream(d->solver[i], d->stream[i]));
    }
    /* POTRF, GETRF: the params of the 64-bit API (default algorithm), an INFO int per
     * stream on the device and one pinned on the host (cuda_potrf, cuda_getrf) */
    if (rc == TESS_OK) rc = TESS_CU(d, cusolverDnCreateParams(&d->sparams));
    if (rc == TESS_OK)
        rc = TESS_CU(d, cudaMalloc((void **)&d->dinfo, sizeof(int) * (size_t)p->nstreams));
    if (rc == TESS_OK)
        rc = TESS_CU(d, cudaMallocHost((void **)&d->pback, sizeof *d->pback * (size_t)p->nstreams));
    if (rc == TESS_OK) {
        int pools = 0;
        if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, d->ord) !=
            cudaSuccess) {
            (void)cudaGetLastError();
            pools = 0;
        }
        d->mempools = pools;
    }
    if (rc != TESS_OK) {
        teardown(d);
        dev_unref(d);
        leave(p->ordinal, prev);
        return rc;
    }
    d->max_pitch = prop.memPitch;
    d->smem_optin = prop.sharedMemPerBlockOptin;
    d->uva = prop.unifiedAddressing;
    if (d->timing) {
        /* the trace's clock: a reference event whose host time is taken right after it */
        rc = TESS_CU(d, cudaEventCreate(&d->t0_ev));
        if (rc == TESS_OK) rc = TESS_CU(d, cudaEventRecord(d->t0_ev, d->stream[0]));
        if (rc == TESS_OK) rc = TESS_CU(d, cudaEventSynchronize(d->t0_ev));
        d->t0_host = tess__now();
        if (rc != TESS_OK) d->timing = 0;
        rc = TESS_OK;
    }
    stage_setup(d);

    unsigned caps = TESS__CAP_SHARED; /* one large tile kernel fills the GPU */
    for (int j = 0; j < ndev; j++) {
        int can = 0;
        if (j == d->ord) continue;
        if (cudaDeviceCanAccessPeer(&can, d->ord, j) != cudaSuccess) {
            (void)cudaGetLastError();
            can = 0;
        }
        if (can && d->uva) caps |= TESS__CAP_P2P;
    }
    leave(d->ord, prev);

    memset(desc, 0, sizeof *desc);
    snprintf(desc->name, sizeof desc->name, "%.40s (cuda:%d)", prop.name, d->ord);
    desc->kind = TESS_DEV_CUDA;
    desc->caps = caps;
    desc->mem_total = prop.totalGlobalMem;
    desc->link_gbs = 0;
    desc->pci_bus = prop.pciBusID;
    tess__log(TESS__LOG_INFO, "cuda:%d: %s, %zu MiB, pci %04x:%02x, %d streams%s", d->ord,
              prop.name, (size_t)(prop.totalGlobalMem >> 20), (unsigned)prop.pciDomainID,
              (unsigned)prop.pciBusID, d->nstreams, caps & TESS__CAP_P2P ? ", p2p" : "");
    *bd = d;
    return TESS_OK;
}

static void cuda_close(void *bd) {
    struct cuda_dev *d = bd;
    if (!d) return;
    int prev, ord = d->ord;
    if (enter(d, &prev) != TESS_OK) prev = -1;
    teardown(d); /* streams synchronized first, then handles, pooled events, arena */
    dev_unref(d);
    leave(ord, prev);
}

/* ---- arena ----------------------------------------------------------------------------- */

static int cuda_arena(void *bd, size_t want, void **base, size_t *got) {
    struct cuda_dev *d = bd;
    *base = NULL;
    *got = 0;
    if (dev_failed(d)) return dev_dead(d);
    if (d->arena) return tess__fail(TESS_EINVAL, "cuda:%d: arena already allocated", d->ord);
    int prev, rc = enter(d, &prev);
    size_t free_b = 0, total_b = 0;
    if (rc == TESS_OK) rc = TESS_CU(d, cudaMemGetInfo(&free_b, &total_b));
    if (rc != TESS_OK) {
        leave(d->ord, prev);
        return rc;
    }
    /* Default: all free memory but a margin for the CUDA context, cuBLAS workspaces and
     * other users: max(1 GiB, 5% of the device). */
    size_t margin = TESS__MAX((size_t)1 << 30, total_b / 20);
    size_t size = want;
    if (size == 0) {
        if (free_b <= margin + ((size_t)64 << 20)) {
            leave(d->ord, prev);
            return tess__fail(TESS_ENOMEM, "cuda:%d: %zu MiB free, less than the %zu MiB margin",
                              d->ord, free_b >> 20, margin >> 20);
        }
        size = (free_b - margin) & ~(((size_t)2 << 20) - 1); /* whole 2 MiB pages */
    }
    /* "Up to want": if the allocation does not fit (memory taken since the query, or a
     * request larger than the device), retry 1/8 smaller a few times. */
    void *p = NULL;
    for (int attempt = 0;; attempt++) {
        cudaError_t e = cudaMalloc(&p, size);
        if (e == cudaSuccess) break;
        if (e != cudaErrorMemoryAllocation) {
            rc = cu_check_(d, e, "cudaMalloc(&p, size)", __FILE__, __LINE__);
            leave(d->ord, prev);
            return rc;
        }
        (void)cudaGetLastError(); /* out of memory is not sticky, nor a device failure */
        size_t smaller = size / 8 * 7 & ~(size_t)0xfffff;
        if (attempt == 8 || smaller < ((size_t)64 << 20)) {
            leave(d->ord, prev);
            return tess__fail(TESS_ENOMEM, "cuda:%d: cudaMalloc of %zu MiB failed (%zu MiB free)",
                              d->ord, size >> 20, free_b >> 20);
        }
        size = smaller;
    }
    leave(d->ord, prev);
    if (want && size < want)
        tess__log(TESS__LOG_WARN, "cuda:%d: heap arena %zu MiB instead of the %zu MiB asked",
                  d->ord, size >> 20, want >> 20);
    d->arena = p;
    d->arena_bytes = size;
    *base = p;
    *got = size;
    return TESS_OK;
}

/* ---- work: copies and kernels --------------------------------------------------------- */

/* Hot hooks: the worker thread of this device makes it current and leaves it current. */
static int use(struct cuda_dev *d) { return TESS_CU(d, cudaSetDevice(d->ord)); }

/* Count one copy/gemm for fault injection: the fault_at-th call fails as if CUDA had. */
static int count_op(struct cuda_dev *d) {
    int64_t k = atomic_fetch_add_explicit(&d->ops, 1, memory_order_relaxed) + 1;
    if (d->fault_at > 0 && k == d->fault_at)
        return dev_fail(d, "injected fault at operation %lld (fault_at)", (long long)k);
    return TESS_OK;
}

static int check_stream(struct cuda_dev *d, int stream) {
    if (stream < 0 || stream >= d->nstreams)
        return tess__fail(TESS_EINVAL, "cuda:%d: stream %d (device has %d)", d->ord, stream,
                          d->nstreams);
    return TESS_OK;
}

static int cuda_copy2d(void *bd, int stream, enum tess__copy_kind kind, void *dst, size_t dpitch,
                       const void *src, size_t spitch, size_t width, size_t height, void *peer) {
    struct cuda_dev *d = bd, *pd = peer;
    if (dev_failed(d)) return dev_dead(d);
    int rc = check_stream(d, stream);
    if (rc != TESS_OK) return rc;
    int nowait = (kind & TESS__COPY_NOWAIT) != 0;
    kind = (enum tess__copy_kind)(kind & ~TESS__COPY_NOWAIT);
    if ((unsigned)kind > TESS__P2P)
        return tess__fail(TESS_EINVAL, "cuda:%d: copy kind %d", d->ord, (int)kind);
    if (width == 0 || height == 0) return TESS_OK; /* nothing to move, nothing counted */
    if (!dst || !src) return tess__fail(TESS_EINVAL, "cuda:%d: copy2d with a NULL pointer", d->ord);
    if (height > 1 && (width > dpitch || width > spitch))
        return tess__fail(TESS_EINVAL, "cuda:%d: copy2d width %zu > pitch (%zu, %zu)", d->ord,
                          width, dpitch, spitch);
    enum cudaMemcpyKind ck = cudaMemcpyDefault;
    switch (kind) {
    case TESS__H2D: ck = cudaMemcpyHostToDevice; break;
    case TESS__D2H: ck = cudaMemcpyDeviceToHost; break;
    case TESS__D2D: ck = cudaMemcpyDeviceToDevice; break;
    case TESS__P2P:
        /* Under unified addressing cudaMemcpyDefault infers both devices from the pointers;
         * the copy is direct once can_peer enabled access (staged through the host if not). */
        if (!pd) return tess__fail(TESS_EINVAL, "cuda:%d: P2P copy without a peer", d->ord);
        ck = cudaMemcpyDefault;
        break;
    }
    if ((rc = count_op(d)) != TESS_OK) return rc;
    if ((rc = use(d)) != TESS_OK) return rc;
    cudaStream_t s = d->stream[stream];
    if (d->stage && (kind == TESS__H2D || kind == TESS__D2H)) {
        /* a pageable host side: through the pinned staging pages (stage.c) */
        int staged = 0;
        rc = tess__stage_copy2d(d->stage, s, kind == TESS__H2D, nowait, dst, dpitch, src, spitch,
                                width, height, d->max_pitch, &staged);
        if (staged || rc != TESS_OK) return rc;
    }
    if (height == 1) return TESS_CU(d, cudaMemcpyAsync(dst, src, width, ck, s));
    if (dpitch <= d->max_pitch && spitch <= d->max_pitch)
        return TESS_CU(d, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, ck, s));
    /* A pitch beyond cudaMemcpy2D's limit (a very tall host matrix): row by row. */
    for (size_t r = 0; r < height && rc == TESS_OK; r++)
        rc = TESS_CU(d, cudaMemcpyAsync((char *)dst + r * dpitch, (const char *)src + r * spitch,
                                        width, ck, s));
    return rc;
}

static char upper_trans(char t) { return t == 'n' ? 'N' : t == 't' ? 'T' : t == 'c' ? 'C' : t; }

static cublasOperation_t blas_op(char t) {
    return t == 'N' ? CUBLAS_OP_N : t == 'T' ? CUBLAS_OP_T : CUBLAS_OP_C;
}

/* C = alpha op(A) op(B) + beta C on the stream's handle. cuBLAS does not read C when
 * beta == 0 ("if beta == 0 then C does not have to be a valid input", cuBLAS gemm docs), so
 * a C holding NaN is overwritten, as netlib requires. */
static int cuda_gemm(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n,
                     int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                     int64_t ldb, const void *beta, void *C, int64_t ldc) {
    struct cuda_dev *d = bd;
    if (dev_failed(d)) return dev_dead(d);
    int rc = check_stream(d, stream);
    if (rc != TESS_OK) return rc;
    ta = upper_trans(ta);
    tb = upper_trans(tb);
    bool ok_t = (ta == 'N' || ta == 'T' || ta == 'C') && (tb == 'N' || tb == 'T' || tb == 'C');
    int64_t arows = ta == 'N' ? m : k, brows = tb == 'N' ? k : n;
    if (!ok_t || (unsigned)dt > TESS_Z || !alpha || !beta || m < 0 || n < 0 || k < 0 ||
        lda < TESS__MAX(1, arows) || ldb < TESS__MAX(1, brows) || ldc < TESS__MAX(1, m))
        return tess__fail(TESS_EINVAL,
                          "cuda:%d: gemm dt=%d ta=%c tb=%c m=%lld n=%lld k=%lld lda=%lld "
                          "ldb=%lld ldc=%lld",
                          d->ord, (int)dt, ta, tb, (long long)m, (long long)n, (long long)k,
                          (long long)lda, (long long)ldb, (long long)ldc);
#if !CUDA_GEMM_64
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldc > INT32_MAX)
        return tess__fail(TESS_EINVAL, "cuda:%d: gemm size beyond 32 bits (cuBLAS < 12)", d->ord);
#endif
    if ((rc = count_op(d)) != TESS_OK) return rc;
    if ((rc = use(d)) != TESS_OK) return rc;
    cublasHandle_t h = d->blas[stream];
    cublasOperation_t oa = blas_op(ta), ob = blas_op(tb);
    /* cuBLAS loads complex scalars as 16-byte-aligned vectors: copy them to aligned storage */
    tess__scalar_t al, be;
    tess__scalar_load(dt, &al, alpha);
    tess__scalar_load(dt, &be, beta);
#if CUDA_GEMM_64
#define TESS_GEMM_(fn, T)                                                                        \
    TESS_CU(d, fn##_64(h, oa, ob, m, n, k, (const T *)&al, (const T *)A, lda, (const T *)B, ldb, \
                       (const T *)&be, (T *)C, ldc))
#else
#define TESS_GEMM_(fn, T)                                                                    \
    TESS_CU(d, fn(h, oa, ob, (int)m, (int)n, (int)k, (const T *)&al, (const T *)A, (int)lda, \
                  (const T *)B, (int)ldb, (const T *)&be, (T *)C, (int)ldc))
#endif
    switch (dt) {
    case TESS_S: return TESS_GEMM_(cublasSgemm, float);
    case TESS_D: return TESS_GEMM_(cublasDgemm, double);
    case TESS_C: return TESS_GEMM_(cublasCgemm, cuComplex);
    case TESS_Z: return TESS_GEMM_(cublasZgemm, cuDoubleComplex);
    }
#undef TESS_GEMM_
    return TESS_EINTERNAL;
}

static cublasSideMode_t blas_side(char c) {
    return c == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
}
static cublasFillMode_t blas_fill(char c) {
    return c == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}
static cublasDiagType_t blas_diag(char c) {
    return c == 'U' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
}

/* POTRF's INFO on its way to the caller's int: copied from the stream's pinned slot by a
 * host function queued behind the copies into it (cuda_potrf); frees itself. The tile's
 * last diagonal entry comes too: cusolverDnXpotrf left INFO 0 with a NaN there when only
 * the last column failed (an H100, CUDA 13, 2026-11-27), where LAPACK says INFO = n. */
struct info_note {
    const struct potrf_back *src; /* d->pback[stream], pinned */
    int *dst;                     /* the caller's k->info */
    int64_t n;
    bool dbl; /* the diagonal's real part is a double (d, z), else a float */
};

/* Runs on a CUDA thread in stream order: no CUDA calls here. */
static void CUDART_CB deliver_info(void *arg) {
    struct info_note *n = arg;
    int info = n->src->info;
    if (info == 0 && n->n > 0) { /* n = 0: no diagonal was copied */
        double last = n->dbl ? n->src->diag.d : (double)n->src->diag.f;
        if (!(last > 0)) info = (int)n->n;
    }
    *n->dst = info;
    free(n);
}

/* Frees a host workspace that work queued before it may still use (ws_reserve). */
static void CUDART_CB free_host_ws(void *arg) { free(arg); }

/* cuSOLVER's data (and compute) type of each precision. */
static const cudaDataType solver_types[4] = {
    [TESS_S] = CUDA_R_32F, [TESS_D] = CUDA_R_64F, [TESS_C] = CUDA_C_32F, [TESS_Z] = CUDA_C_64F};

/* Make the stream's cuSOLVER workspaces hold at least dev_b device and host_b host bytes:
 * a device workspace that is short is replaced stream-ordered (cudaFreeAsync +
 * cudaMallocAsync on this stream where the GPU has memory pools, so nothing synchronizes
 * the device; otherwise the stream is drained first), a host one that is short is
 * replaced and the old one freed by a host function in stream order (work queued before
 * may still use it). d is current. */
static int ws_reserve(struct cuda_dev *d, int stream, size_t dev_b, size_t host_b) {
    cudaStream_t s = d->stream[stream];
    struct solver_ws *w = &d->sws[stream];
    int rc = TESS_OK;
    if (dev_b > w->dev_bytes) {
        size_t want = (dev_b + ((size_t)1 << 18) - 1) & ~(((size_t)1 << 18) - 1); /* 256 KiB */
        void *old = w->dev;
        w->dev = NULL;
        w->dev_bytes = 0;
        if (d->mempools) {
            if (old) rc = TESS_CU(d, cudaFreeAsync(old, s));
            if (rc == TESS_OK) rc = TESS_CU(d, cudaMallocAsync(&w->dev, want, s));
        } else {
            if (old) rc = TESS_CU(d, cudaStreamSynchronize(s));
            if (rc == TESS_OK && old) rc = TESS_CU(d, cudaFree(old));
            if (rc == TESS_OK) rc = TESS_CU(d, cudaMalloc(&w->dev, want));
        }
        if (rc == TESS_OK) w->dev_bytes = want;
    }
    if (rc == TESS_OK && host_b > w->host_bytes) {
        void *fresh = malloc(host_b);
        if (!fresh) {
            rc = tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", d->ord);
        } else {
            /* the old one may still serve work queued before: freed in stream order */
            if (w->host) rc = TESS_CU(d, cudaLaunchHostFunc(s, free_host_ws, w->host));
            if (rc == TESS_OK) {
                w->host = fresh;
                w->host_bytes = host_b;
            } else {
                free(fresh);
            }
        }
    }
    return rc;
}

/* Make the pinned buffer p hold at least `need` bytes: a short one is replaced by one of at
 * least twice its size (whole 4 KiB), the old one retired to d->retired, freed at close,
 * since queued work may still read it (the retired ones of a buffer add up to less than
 * the buffer). d is current. */
static int pinned_reserve(struct cuda_dev *d, struct pinned *p, size_t need) {
    if (need <= p->bytes) return TESS_OK;
    size_t want = TESS__MAX(need, 2 * p->bytes);
    want = (want + 4095) & ~(size_t)4095;
    struct pinned_old *old = NULL;
    if (p->buf && !(old = malloc(sizeof *old)))
        return tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", d->ord);
    void *fresh = NULL;
    int rc = TESS_CU(d, cudaMallocHost(&fresh, want));
    if (rc != TESS_OK) {
        free(old);
        return rc;
    }
    if (old) {
        old->buf = p->buf;
        old->next = d->retired;
        d->retired = old;
    }
    p->buf = fresh;
    p->bytes = want;
    return TESS_OK;
}

/* POTRF (backend.h): C = chol(C) in place, C n x n on the device, with the stream's
 * cuSOLVER handle and the 64-bit generic API: cusolverDnXpotrf_bufferSize for the
 * workspaces, the stream's grown if short (ws_reserve), then cusolverDnXpotrf with the
 * device INFO d->dinfo[stream]. INFO reaches k->info in stream order: cudaMemcpyAsync into
 * the pinned d->pback[stream] (with the last diagonal entry), then
 * cudaLaunchHostFunc(deliver_info), so an event recorded after this hook returns completes
 * only once *k->info holds it. m, k, A, B and the scalars unused. */
static int cuda_potrf(struct cuda_dev *d, int stream, const struct tess__kernel *k) {
    if ((unsigned)k->dt > TESS_Z || (k->uplo != 'L' && k->uplo != 'U') || k->n < 0 ||
        (k->n > 0 && (!k->C || k->ldc < k->n)))
        return tess__fail(TESS_EINVAL,
                          "cuda:%d: potrf dt %d uplo '%c' n %lld ldc %lld: bad arguments", d->ord,
                          (int)k->dt, k->uplo ? k->uplo : '?', (long long)k->n, (long long)k->ldc);
    struct info_note *note = NULL;
    if (k->info && !(note = malloc(sizeof *note)))
        return tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", d->ord);
    int rc = count_op(d);
    if (rc == TESS_OK) rc = use(d);
    cudaStream_t s = d->stream[stream];
    cusolverDnHandle_t h = d->solver[stream];
    struct solver_ws *w = &d->sws[stream];
    int *dinfo = d->dinfo + stream;
    cublasFillMode_t uplo = blas_fill(k->uplo);
    cudaDataType t = solver_types[k->dt];
    int64_t n = k->n, ldc = TESS__MAX(1, k->ldc);
    if (n == 0) { /* nothing to factor: INFO 0, still in stream order */
        if (rc == TESS_OK) rc = TESS_CU(d, cudaMemsetAsync(dinfo, 0, sizeof *dinfo, s));
    } else {
        size_t dev_b = 0, host_b = 0;
        if (rc == TESS_OK)
            rc = TESS_CU(d, cusolverDnXpotrf_bufferSize(h, d->sparams, uplo, n, t, k->C, ldc, t,
                                                        &dev_b, &host_b));
        if (rc == TESS_OK) rc = ws_reserve(d, stream, dev_b, host_b);
        if (rc == TESS_OK)
            rc = TESS_CU(d, cusolverDnXpotrf(h, d->sparams, uplo, n, t, k->C, ldc, t,
                                             dev_b ? w->dev : NULL, dev_b, host_b ? w->host : NULL,
                                             host_b, dinfo));
    }
    if (rc == TESS_OK && note) {
        struct potrf_back *back = d->pback + stream;
        size_t es = tess__dtypes[k->dt].size, re = tess__dtypes[k->dt].complex_ ? es / 2 : es;
        note->src = back;
        note->dst = k->info;
        note->n = n;
        note->dbl = re == sizeof(double);
        if (n > 0) /* n = 0: deliver_info reads no diagonal (nor may this write one: an
                      earlier POTRF's host function may still read it) */
            rc = TESS_CU(
                d, cudaMemcpyAsync(&back->diag,
                                   (const char *)k->C + (size_t)(n - 1) * (size_t)(ldc + 1) * es,
                                   re, cudaMemcpyDeviceToHost, s));
        if (rc == TESS_OK)
            rc = TESS_CU(
                d, cudaMemcpyAsync(&back->info, dinfo, sizeof(int), cudaMemcpyDeviceToHost, s));
        if (rc == TESS_OK) rc = TESS_CU(d, cudaLaunchHostFunc(s, deliver_info, note));
        if (rc == TESS_OK) note = NULL; /* deliver_info frees it */
    }
    free(note);
    return rc;
}

/* GETRF's pivots and INFO on their way to the caller's ints: converted from the stream's
 * pinned int64 pivots and copied from its pinned INFO by a host function queued behind the
 * copies into them (cuda_getrf); frees itself. */
struct piv_note {
    const int64_t *piv_src; /* d->pivback[stream].buf, r entries */
    const int *info_src;    /* &d->pback[stream].info */
    int *ipiv, *info;       /* the caller's (info may be NULL) */
    int64_t r;              /* min(m, n) */
};

/* Runs on a CUDA thread in stream order: no CUDA calls here. A pivot is at most m, which
 * cuda_getrf checked fits an int. */
static void CUDART_CB deliver_pivots(void *arg) {
    struct piv_note *n = arg;
    for (int64_t i = 0; i < n->r; i++) n->ipiv[i] = (int)n->piv_src[i];
    if (n->info) *n->info = *n->info_src;
    free(n);
}

/* GETRF (backend.h): C = P L U in place, C m x n on the device, with the stream's cuSOLVER
 * handle and the 64-bit generic API (64-bit sizes and ld, as POTRF): the workspace
 * cusolverDnXgetrf_bufferSize asks for, then the r = min(m, n) int64 pivots, both in the
 * stream's device workspace (ws_reserve), then cusolverDnXgetrf with the device INFO
 * d->dinfo[stream]. The pivots reach k->ipiv and INFO k->info in stream order:
 * cudaMemcpyAsync of the pivots into the stream's pinned d->pivback[stream] (grown on
 * demand: pinned_reserve) and of INFO into d->pback[stream].info, then
 * cudaLaunchHostFunc(deliver_pivots), which converts the pivots to ints; so an event
 * recorded after this hook returns completes only once both hold them. m > INT_MAX is
 * TESS_EINVAL (the pivots are ints); k, A, B and the scalars unused. */
static int cuda_getrf(struct cuda_dev *d, int stream, const struct tess__kernel *k) {
    int64_t m = k->m, n = k->n, r = TESS__MIN(m, n);
    if ((unsigned)k->dt > TESS_Z || m < 0 || n < 0 || m > INT_MAX ||
        (r > 0 && (!k->C || !k->ipiv || k->ldc < m)))
        return tess__fail(TESS_EINVAL,
                          "cuda:%d: getrf dt %d m %lld n %lld ldc %lld: bad arguments (or C or "
                          "ipiv NULL)",
                          d->ord, (int)k->dt, (long long)m, (long long)n, (long long)k->ldc);
    struct piv_note *note = malloc(sizeof *note);
    if (!note) return tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", d->ord);
    int rc = count_op(d);
    if (rc == TESS_OK) rc = use(d);
    cudaStream_t s = d->stream[stream];
    cusolverDnHandle_t h = d->solver[stream];
    struct solver_ws *w = &d->sws[stream];
    struct pinned *pb = &d->pivback[stream];
    int *dinfo = d->dinfo + stream;
    cudaDataType t = solver_types[k->dt];
    int64_t ldc = TESS__MAX(1, k->ldc);
    size_t pbytes = (size_t)r * sizeof(int64_t);
    if (r == 0) { /* nothing to factor: INFO 0, still in stream order */
        if (rc == TESS_OK) rc = TESS_CU(d, cudaMemsetAsync(dinfo, 0, sizeof *dinfo, s));
    } else {
        size_t dev_b = 0, host_b = 0;
        if (rc == TESS_OK)
            rc = TESS_CU(d, cusolverDnXgetrf_bufferSize(h, d->sparams, m, n, t, k->C, ldc, t,
                                                        &dev_b, &host_b));
        size_t off = (dev_b + 255) & ~(size_t)255; /* the pivots: past cuSOLVER's part */
        if (rc == TESS_OK) rc = ws_reserve(d, stream, off + pbytes, host_b);
        if (rc == TESS_OK) rc = pinned_reserve(d, pb, pbytes);
        int64_t *dpiv = rc == TESS_OK ? (int64_t *)((char *)w->dev + off) : NULL;
        if (rc == TESS_OK)
            rc = TESS_CU(d, cusolverDnXgetrf(h, d->sparams, m, n, t, k->C, ldc, dpiv, t,
                                             dev_b ? w->dev : NULL, dev_b, host_b ? w->host : NULL,
                                             host_b, dinfo));
        if (rc == TESS_OK)
            rc = TESS_CU(d, cudaMemcpyAsync(pb->buf, dpiv, pbytes, cudaMemcpyDeviceToHost, s));
    }
    if (rc == TESS_OK)
        rc = TESS_CU(d, cudaMemcpyAsync(&d->pback[stream].info, dinfo, sizeof(int),
                                        cudaMemcpyDeviceToHost, s));
    if (rc == TESS_OK) {
        note->piv_src = pb->buf;
        note->info_src = &d->pback[stream].info;
        note->ipiv = k->ipiv;
        note->info = k->info;
        note->r = r;
        rc = TESS_CU(d, cudaLaunchHostFunc(s, deliver_pivots, note));
        if (rc == TESS_OK) note = NULL; /* deliver_pivots frees it */
    }
    free(note);
    return rc;
}

/* LASWP (backend.h): for i = 0 .. k - 1 in order, rows i and ipiv[i] - 1 of the m x n C on
 * the device interchanged (32-bit ints: ldc and k beyond INT_MAX are TESS_EINVAL). With
 * cuda_rows.cu built, the swaps are composed on the host into the np rows they change
 * (rowperm.c) and cuda_rows.cu's kernel moves those rows, one pass over them, when a
 * column of them fits a block's shared memory; otherwise cusolverDn<t>laswp applies them
 * one after another (k1 = 1, k2 = k, incx = 1; n cut in pieces), on the stream's cuSOLVER
 * handle. The ints either reads (the np sources then the np destinations, or the pivots),
 * are copied at the call into the next pinned slot of the stream's ring (struct piv_ring),
 * from there by an H2D copy to the stream's device workspace; the caller may reuse its
 * array once this hook returned. A, B and the scalars unused. */
static int cuda_laswp(struct cuda_dev *d, int stream, const struct tess__kernel *k) {
    int64_t m = k->m, n = k->n, kk = k->k;
    bool work = kk > 0 && n > 0;
    if ((unsigned)k->dt > TESS_Z || m < 0 || n < 0 || kk < 0 || kk > m || kk > INT_MAX ||
        (kk > 0 && !k->ipiv) || (work && (!k->C || k->ldc < m || k->ldc > INT_MAX)))
        return tess__fail(TESS_EINVAL,
                          "cuda:%d: laswp dt %d m %lld n %lld k %lld ldc %lld: bad arguments (or "
                          "C or ipiv NULL)",
                          d->ord, (int)k->dt, (long long)m, (long long)n, (long long)kk,
                          (long long)k->ldc);
    for (int64_t i = 0; i < kk; i++)
        if (k->ipiv[i] < 1 || k->ipiv[i] > m)
            return tess__fail(TESS_EINVAL, "cuda:%d: laswp ipiv[%lld] = %d not in 1..%lld", d->ord,
                              (long long)i, k->ipiv[i], (long long)m);
    int rc = count_op(d);
    if (rc == TESS_OK) rc = use(d);
    if (rc != TESS_OK || !work) return rc;
    size_t es = tess__dtypes[k->dt].size;
    bool perm = false;
    int np = 0;
#ifdef TESS_HAVE_CUDA_KERNELS
    struct tess__rowperm *rp = &d->rperm[stream];
    if ((rc = tess__rowperm_compose(rp, m, kk, k->ipiv, &np))) return rc;
    if (np == 0) return TESS_OK; /* the swaps undo each other */
    perm = (size_t)np * es <= d->smem_optin;
#endif
    cudaStream_t s = d->stream[stream];
    cusolverDnHandle_t h = d->solver[stream];
    struct piv_ring *ring = &d->pivin[stream];
    int si = ring->next;
    ring->next = (si + 1) % LASWP_SLOTS;
    size_t bytes = (size_t)(perm ? 2 * (int64_t)np : kk) * sizeof(int);
    /* the slot's last copy has read it (the wait only when the ring wrapped onto it) */
    if (ring->slot[si].busy) rc = TESS_CU(d, cudaEventSynchronize(ring->slot[si].ev));
    if (rc == TESS_OK) ring->slot[si].busy = false;
    if (rc == TESS_OK && !ring->slot[si].ev)
        rc = TESS_CU(d, cudaEventCreateWithFlags(&ring->slot[si].ev,
                                                 cudaEventDisableTiming | cudaEventBlockingSync));
    if (rc == TESS_OK) rc = pinned_reserve(d, &ring->slot[si].p, bytes);
    if (rc == TESS_OK) rc = ws_reserve(d, stream, bytes, 0);
    if (rc != TESS_OK) return rc;
    int *src = ring->slot[si].p.buf, *dpiv = d->sws[stream].dev;
#ifdef TESS_HAVE_CUDA_KERNELS
    if (perm) {
        memcpy(src, rp->from, (size_t)np * sizeof(int));
        memcpy(src + np, rp->rows, (size_t)np * sizeof(int));
    }
#endif
    if (!perm) memcpy(src, k->ipiv, bytes);
    rc = TESS_CU(d, cudaMemcpyAsync(dpiv, src, bytes, cudaMemcpyHostToDevice, s));
    if (rc == TESS_OK) rc = TESS_CU(d, cudaEventRecord(ring->slot[si].ev, s));
    if (rc == TESS_OK) ring->slot[si].busy = true;
#ifdef TESS_HAVE_CUDA_KERNELS
    if (perm) {
        if (rc == TESS_OK)
            rc = TESS_CU(d,
                         tess__cuda_permute_rows(s, (int)es, k->C, k->ldc, n, dpiv, dpiv + np, np));
        return rc;
    }
#endif
    int ld = (int)k->ldc, k2 = (int)kk;
    for (int64_t j0 = 0; j0 < n && rc == TESS_OK; j0 += INT_MAX) {
        int nc = (int)TESS__MIN((int64_t)INT_MAX, n - j0);
        void *Cj = (char *)k->C + (size_t)j0 * (size_t)ld * es;
        switch (k->dt) {
        case TESS_S: rc = TESS_CU(d, cusolverDnSlaswp(h, nc, Cj, ld, 1, k2, dpiv, 1)); break;
        case TESS_D: rc = TESS_CU(d, cusolverDnDlaswp(h, nc, Cj, ld, 1, k2, dpiv, 1)); break;
        case TESS_C: rc = TESS_CU(d, cusolverDnClaswp(h, nc, Cj, ld, 1, k2, dpiv, 1)); break;
        case TESS_Z: rc = TESS_CU(d, cusolverDnZlaswp(h, nc, Cj, ld, 1, k2, dpiv, 1)); break;
        }
    }
    return rc;
}

/* Every tile kernel kind (backend.h) on the stream's cuBLAS handle; in place for TRMM and
 * TRSM (cuBLAS TRMM is out of place in form, B == C makes it in place); POTRF, GETRF and
 * LASWP on its cuSOLVER handle (cuda_potrf, cuda_getrf, cuda_laswp). */
static int cuda_kernel(void *bd, int stream, const struct tess__kernel *k) {
    struct cuda_dev *d = bd;
    if (k->kind == TESS__K_GEMM)
        return cuda_gemm(bd, stream, k->dt, k->ta, k->tb, k->m, k->n, k->k, k->alpha, k->A, k->lda,
                         k->B, k->ldb, k->beta, k->C, k->ldc);
    if (dev_failed(d)) return dev_dead(d);
    int rc = check_stream(d, stream);
    if (rc != TESS_OK) return rc;
    if (k->kind == TESS__K_POTRF) return cuda_potrf(d, stream, k);
    if (k->kind == TESS__K_GETRF) return cuda_getrf(d, stream, k);
    if (k->kind == TESS__K_LASWP) return cuda_laswp(d, stream, k);
    if ((unsigned)k->dt > TESS_Z || !k->alpha || !k->A || !k->C ||
        ((k->kind == TESS__K_HEMM || k->kind == TESS__K_HERK || k->kind == TESS__K_HER2K) &&
         !tess__dtypes[k->dt].complex_))
        return tess__fail(TESS_EINVAL, "cuda:%d: kernel kind %d dt %d: bad arguments", d->ord,
                          (int)k->kind, (int)k->dt);
#if CUDA_GEMM_64
    if ((rc = count_op(d)) != TESS_OK) return rc;
    if ((rc = use(d)) != TESS_OK) return rc;
    cublasHandle_t h = d->blas[stream];
    tess__scalar_t al, be;
    tess__scalar_load(k->dt, &al, k->alpha);
    if (k->beta)
        tess__scalar_load(k->dt, &be, k->beta);
    else
        memset(&be, 0, sizeof be);
    cublasSideMode_t side = blas_side(k->side);
    cublasFillMode_t uplo = blas_fill(k->uplo);
    cublasOperation_t ta = blas_op(upper_trans(k->ta));
    cublasDiagType_t diag = blas_diag(k->diag);
    int64_t m = k->m, n = k->n, kk = k->k, lda = k->lda, ldb = k->ldb, ldc = k->ldc;
    /* The SYRK family under a NaN beta (issue 8, B6): netlib's C is NaN at every entry of
     * the triangle, whatever alpha, A and B hold (NaN x c and NaN + x are NaN; HERK/HER2K:
     * the diagonal's imaginary parts 0). Written here with memsets (0xFF bytes: a NaN in
     * every precision) instead of trusting how cuBLAS treats a NaN beta (OpenBLAS 0.3.21's
     * s/c/z variants take it as 0). Only step 0 of a diagonal tile has this beta; later
     * steps (beta 1) keep the NaN. */
    bool rk = k->kind == TESS__K_SYRK || k->kind == TESS__K_HERK || k->kind == TESS__K_SYR2K ||
              k->kind == TESS__K_HER2K;
    bool herm = k->kind == TESS__K_HERK || k->kind == TESS__K_HER2K;
    bool nan_beta = false;
    if (rk && k->beta) switch (k->dt) {
        case TESS_S: nan_beta = isnan(be.s); break;
        case TESS_D: nan_beta = isnan(be.d); break;
        case TESS_C: nan_beta = isnan(be.c[0]) || (!herm && isnan(be.c[1])); break;
        case TESS_Z: nan_beta = isnan(be.z[0]) || (!herm && isnan(be.z[1])); break;
        }
    if (nan_beta) {
        size_t es = tess__dtypes[k->dt].size;
        cudaStream_t s = d->stream[stream];
        for (int64_t j = 0; j < n && rc == TESS_OK; j++) {
            int64_t r0 = k->uplo == 'U' ? 0 : j, r1 = k->uplo == 'U' ? j + 1 : n;
            char *col = (char *)k->C + ((size_t)r0 + (size_t)j * (size_t)ldc) * es;
            rc = TESS_CU(d, cudaMemsetAsync(col, 0xFF, (size_t)(r1 - r0) * es, s));
            if (rc == TESS_OK && herm) /* Im(C(j,j)) = 0 */
                rc = TESS_CU(d,
                             cudaMemsetAsync(
                                 (char *)k->C + ((size_t)j + (size_t)j * (size_t)ldc) * es + es / 2,
                                 0, es / 2, s));
        }
        return rc;
    }
    /* HERK/HER2K: netlib does not read the imaginary parts of C's diagonal (they come out
     * 0); cuBLAS's cher2k reads them when beta != 0 (a NaN there gave a NaN real part on
     * the H200s, test_fuzz_l3), so they are zeroed first: one strided memset down the
     * diagonal (the imaginary halves, pitch ldc + 1 elements). beta = 0 reads nothing. */
    if (herm && k->beta && !tess__scalar_is_zero(k->dt, &be)) {
        size_t es = tess__dtypes[k->dt].size;
        rc = TESS_CU(d, cudaMemset2DAsync((char *)k->C + es / 2, ((size_t)ldc + 1) * es, 0, es / 2,
                                          (size_t)n, d->stream[stream]));
        if (rc != TESS_OK) return rc;
    }
    /* one call per kind and precision; X names the cuBLAS precision letter, T its type,
     * R the real type of HERK/HER2K scalars */
#define KERNELS_(X, T)                                                                            \
    switch (k->kind) {                                                                            \
    case TESS__K_SYMM:                                                                            \
        return TESS_CU(d, cublas##X##symm_v2_64(h, side, uplo, m, n, (const T *)&al,              \
                                                (const T *)k->A, lda, (const T *)k->B, ldb,       \
                                                (const T *)&be, (T *)k->C, ldc));                 \
    case TESS__K_SYRK:                                                                            \
        return TESS_CU(d,                                                                         \
                       cublas##X##syrk_v2_64(h, uplo, ta, n, kk, (const T *)&al, (const T *)k->A, \
                                             lda, (const T *)&be, (T *)k->C, ldc));               \
    case TESS__K_SYR2K:                                                                           \
        return TESS_CU(d, cublas##X##syr2k_v2_64(h, uplo, ta, n, kk, (const T *)&al,              \
                                                 (const T *)k->A, lda, (const T *)k->B, ldb,      \
                                                 (const T *)&be, (T *)k->C, ldc));                \
    case TESS__K_TRMM:                                                                            \
        return TESS_CU(d, cublas##X##trmm_v2_64(h, side, uplo, ta, diag, m, n, (const T *)&al,    \
                                                (const T *)k->A, lda, (const T *)k->C, ldc,       \
                                                (T *)k->C, ldc));                                 \
    case TESS__K_TRSM:                                                                            \
        return TESS_CU(d, cublas##X##trsm_v2_64(h, side, uplo, ta, diag, m, n, (const T *)&al,    \
                                                (const T *)k->A, lda, (T *)k->C, ldc));           \
    default: break;                                                                               \
    }
#define HERMITIAN_(X, T, R)                                                                       \
    switch (k->kind) {                                                                            \
    case TESS__K_HEMM:                                                                            \
        return TESS_CU(d, cublas##X##hemm_v2_64(h, side, uplo, m, n, (const T *)&al,              \
                                                (const T *)k->A, lda, (const T *)k->B, ldb,       \
                                                (const T *)&be, (T *)k->C, ldc));                 \
    case TESS__K_HERK:                                                                            \
        return TESS_CU(d,                                                                         \
                       cublas##X##herk_v2_64(h, uplo, ta, n, kk, (const R *)&al, (const T *)k->A, \
                                             lda, (const R *)&be, (T *)k->C, ldc));               \
    case TESS__K_HER2K:                                                                           \
        return TESS_CU(d, cublas##X##her2k_v2_64(h, uplo, ta, n, kk, (const T *)&al,              \
                                                 (const T *)k->A, lda, (const T *)k->B, ldb,      \
                                                 (const R *)&be, (T *)k->C, ldc));                \
    default: break;                                                                               \
    }
    switch (k->dt) {
    case TESS_S: KERNELS_(S, float) break;
    case TESS_D: KERNELS_(D, double) break;
    case TESS_C: KERNELS_(C, cuComplex) HERMITIAN_(C, cuComplex, float) break;
    case TESS_Z: KERNELS_(Z, cuDoubleComplex) HERMITIAN_(Z, cuDoubleComplex, double) break;
    }
#undef KERNELS_
#undef HERMITIAN_
    return tess__fail(TESS_EINVAL, "cuda:%d: kernel kind %d not valid for precision %s", d->ord,
                      (int)k->kind, tess__dtypes[k->dt].name);
#else
    return tess__fail(TESS_ENOSYS, "cuda:%d: level-3 tile kernels need cuBLAS >= 12", d->ord);
#endif
}

/* ---- events ------------------------------------------------------------------------------ */

static int cuda_event_create(void *bd, tess__event **out) {
    struct cuda_dev *d = bd;
    *out = NULL;
    if (dev_failed(d)) return dev_dead(d);
    pthread_mutex_lock(&d->evmu);
    struct tess__event *e = d->ev_free;
    if (e) d->ev_free = e->next_free;
    pthread_mutex_unlock(&d->evmu);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) return tess__fail(TESS_ENOMEM, "cuda:%d: out of host memory", d->ord);
        int prev, rc = enter(d, &prev);
        /* BlockingSync: event_sync sleeps instead of spinning a core the CPU worker and
         * the other devices' workers need. */
        if (rc == TESS_OK)
            rc = TESS_CU(d,
                         cudaEventCreateWithFlags(&e->ev, (d->timing ? 0 : cudaEventDisableTiming) |
                                                              cudaEventBlockingSync));
        leave(d->ord, prev);
        if (rc != TESS_OK) {
            free(e);
            return rc;
        }
        e->owner = d;
        atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
    }
    atomic_store(&e->recorded, 0);
    *out = e;
    return TESS_OK;
}

/* Back to its own device's pool; after that device's close, freed for good. */
static void cuda_event_destroy(void *bd, tess__event *e) {
    (void)bd;
    if (!e) return;
    struct cuda_dev *d = e->owner;
    atomic_store(&e->recorded, 0);
    pthread_mutex_lock(&d->evmu);
    int closed = d->closed;
    if (!closed) {
        e->next_free = d->ev_free;
        d->ev_free = e;
    }
    pthread_mutex_unlock(&d->evmu);
    if (closed) event_free(e);
}

static int cuda_event_record(void *bd, int stream, tess__event *e) {
    struct cuda_dev *d = bd;
    if (dev_failed(d)) return dev_dead(d);
    int rc = check_stream(d, stream);
    if (rc != TESS_OK) return rc;
    if (e->owner != d) /* CUDA records only on a stream of the event's own device */
        return tess__fail(TESS_EINVAL, "cuda:%d: recording an event of cuda:%d", d->ord,
                          e->owner->ord);
    if ((rc = use(d)) != TESS_OK) return rc;
    rc = TESS_CU(d, cudaEventRecord(e->ev, d->stream[stream]));
    if (rc == TESS_OK) atomic_store_explicit(&e->recorded, 1, memory_order_release);
    return rc;
}

/* TESS_OK / TESS_EAGAIN / TESS_EDEVICE. bd and the event's owner are normally the same
 * device; either one having failed makes the answer TESS_EDEVICE. */
static int cuda_event_query(void *bd, tess__event *e) {
    struct cuda_dev *d = bd, *o = e->owner;
    if (dev_failed(d)) return dev_dead(d);
    if (dev_failed(o)) return dev_dead(o);
    if (!atomic_load_explicit(&e->recorded, memory_order_acquire)) return TESS_OK;
    cudaError_t err = cudaEventQuery(e->ev);
    if (err == cudaErrorNotReady) return TESS_EAGAIN;
    int rc = cu_check_(o, err, "cudaEventQuery(e->ev)", __FILE__, __LINE__);
    if (rc == TESS_OK && dev_failed(o)) return dev_dead(o); /* failed meanwhile */
    return rc;
}

/* Completion time of the event's latest record: elapsed time from the reference event
 * recorded at open (whose host time is known) on the device's own clock. */
static int cuda_event_time(void *bd, tess__event *e, double *t) {
    struct cuda_dev *d = bd, *o = e->owner;
    if (!o->timing) return TESS_ENOSYS;
    if (dev_failed(o)) return dev_dead(o);
    if (!atomic_load_explicit(&e->recorded, memory_order_acquire)) return TESS_EAGAIN;
    float ms = 0;
    cudaError_t err = cudaEventElapsedTime(&ms, o->t0_ev, e->ev);
    if (err == cudaErrorNotReady) return TESS_EAGAIN;
    int rc = cu_check_(o, err, "cudaEventElapsedTime", __FILE__, __LINE__);
    (void)d;
    if (rc == TESS_OK) *t = o->t0_host + 1e-3 * (double)ms;
    return rc;
}

/* Blocks (sleeping: the event is BlockingSync) until the event is reached. An injected
 * fault leaves the queued work running, so this returns, then answers TESS_EDEVICE. */
static int cuda_event_sync(void *bd, tess__event *e) {
    struct cuda_dev *d = bd, *o = e->owner;
    if (dev_failed(d)) return dev_dead(d);
    if (dev_failed(o)) return dev_dead(o);
    if (!atomic_load_explicit(&e->recorded, memory_order_acquire)) return TESS_OK;
    int rc = TESS_CU(o, cudaEventSynchronize(e->ev));
    if (rc == TESS_OK && dev_failed(o)) return dev_dead(o);
    return rc;
}

/* Make `stream` of d wait for e, which may belong to another GPU: cudaStreamWaitEvent
 * takes "an event from a different device than stream" (CUDA runtime API docs). A never
 * recorded event is no wait at all. */
static int cuda_stream_wait(void *bd, int stream, tess__event *e) {
    struct cuda_dev *d = bd, *o = e->owner;
    if (dev_failed(d)) return dev_dead(d);
    int rc = check_stream(d, stream);
    if (rc != TESS_OK) return rc;
    if (dev_failed(o)) { /* its work may never run: waiting could hang this stream */
        tess__log(TESS__LOG_INFO,
                  "cuda:%d stream %d: wait on an event of failed cuda:%d "
                  "skipped",
                  d->ord, stream, o->ord);
        return TESS_OK;
    }
    if (!atomic_load_explicit(&e->recorded, memory_order_acquire)) return TESS_OK;
    if ((rc = use(d)) != TESS_OK) return rc;
    return TESS_CU(d, cudaStreamWaitEvent(d->stream[stream], e->ev, 0));
}

/* ---- peers ------------------------------------------------------------------------------ */

/* 1 if d can copy straight from peer's memory. Asked once per pair: cudaDeviceCanAccessPeer,
 * then cudaDeviceEnablePeerAccess with d current (access is one-way: d reads peer's
 * memory); "already enabled" (a second runtime in the process, or a re-open) is fine. */
static int cuda_can_peer(void *bd, void *peer) {
    struct cuda_dev *d = bd, *p = peer;
    if (!p || p == d || p->ord == d->ord || dev_failed(d) || dev_failed(p)) return 0;
    if (p->ord < 0 || p->ord >= d->ndev) return 0;
    int known = atomic_load_explicit(&d->peer[p->ord], memory_order_acquire);
    if (known) return known > 0;

    int ans = 0, can = 0, prev;
    if (enter(d, &prev) != TESS_OK) return 0;
    cudaError_t e = cudaDeviceCanAccessPeer(&can, d->ord, p->ord);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        tess__log(TESS__LOG_WARN, "cuda:%d: cudaDeviceCanAccessPeer(cuda:%d): %s", d->ord, p->ord,
                  cudaGetErrorString(e));
    } else if (can && d->uva && p->uva) {
        e = cudaDeviceEnablePeerAccess(p->ord, 0);
        if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) {
            ans = 1;
        } else {
            tess__log(TESS__LOG_WARN, "cuda:%d: cudaDeviceEnablePeerAccess(cuda:%d): %s", d->ord,
                      p->ord, cudaGetErrorString(e));
        }
        if (e != cudaSuccess) (void)cudaGetLastError(); /* not sticky: clear it */
    }
    leave(d->ord, prev);
    tess__log(TESS__LOG_INFO, "cuda:%d: peer access to cuda:%d %s", d->ord, p->ord,
              ans ? "enabled" : "not available");
    atomic_store_explicit(&d->peer[p->ord], ans ? 1 : -1, memory_order_release);
    return ans;
}

const struct tess__dev_ops tess__cuda_ops = {
    .name = "cuda",
    .kernel = cuda_kernel,
    .event_time = cuda_event_time,
    .count = cuda_count,
    .open = cuda_open,
    .close = cuda_close,
    .arena = cuda_arena,
    .copy2d = cuda_copy2d,
    .gemm = cuda_gemm,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .stream_wait = cuda_stream_wait,
    .can_peer = cuda_can_peer,
};
