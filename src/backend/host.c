/* src/backend/host.c: the host backend, two ops tables over one stream engine.
 *
 *   tess__cpu_ops  the CPU worker of BLASX: one device, TESS__CAP_UNIFIED. Kernels run
 *                  OpenBLAS (tess__host_gemm) on the operands in place in host memory; there
 *                  is no arena (TESS_ENOSYS); copy2d still works as a plain 2D memcpy.
 *   tess__emu_ops  cfg->emulate devices "emulated:i", TESS__CAP_P2P, each with its own arena
 *                  (the device memory, one mmap of `want` bytes). Copies really move bytes
 *                  between host memory and arenas, and between arenas (P2P reads the peer's
 *                  arena). copy2d and gemm check that every device operand lies inside the
 *                  device's arena (the peer's for a P2P source) and every host operand lies
 *                  outside every arena; a violation returns TESS_EINVAL, so code that mixes
 *                  host and device pointers fails here as it would on a GPU. A fresh arena reads
 *                  as 0xFF bytes (a NaN in every precision), so a kernel that reads device
 *                  memory nobody wrote produces NaN in the tests; it is mapped copy-on-write
 *                  from one small 0xFF chunk (map_poisoned), so opening costs nothing per
 *                  byte and only pages written become the device's own.
 *
 * Owns: the devices' stream threads and their FIFO queues, events, arenas, the emulation
 * knobs (link_gbs, gflops, jitter_us, fault_at). Does not own: what lives in the arenas
 * (cache/heap.c carves them), counters (the cache and workers count bytes and flops).
 *
 * Streams. Each stream is one thread draining a FIFO of ops (copy, gemm, event record,
 * event wait); hooks only append to the FIFO, so they return at once and ops of different
 * streams run concurrently in no particular order (jitter_us shuffles that order further).
 *
 * Events. An event keeps a generation counter: event_record sets recorded = ++gen and
 * queues "stream s reached gen"; done[s] holds, per stream, the highest generation reached.
 * A wait (stream_wait, event_sync) captures (s, gen) of the latest record AT CALL TIME and
 * is satisfied when done[s] >= gen, so a re-record afterwards, even on another stream,
 * does not change it. event_query answers for the latest record. An event never recorded
 * is complete. As in CUDA, an event is recorded only on streams of the device that created
 * it (TESS_EINVAL otherwise) but any device's stream may wait on it. Events outlive their
 * device: event_destroy may come before or after close, and close does not free them (a
 * peer's queued wait may still hold one); memory is released when the handle and the last
 * queued op referring to the event are gone. All event counters share one mutex (ev_mu) and
 * one condition variable (broadcast only when someone waits): simple, and waits are few.
 *
 * Failure. A device fails when its fault_at-th copy/gemm op (1-based, counted by the stream
 * threads at execution, across all its streams) starts: that op does nothing, and every op
 * still queued or queued later is discarded. Copies and gemms already running on its other
 * streams finish; then the failure is published, for good: every hook returns TESS_EDEVICE
 * with a message naming the device and the op, its events never complete again and report
 * TESS_EDEVICE, and whoever sleeps on them is woken. Hence once any call has answered
 * TESS_EDEVICE for a device, none of its ops touches memory again. A stream of ANOTHER
 * device waiting on an event of a failed device does not hang and does not fail: the wait
 * is skipped (logged at info level) and the stream goes on, so data it then reads from the
 * failed device's memory is not to be trusted; the runtime drops it since that device
 * failed. stream_wait on an event that has already failed likewise returns TESS_OK and
 * queues nothing.
 *
 * Knobs (struct tess__dev_params, applied to both tables, zero for the CPU worker in
 * practice): link_gbs makes an H2D, D2H or P2P copy last at least bytes / (link_gbs * 1e9)
 * seconds (a D2D copy is on-device and not throttled); gflops makes a gemm last at least
 * flops / (gflops * 1e9) seconds, on its stream's own time or, with shared_engine, on one
 * engine the device's streams take turns on (FIFO; engine_mu, a leaf); jitter_us sleeps a random [0, jitter_us) microseconds
 * before every op (seeded per stream from ordinal and stream, so runs repeat).
 *
 * Fork. The process-wide state (ev_mu, ev_cv, arena_mu, the arena list) is held across
 * fork (tess__host_fork_*, called by the runtime's fork handlers): a stream thread of the
 * parent, which the child does not have, may hold ev_mu or sleep on ev_cv at that moment.
 * The child gets the locks released and ev_cv without waiters; the parent's devices,
 * events and arenas are left untouched there (the child never uses them).
 *
 * Lock order: a stream's queue lock, then ev_mu (event_record and stream_wait hold both so
 * a record's generation and its place in the FIFO agree). arena_mu is a leaf. Stream
 * threads hold no lock while they copy, compute, sleep or call tess__fail.
 */
#include "backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hostblas.h"  /* the CPU BLAS table: the CPU worker's name */

#define HOST_STREAMS (TESS_MAX_STREAMS + TESS_COMM_STREAMS) /* the worker's and (emulated) the comm streams */

#define EMU_DEFAULT_MEM ((size_t)256 << 20)

/* ---- objects ----------------------------------------------------------------------- */

/* One emulated device memory. Freed when its device closed and no queued P2P copy still
 * reads it. All fields guarded by arena_mu. */
struct arena {
    unsigned char *base;
    size_t size;
    int refs;                  /* 1 for the owning device + 1 per queued P2P copy from it */
    struct arena *next;        /* registry of live arenas */
};

enum op_kind { OP_COPY, OP_GEMM, OP_KERNEL, OP_RECORD, OP_WAIT };

struct gemm_args {
    tess_dtype_t dt;
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    tess__scalar_t alpha, beta;   /* copied at enqueue: the caller's may change */
    const void *A, *B;
    void *C;
};

struct op {
    struct op *next;
    enum op_kind kind;
    union {
        struct {
            enum tess__copy_kind kind;
            void *dst;
            const void *src;
            size_t dpitch, spitch, width, height;
            struct arena *pin;     /* P2P: the peer's arena, held until the op is gone */
        } copy;
        struct gemm_args gemm;
        struct {
            struct tess__kernel k;     /* k.alpha/k.beta point at the copies below */
            tess__scalar_t alpha, beta;
        } kern;
        struct {
            tess__event *ev;       /* holds one reference */
            int stream;            /* RECORD: this stream; WAIT: the stream of the record */
            uint64_t gen;
        } ev;
    };
};

struct dev;

struct stream {
    struct dev *dev;
    int idx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* signalled on append and on stop */
    struct op *head, *tail;    /* the FIFO, guarded by mu */
    int stop;                  /* close(): exit once the FIFO is empty; guarded by mu */
    unsigned seed;             /* rand_r state for jitter; the thread's own */
};

struct dev {
    int emu;                   /* 1: tess__emu_ops, 0: tess__cpu_ops */
    struct tess__dev_params p;
    char name[64];
    size_t mem_default;        /* emulated: arena size for want = 0 */
    struct arena *arena;       /* emulated: set once by arena(); guarded by arena_mu */
    _Atomic int failing;       /* the fault happened: stream threads drop every op; ev_mu */
    _Atomic int failed;        /* failure published (hooks answer TESS_EDEVICE): set under
                                * ev_mu once failing and no copy/gemm of d is executing */
    int busy;                  /* copies/gemms executing now; guarded by ev_mu */
    _Atomic int64_t nops;      /* copy/gemm ops started: the fault_at counter */
    char fail_msg[160];        /* written once, under ev_mu, before failing becomes 1 */
    tess__event *events;       /* created here and not yet freed; guarded by ev_mu */
    int nstreams;
    struct stream s[HOST_STREAMS];
    /* p.shared_engine: when the engine is free of the kernels queued on it so far */
    pthread_mutex_t engine_mu;  /* a leaf */
    double engine_free;
};

/* All fields guarded by ev_mu. */
struct tess__event {
    struct dev *owner;         /* creating device; NULL once it closed */
    tess__event *prev, *next;  /* owner's list */
    uint64_t recorded;         /* generation of the latest record, 0 = never recorded */
    int rec_stream;            /* stream of the latest record */
    uint64_t done[HOST_STREAMS]; /* per stream of the owner: highest generation reached */
    int failed;                /* the owner failed: the event never reports OK again */
    int refs;                  /* 1 for the handle (until event_destroy) + 1 per queued op */
    double t_done;             /* tess__now() when the latest record was reached */
};

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static int ev_waiters;                 /* threads sleeping on ev_cv */

static pthread_mutex_t arena_mu = PTHREAD_MUTEX_INITIALIZER;
static struct arena *arenas;           /* every live arena, for the "host pointer" checks */

void tess__host_fork_prepare(void) {
    pthread_mutex_lock(&ev_mu);
    pthread_mutex_lock(&arena_mu);
}

void tess__host_fork_parent(void) {
    pthread_mutex_unlock(&arena_mu);
    pthread_mutex_unlock(&ev_mu);
}

void tess__host_fork_child(void) {
    ev_waiters = 0; /* the parent's stream threads: not in the child */
    pthread_cond_init(&ev_cv, NULL);
    pthread_mutex_unlock(&arena_mu);
    pthread_mutex_unlock(&ev_mu);
}

/* ---- small helpers ----------------------------------------------------------------- */

static void sleep_s(double sec) {
    if (!(sec > 0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)sec;
    ts.tv_nsec = (long)((sec - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* Sleep what is left of `need` seconds since t0. */
static void throttle(double t0, double need) {
    sleep_s(need - (tess__now() - t0));
}

/* A kernel that began at t0 and needs `need` seconds: on its own stream's time, or, with
 * one engine per device (p.shared_engine), on the engine's, after the kernels that took
 * it before (the device's streams take turns, as kernels that each fill a GPU do). */
static void kernel_throttle(struct dev *d, double t0, double need) {
    if (!d->p.shared_engine) {
        throttle(t0, need);
        return;
    }
    pthread_mutex_lock(&d->engine_mu);
    double end = TESS__MAX(t0, d->engine_free) + need;
    d->engine_free = end;
    pthread_mutex_unlock(&d->engine_mu);
    sleep_s(end - tess__now());
}

static int dead(struct dev *d, const char *hook) {
    return tess__fail(TESS_EDEVICE, "%s: %s: device failed earlier: %s", d->name, hook,
                      d->fail_msg);
}

static int live(struct dev *d) {
    return !atomic_load(&d->failed);
}

static const char *kind_name(enum tess__copy_kind k) {
    switch (k) {
    case TESS__H2D: return "H2D";
    case TESS__D2H: return "D2H";
    case TESS__D2D: return "D2D";
    case TESS__P2P: return "P2P";
    }
    return "?";
}

/* Bytes spanned by `height` rows of `width` bytes at `pitch`; 0 on overflow (callers
 * have width, height > 0). */
static size_t extent(size_t pitch, size_t width, size_t height) {
    if (height > 1 && pitch > (SIZE_MAX - width) / (height - 1)) return 0;
    return (height - 1) * pitch + width;
}

/* [p, p + len) lies inside a. */
static int inside(const struct arena *a, const void *p, size_t len) {
    if (!a || !len) return 0;
    uintptr_t u = (uintptr_t)p, b = (uintptr_t)a->base;
    return u >= b && len <= a->size && u - b <= a->size - len;
}

/* [p, p + len) overlaps an arena of any emulated device. Caller holds arena_mu. */
static int in_any_arena(const void *p, size_t len) {
    uintptr_t u = (uintptr_t)p;
    for (const struct arena *a = arenas; a; a = a->next) {
        uintptr_t b = (uintptr_t)a->base;
        if (u < b + a->size && b < u + len) return 1;
    }
    return 0;
}

static void arena_unref(struct arena *a) {
    if (!a) return;
    pthread_mutex_lock(&arena_mu);
    int last = --a->refs == 0;
    if (last) {
        for (struct arena **pp = &arenas; *pp; pp = &(*pp)->next) {
            if (*pp == a) {
                *pp = a->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&arena_mu);
    if (last) {
        munmap(a->base, a->size);
        free(a);
    }
}

/* Drop one reference of ev; free it at zero. Caller holds ev_mu. */
static void event_unref_locked(tess__event *ev) {
    if (--ev->refs > 0) return;
    if (ev->owner) {
        if (ev->prev) ev->prev->next = ev->next;
        else ev->owner->events = ev->next;
        if (ev->next) ev->next->prev = ev->prev;
    }
    free(ev);
}

/* Release what a finished or discarded op holds. */
static void op_free(struct op *op) {
    if (op->kind == OP_RECORD || op->kind == OP_WAIT) {
        pthread_mutex_lock(&ev_mu);
        event_unref_locked(op->ev.ev);
        pthread_mutex_unlock(&ev_mu);
    } else if (op->kind == OP_COPY) {
        arena_unref(op->copy.pin);
    }
    free(op);
}

static struct op *op_new(enum op_kind kind) {
    struct op *op = calloc(1, sizeof *op);
    if (op) op->kind = kind;
    return op;
}

/* Append op to stream s. Caller holds s->mu. */
static void append_locked(struct stream *s, struct op *op) {
    op->next = NULL;
    if (s->tail) s->tail->next = op;
    else s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->cv);
}

static void append(struct stream *s, struct op *op) {
    pthread_mutex_lock(&s->mu);
    append_locked(s, op);
    pthread_mutex_unlock(&s->mu);
}

/* ---- failure ----------------------------------------------------------------------- */

/* Failure goes in two steps. dev_fail marks d failing: from then on its stream threads
 * drop every op. Once no copy/gemm of d is executing any more (busy == 0), the failure is
 * published: its events fail, every sleeper re-checks, and hooks answer TESS_EDEVICE. So a
 * caller that sees TESS_EDEVICE knows that no op of d touches memory any more: host buffers
 * that d's queued copies targeted may be reused at once. */
static void publish_locked(struct dev *d) {
    if (atomic_load(&d->failed) || !atomic_load(&d->failing) || d->busy) return;
    for (tess__event *ev = d->events; ev; ev = ev->next) ev->failed = 1;
    atomic_store(&d->failed, 1);
    if (ev_waiters) pthread_cond_broadcast(&ev_cv);
}

/* Called by the stream thread whose op is the fault_at-th, counted in busy. */
static void dev_fail(struct dev *d, const char *what) {
    int first = 0;
    pthread_mutex_lock(&ev_mu);
    if (!atomic_load(&d->failing)) {
        first = 1;
        snprintf(d->fail_msg, sizeof d->fail_msg, "%s", what);
        atomic_store(&d->failing, 1);
    }
    pthread_mutex_unlock(&ev_mu);
    if (first) tess__fail(TESS_EDEVICE, "%s: %s", d->name, what);
}

/* ---- the stream threads ------------------------------------------------------------ */

static void run_copy(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    unsigned char *dst = op->copy.dst;
    const unsigned char *src = op->copy.src;
    size_t w = op->copy.width, h = op->copy.height;
    if (op->copy.dpitch == w && op->copy.spitch == w) {
        memcpy(dst, src, w * h);
    } else {
        for (size_t r = 0; r < h; r++)
            memcpy(dst + r * op->copy.dpitch, src + r * op->copy.spitch, w);
    }
    if (d->p.link_gbs > 0 && op->copy.kind != TESS__D2D)
        throttle(t0, (double)(w * h) / (d->p.link_gbs * 1e9));
}

/* A host kernel that cannot run (no memory for an operand copy: tess__host_kernel) fails the
 * device like any kernel error: its tasks go back to the queue and the call still finishes. */
static void kernel_status(struct dev *d, int rc, const char *what) {
    if (rc == TESS_OK) return;
    char msg[160];
    snprintf(msg, sizeof msg, "%s kernel failed: %s", what, tess_strerror(rc));
    dev_fail(d, msg);
}

static void run_gemm(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    const struct gemm_args *g = &op->gemm;
    if (g->m > 0 && g->n > 0) {
        struct tess__kernel kn = {
            .kind = TESS__K_GEMM, .dt = g->dt, .ta = g->ta, .tb = g->tb, .m = g->m, .n = g->n,
            .k = g->k, .alpha = &g->alpha, .beta = &g->beta, .A = g->A, .lda = g->lda,
            .B = g->B, .ldb = g->ldb, .C = g->C, .ldc = g->ldc,
        };
        kernel_status(d, tess__host_kernel(&kn), "gemm");
    }
    if (d->p.gflops > 0) {
        double flops = tess__dtypes[g->dt].flop_mul * (double)g->m * (double)g->n * (double)g->k;
        kernel_throttle(d, t0, flops / (d->p.gflops * 1e9));
    }
}

static void run_kernel(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    struct tess__kernel k = op->kern.k;
    k.alpha = &op->kern.alpha;
    k.beta = &op->kern.beta;
    kernel_status(d, tess__host_kernel(&k), "tile");
    if (d->p.gflops > 0) {
        double mx = (double)TESS__MAX(k.m, k.n), flops = tess__dtypes[k.dt].flop_mul * mx * mx *
                    (double)TESS__MAX(TESS__MAX(k.m, k.n), k.k);
        kernel_throttle(d, t0, 0.5 * flops / (d->p.gflops * 1e9));
    }
}

static void run_record(const struct op *op) {
    tess__event *ev = op->ev.ev;
    double now = tess__now();
    pthread_mutex_lock(&ev_mu);
    if (ev->done[op->ev.stream] < op->ev.gen) ev->done[op->ev.stream] = op->ev.gen;
    if (op->ev.gen == ev->recorded) ev->t_done = now;
    if (ev_waiters) pthread_cond_broadcast(&ev_cv);
    pthread_mutex_unlock(&ev_mu);
}

static void run_wait(struct stream *s, const struct op *op) {
    struct dev *d = s->dev;
    tess__event *ev = op->ev.ev;
    int rs = op->ev.stream;
    pthread_mutex_lock(&ev_mu);
    while (ev->done[rs] < op->ev.gen && !ev->failed && !atomic_load(&d->failed)) {
        ev_waiters++;
        pthread_cond_wait(&ev_cv, &ev_mu);
        ev_waiters--;
    }
    int skipped = ev->done[rs] < op->ev.gen && ev->failed && !atomic_load(&d->failed);
    pthread_mutex_unlock(&ev_mu);
    if (skipped)
        tess__log(TESS__LOG_INFO, "%s stream %d: wait on an event of a failed device skipped",
                  d->name, s->idx);
}

static void run_op(struct stream *s, struct op *op) {
    struct dev *d = s->dev;
    if (atomic_load(&d->failing)) return;  /* discarded */
    if (d->p.jitter_us > 0) {
        sleep_s((double)(rand_r(&s->seed) % (unsigned)d->p.jitter_us) * 1e-6);
        if (atomic_load(&d->failing)) return;
    }
    switch (op->kind) {
    case OP_COPY:
    case OP_GEMM:
    case OP_KERNEL: {
        pthread_mutex_lock(&ev_mu);
        int drop = atomic_load(&d->failing);
        if (!drop) d->busy++;
        pthread_mutex_unlock(&ev_mu);
        if (drop) return;
        int64_t nth = atomic_fetch_add(&d->nops, 1) + 1;
        if (d->p.fault_at > 0 && nth >= d->p.fault_at) {
            /* Ops numbered past fault_at race with the failing one: drop them too, and make
             * sure the device is failing before this stream runs its next op (an event
             * recorded behind a dropped copy must never complete). */
            if (nth > d->p.fault_at) {
                char what[128];
                snprintf(what, sizeof what, "injected fault at op %lld (a later op saw it first)",
                         (long long)d->p.fault_at);
                dev_fail(d, what);
            }
            if (nth == d->p.fault_at) {
                char what[128];
                if (op->kind == OP_COPY)
                    snprintf(what, sizeof what, "injected fault at op %lld (%s copy, stream %d)",
                             (long long)nth, kind_name(op->copy.kind), s->idx);
                else
                    snprintf(what, sizeof what, "injected fault at op %lld (%s, stream %d)",
                             (long long)nth, op->kind == OP_GEMM ? "gemm" : "kernel", s->idx);
                dev_fail(d, what);
            }
        } else if (op->kind == OP_COPY) {
            run_copy(d, op);
        } else if (op->kind == OP_GEMM) {
            run_gemm(d, op);
        } else {
            run_kernel(d, op);
        }
        pthread_mutex_lock(&ev_mu);
        d->busy--;
        publish_locked(d);
        pthread_mutex_unlock(&ev_mu);
        break;
    }
    case OP_RECORD: run_record(op); break;
    case OP_WAIT: run_wait(s, op); break;
    }
}

static void *stream_main(void *arg) {
    struct stream *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        struct op *op = s->head;
        if (op) {
            s->head = op->next;
            if (!s->head) s->tail = NULL;
        }
        pthread_mutex_unlock(&s->mu);
        if (!op) return NULL;  /* stopped and drained */
        run_op(s, op);
        op_free(op);
    }
}

/* ---- open / close ------------------------------------------------------------------ */

static void stop_streams(struct dev *d) {
    for (int i = 0; i < d->nstreams; i++) {
        pthread_mutex_lock(&d->s[i].mu);
        d->s[i].stop = 1;
        pthread_cond_signal(&d->s[i].cv);
        pthread_mutex_unlock(&d->s[i].mu);
    }
    for (int i = 0; i < d->nstreams; i++) {
        pthread_join(d->s[i].thread, NULL);
        pthread_mutex_destroy(&d->s[i].mu);
        pthread_cond_destroy(&d->s[i].cv);
    }
    d->nstreams = 0;
}

static int host_open(int emu, const struct tess__dev_params *p, void **bd,
                     struct tess__dev_desc *desc) {
    const char *tab = emu ? "emulated" : "cpu";
    if (!p || !bd || !desc)
        return tess__fail(TESS_EINVAL, "%s: open: NULL argument", tab);
    if (p->nstreams < 1 || p->nstreams > HOST_STREAMS)
        return tess__fail(TESS_EINVAL, "%s: open: nstreams = %d must be in 1..%d", tab,
                          p->nstreams, HOST_STREAMS);
    if (p->ordinal < 0 || p->link_gbs < 0 || p->gflops < 0 || p->jitter_us < 0 || p->fault_at < 0)
        return tess__fail(TESS_EINVAL, "%s: open: negative ordinal or emulation knob", tab);
    struct dev *d = calloc(1, sizeof *d);
    if (!d) return tess__fail(TESS_ENOMEM, "%s: open: out of memory", tab);
    d->emu = emu;
    d->p = *p;
    d->mem_default = p->mem_cap ? p->mem_cap : EMU_DEFAULT_MEM;
    atomic_init(&d->failing, 0);
    atomic_init(&d->failed, 0);
    atomic_init(&d->nops, 0);
    memset(desc, 0, sizeof *desc);
    if (emu) {
        snprintf(d->name, sizeof d->name, "emulated:%d", p->ordinal);
        desc->kind = TESS_DEV_EMULATED;
        desc->caps = TESS__CAP_P2P | (p->shared_engine ? TESS__CAP_SHARED : 0);
        desc->mem_total = d->mem_default;
        desc->link_gbs = p->link_gbs;
    } else {
        const struct tess__hostblas *hb = tess__hostblas();
        if (!hb) {
            int rc = tess__hostblas_load();  /* the message naming the library and knob */
            free(d);
            return rc;
        }
        if (hb->get_num_threads)
            snprintf(d->name, sizeof d->name, "cpu (OpenBLAS, %d cores)", hb->get_num_threads());
        else  /* the library's file name, without its directory */
            snprintf(d->name, sizeof d->name, "cpu (%.40s)",
                     strrchr(hb->name, '/') ? strrchr(hb->name, '/') + 1 : hb->name);
        desc->kind = TESS_DEV_CPU;
        desc->caps = TESS__CAP_UNIFIED | TESS__CAP_SHARED; /* its kernels share the cores */
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        desc->mem_total = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
    }
    snprintf(desc->name, sizeof desc->name, "%s", d->name);
    desc->pci_bus = -1;

    pthread_mutex_init(&d->engine_mu, NULL);
    for (int i = 0; i < p->nstreams; i++) {
        struct stream *s = &d->s[i];
        s->dev = d;
        s->idx = i;
        s->seed = 0x9e3779b9u ^ (unsigned)(p->ordinal * 131 + i * 7 + 1);
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);
        int rc = pthread_create(&s->thread, NULL, stream_main, s);
        if (rc) {
            pthread_mutex_destroy(&s->mu);
            pthread_cond_destroy(&s->cv);
            stop_streams(d);
            pthread_mutex_destroy(&d->engine_mu);
            free(d);
            return tess__fail(TESS_ENOMEM, "%s: open: cannot start stream thread %d: %s", tab,
                              i, strerror(rc));
        }
        char tname[32];  /* Linux keeps 15 characters */
        snprintf(tname, sizeof tname, "tess-%c%d.s%d", emu ? 'e' : 'c', p->ordinal, i);
        tname[15] = '\0';
        pthread_setname_np(s->thread, tname);
        d->nstreams = i + 1;
    }
    tess__log(TESS__LOG_DEBUG, "%s: opened, %d streams", d->name, d->nstreams);
    *bd = d;
    return TESS_OK;
}

static int cpu_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    return host_open(0, p, bd, desc);
}

static int emu_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    return host_open(1, p, bd, desc);
}

/* Drain (the stream threads exit once their FIFO is empty; a failed device discards what
 * is left), join, detach the events still alive, drop the arena. */
static void host_close(void *bd) {
    struct dev *d = bd;
    if (!d) return;
    stop_streams(d);
    pthread_mutex_lock(&ev_mu);
    for (tess__event *ev = d->events, *next; ev; ev = next) {
        next = ev->next;
        ev->owner = NULL;
        ev->prev = ev->next = NULL;
    }
    d->events = NULL;
    pthread_mutex_unlock(&ev_mu);
    pthread_mutex_lock(&arena_mu);
    struct arena *a = d->arena;
    d->arena = NULL;
    pthread_mutex_unlock(&arena_mu);
    arena_unref(a);
    pthread_mutex_destroy(&d->engine_mu);
    tess__log(TESS__LOG_DEBUG, "%s: closed", d->name);
    free(d);
}

/* ---- memory ------------------------------------------------------------------------ */

static int cpu_arena(void *bd, size_t want, void **base, size_t *got) {
    (void)bd;
    (void)want;
    (void)base;
    (void)got;
    return TESS_ENOSYS;
}

/* size bytes that read as 0xFF until written: one chunk of a memfd is filled once and mapped
 * privately (copy-on-write) at every chunk of the range, so the cost is the chunk, not the
 * arena (filling 3 default arenas took most of a second per tess_init). Falls back to an
 * anonymous mapping filled by memset where memfd_create is refused. At most about 256
 * mappings per arena. MAP_FAILED on failure; munmap(p, size) releases it either way. */
static void *map_poisoned(size_t size) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), chunk = size / 256;
    if (chunk < ((size_t)2 << 20)) chunk = (size_t)2 << 20;
    if (chunk > ((size_t)64 << 20)) chunk = (size_t)64 << 20;
    chunk = (chunk + pg - 1) / pg * pg;
    if (size <= SIZE_MAX - pg && chunk > (size + pg - 1) / pg * pg) chunk = (size + pg - 1) / pg * pg;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return mem;
    int fd = memfd_create("tessera-arena", MFD_CLOEXEC);
    void *w = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)chunk) == 0)
        w = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int ok = w != MAP_FAILED;
    if (ok) {
        memset(w, 0xFF, chunk);
        munmap(w, chunk);
        for (size_t off = 0; ok && off < size; off += chunk) {
            size_t len = size - off < chunk ? size - off : chunk;
            ok = mmap((char *)mem + off, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                      0) != MAP_FAILED;
        }
    }
    if (fd >= 0) close(fd);
    if (!ok) { /* no memfd (or a mapping refused): the plain way */
        munmap(mem, size);
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem != MAP_FAILED) memset(mem, 0xFF, size);
    }
    return mem;
}

static int emu_arena(void *bd, size_t want, void **base, size_t *got) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "arena");
    if (!base || !got) return tess__fail(TESS_EINVAL, "%s: arena: NULL argument", d->name);
    size_t size = want ? want : d->mem_default;
    struct arena *a = calloc(1, sizeof *a);
    void *mem = a ? map_poisoned(size) : MAP_FAILED;
    if (mem == MAP_FAILED) {
        free(a);
        return tess__fail(TESS_ENOMEM, "%s: arena: cannot map %zu bytes", d->name, size);
    }
    a->base = mem;
    a->size = size;
    a->refs = 1;
    pthread_mutex_lock(&arena_mu);
    int twice = d->arena != NULL;
    if (!twice) {
        a->next = arenas;
        arenas = a;
        d->arena = a;
    }
    pthread_mutex_unlock(&arena_mu);
    if (twice) {
        munmap(mem, size);
        free(a);
        return tess__fail(TESS_EINVAL, "%s: arena: called twice", d->name);
    }
    *base = mem;
    *got = size;
    tess__log(TESS__LOG_DEBUG, "%s: arena %p, %zu bytes", d->name, mem, size);
    return TESS_OK;
}

/* ---- copies ------------------------------------------------------------------------ */

static int check_stream(struct dev *d, int stream, const char *hook) {
    if (stream < 0 || stream >= d->nstreams)
        return tess__fail(TESS_EINVAL, "%s: %s: stream %d out of range 0..%d", d->name, hook,
                          stream, d->nstreams - 1);
    return TESS_OK;
}

/* Emulated devices: where each pointer of a copy must lie. Takes a reference on the peer's
 * arena for P2P (*pin). */
static int emu_check_copy(struct dev *d, enum tess__copy_kind kind, void *dst, size_t dext,
                          const void *src, size_t sext, struct dev *peer, struct arena **pin) {
    const char *bad = NULL;
    pthread_mutex_lock(&arena_mu);
    struct arena *own = d->arena;
    switch (kind) {
    case TESS__H2D:
        if (!inside(own, dst, dext)) bad = "dst is not inside this device's arena";
        else if (in_any_arena(src, sext)) bad = "src (host) overlaps a device arena";
        break;
    case TESS__D2H:
        if (!inside(own, src, sext)) bad = "src is not inside this device's arena";
        else if (in_any_arena(dst, dext)) bad = "dst (host) overlaps a device arena";
        break;
    case TESS__D2D:
        if (!inside(own, dst, dext)) bad = "dst is not inside this device's arena";
        else if (!inside(own, src, sext)) bad = "src is not inside this device's arena";
        break;
    case TESS__P2P:
        if (!inside(own, dst, dext)) bad = "dst is not inside this device's arena";
        else if (!inside(peer->arena, src, sext)) bad = "src is not inside the peer's arena";
        else {
            peer->arena->refs++;
            *pin = peer->arena;
        }
        break;
    }
    pthread_mutex_unlock(&arena_mu);
    if (bad)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: %s (dst %p + %zu, src %p + %zu)",
                          d->name, kind_name(kind), bad, dst, dext, src, sext);
    return TESS_OK;
}

static int host_copy2d(void *bd, int stream, enum tess__copy_kind kind, void *dst,
                       size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t height, void *peer) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "copy2d");
    int rc = check_stream(d, stream, "copy2d");
    if (rc) return rc;
    if ((unsigned)kind > TESS__P2P)
        return tess__fail(TESS_EINVAL, "%s: copy2d: bad kind %d", d->name, (int)kind);
    if (width == 0 || height == 0) return TESS_OK;  /* nothing to move */
    if (!dst || !src)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: NULL pointer", d->name, kind_name(kind));
    if (height > 1 && (dpitch < width || spitch < width))
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: pitch (dst %zu, src %zu) < width %zu",
                          d->name, kind_name(kind), dpitch, spitch, width);
    size_t dext = extent(dpitch, width, height), sext = extent(spitch, width, height);
    if (!dext || !sext)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: extent overflows", d->name,
                          kind_name(kind));
    struct dev *pd = peer;
    struct arena *pin = NULL;
    if (d->emu) {
        if (kind == TESS__P2P && (!pd || !pd->emu))
            return tess__fail(TESS_EINVAL, "%s: copy2d P2P: peer is not an emulated device",
                              d->name);
        if ((rc = emu_check_copy(d, kind, dst, dext, src, sext, pd, &pin))) return rc;
    } else if (kind == TESS__P2P) {
        return tess__fail(TESS_EINVAL, "%s: copy2d P2P: the CPU worker has no peers", d->name);
    }
    struct op *op = op_new(OP_COPY);
    if (!op) {
        arena_unref(pin);
        return tess__fail(TESS_ENOMEM, "%s: copy2d: out of memory", d->name);
    }
    op->copy.kind = kind;
    op->copy.dst = dst;
    op->copy.dpitch = dpitch;
    op->copy.src = src;
    op->copy.spitch = spitch;
    op->copy.width = width;
    op->copy.height = height;
    op->copy.pin = pin;
    append(&d->s[stream], op);
    return TESS_OK;
}

/* ---- gemm -------------------------------------------------------------------------- */

/* Emulated devices: a stored rows x cols operand at p (leading dimension ld) must lie in
 * the arena. */
static int emu_check_operand(struct dev *d, const char *what, const void *p, int64_t rows,
                             int64_t cols, int64_t ld, size_t es) {
    size_t len = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
    pthread_mutex_lock(&arena_mu);
    int ok = inside(d->arena, p, len);
    pthread_mutex_unlock(&arena_mu);
    if (!ok)
        return tess__fail(TESS_EINVAL, "%s: gemm: %s (%p, %lld x %lld, ld %lld) is not inside "
                          "this device's arena", d->name, what, p, (long long)rows,
                          (long long)cols, (long long)ld);
    return TESS_OK;
}

static int upper_trans(char *t) {
    if (*t == 'n' || *t == 't' || *t == 'c') *t = (char)(*t - 'a' + 'A');
    return *t == 'N' || *t == 'T' || *t == 'C';
}

static int host_gemm(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m,
                     int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                     const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "gemm");
    int rc = check_stream(d, stream, "gemm");
    if (rc) return rc;
    if ((unsigned)dt > TESS_Z || !upper_trans(&ta) || !upper_trans(&tb) || m < 0 || n < 0 ||
        k < 0 || !alpha || !beta)
        return tess__fail(TESS_EINVAL, "%s: gemm: bad argument (dt %d, ta '%c', tb '%c', "
                          "m %lld, n %lld, k %lld)", d->name, (int)dt, ta, tb, (long long)m,
                          (long long)n, (long long)k);
    int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
    int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
    if (lda < TESS__MAX(1, ar) || ldb < TESS__MAX(1, br) || ldc < TESS__MAX(1, m))
        return tess__fail(TESS_EINVAL, "%s: gemm: leading dimension too small (lda %lld, "
                          "ldb %lld, ldc %lld)", d->name, (long long)lda, (long long)ldb,
                          (long long)ldc);
    size_t es = tess__dtypes[dt].size;
    if (d->emu && m > 0 && n > 0) {
        if ((rc = emu_check_operand(d, "C", C, m, n, ldc, es))) return rc;
        if (k > 0) {
            if ((rc = emu_check_operand(d, "A", A, ar, ac, lda, es))) return rc;
            if ((rc = emu_check_operand(d, "B", B, br, bc, ldb, es))) return rc;
        }
    }
    struct op *op = op_new(OP_GEMM);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: gemm: out of memory", d->name);
    op->gemm.dt = dt;
    op->gemm.ta = ta;
    op->gemm.tb = tb;
    op->gemm.m = m;
    op->gemm.n = n;
    op->gemm.k = k;
    memcpy(&op->gemm.alpha, alpha, es);
    memcpy(&op->gemm.beta, beta, es);
    op->gemm.A = A;
    op->gemm.lda = lda;
    op->gemm.B = B;
    op->gemm.ldb = ldb;
    op->gemm.C = C;
    op->gemm.ldc = ldc;
    append(&d->s[stream], op);
    return TESS_OK;
}

/* Stored shapes (rows x cols) of A, B and C of a tile kernel (backend.h); B absent: 0 x 0. */
static void kernel_shapes(const struct tess__kernel *k, int64_t sh[3][2]) {
    int64_t side_dim = k->side == 'L' ? k->m : k->n;
    int64_t ar = k->ta == 'N' ? k->n : k->k, ac = k->ta == 'N' ? k->k : k->n;
    memset(sh, 0, sizeof(int64_t) * 6);
    switch (k->kind) {
    case TESS__K_SYMM: case TESS__K_HEMM:
        sh[0][0] = sh[0][1] = side_dim, sh[1][0] = sh[2][0] = k->m, sh[1][1] = sh[2][1] = k->n;
        break;
    case TESS__K_SYRK: case TESS__K_HERK:
        sh[0][0] = ar, sh[0][1] = ac, sh[2][0] = sh[2][1] = k->n;
        break;
    case TESS__K_SYR2K: case TESS__K_HER2K:
        sh[0][0] = sh[1][0] = ar, sh[0][1] = sh[1][1] = ac, sh[2][0] = sh[2][1] = k->n;
        break;
    default: /* TRMM, TRSM: in place on C */
        sh[0][0] = sh[0][1] = side_dim, sh[2][0] = k->m, sh[2][1] = k->n;
        break;
    }
}

static int host_kernel(void *bd, int stream, const struct tess__kernel *k) {
    struct dev *d = bd;
    if (k->kind == TESS__K_GEMM)
        return host_gemm(bd, stream, k->dt, k->ta, k->tb, k->m, k->n, k->k, k->alpha, k->A,
                         k->lda, k->B, k->ldb, k->beta, k->C, k->ldc);
    if (!live(d)) return dead(d, "kernel");
    int rc = check_stream(d, stream, "kernel");
    if (rc) return rc;
    char ta = k->ta ? k->ta : 'N';
    if ((unsigned)k->dt > TESS_Z || !upper_trans(&ta) || k->m < 0 || k->n < 0 || k->k < 0 ||
        !k->alpha || (k->kind != TESS__K_TRMM && k->kind != TESS__K_TRSM && !k->beta))
        return tess__fail(TESS_EINVAL, "%s: kernel %d: bad argument", d->name, (int)k->kind);
    size_t es = tess__dtypes[k->dt].size;
    int64_t sh[3][2];
    kernel_shapes(k, sh);
    const void *ptr[3] = {k->A, k->B, k->C};
    const int64_t ld[3] = {k->lda, k->ldb, k->ldc};
    static const char *name[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        if (sh[i][0] <= 0 || sh[i][1] <= 0) continue;
        if (ld[i] < sh[i][0])
            return tess__fail(TESS_EINVAL, "%s: kernel %d: ld%s %lld < %lld", d->name,
                              (int)k->kind, name[i], (long long)ld[i], (long long)sh[i][0]);
        if (d->emu && (rc = emu_check_operand(d, name[i], ptr[i], sh[i][0], sh[i][1], ld[i], es)))
            return rc;
    }
    struct op *op = op_new(OP_KERNEL);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: kernel: out of memory", d->name);
    op->kern.k = *k;
    op->kern.k.ta = ta;
    memcpy(&op->kern.alpha, k->alpha, es);
    if (k->beta) memcpy(&op->kern.beta, k->beta, es);
    append(&d->s[stream], op);
    return TESS_OK;
}

/* ---- events ------------------------------------------------------------------------ */

static int host_event_create(void *bd, tess__event **out) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_create");
    if (!out) return tess__fail(TESS_EINVAL, "%s: event_create: NULL argument", d->name);
    tess__event *ev = calloc(1, sizeof *ev);
    if (!ev) return tess__fail(TESS_ENOMEM, "%s: event_create: out of memory", d->name);
    ev->refs = 1;
    pthread_mutex_lock(&ev_mu);
    ev->owner = d;
    ev->failed = atomic_load(&d->failed);
    ev->next = d->events;
    if (d->events) d->events->prev = ev;
    d->events = ev;
    pthread_mutex_unlock(&ev_mu);
    *out = ev;
    return TESS_OK;
}

/* May come after the owner closed; the memory goes when queued ops are done with it. */
static void host_event_destroy(void *bd, tess__event *ev) {
    (void)bd;
    if (!ev) return;
    pthread_mutex_lock(&ev_mu);
    event_unref_locked(ev);
    pthread_mutex_unlock(&ev_mu);
}

static int host_event_record(void *bd, int stream, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_record");
    int rc = check_stream(d, stream, "event_record");
    if (rc) return rc;
    if (!ev) return tess__fail(TESS_EINVAL, "%s: event_record: NULL event", d->name);
    struct op *op = op_new(OP_RECORD);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: event_record: out of memory", d->name);
    struct stream *s = &d->s[stream];
    pthread_mutex_lock(&s->mu);
    pthread_mutex_lock(&ev_mu);
    int mine = ev->owner == d;
    if (mine) {
        op->ev.ev = ev;
        op->ev.stream = stream;
        op->ev.gen = ++ev->recorded;
        ev->rec_stream = stream;
        ev->refs++;
    }
    pthread_mutex_unlock(&ev_mu);
    if (mine) append_locked(s, op);
    pthread_mutex_unlock(&s->mu);
    if (!mine) {
        free(op);
        return tess__fail(TESS_EINVAL, "%s: event_record: the event belongs to another device",
                          d->name);
    }
    return TESS_OK;
}

static int host_stream_wait(void *bd, int stream, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "stream_wait");
    int rc = check_stream(d, stream, "stream_wait");
    if (rc) return rc;
    if (!ev) return tess__fail(TESS_EINVAL, "%s: stream_wait: NULL event", d->name);
    struct op *op = op_new(OP_WAIT);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: stream_wait: out of memory", d->name);
    struct stream *s = &d->s[stream];
    pthread_mutex_lock(&s->mu);
    pthread_mutex_lock(&ev_mu);
    /* Captured now: a later re-record does not move this wait. Already reached, never
     * recorded or failed (skipped, see the top comment): nothing to queue. */
    uint64_t gen = ev->recorded;
    int rs = ev->rec_stream;
    int pending = gen > 0 && ev->done[rs] < gen && !ev->failed;
    if (pending) {
        op->ev.ev = ev;
        op->ev.stream = rs;
        op->ev.gen = gen;
        ev->refs++;
    }
    pthread_mutex_unlock(&ev_mu);
    if (pending) append_locked(s, op);
    pthread_mutex_unlock(&s->mu);
    if (!pending) free(op);
    return TESS_OK;
}

static int host_event_query(void *bd, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_query");
    if (!ev) return tess__fail(TESS_EINVAL, "%s: event_query: NULL event", d->name);
    pthread_mutex_lock(&ev_mu);
    int failed = ev->failed;
    int reached = ev->recorded == 0 || ev->done[ev->rec_stream] >= ev->recorded;
    pthread_mutex_unlock(&ev_mu);
    if (failed)
        return tess__fail(TESS_EDEVICE, "%s: event_query: the event's device failed", d->name);
    return reached ? TESS_OK : TESS_EAGAIN;
}

static int host_event_time(void *bd, tess__event *ev, double *t) {
    struct dev *d = bd;
    if (!ev || !t) return tess__fail(TESS_EINVAL, "%s: event_time: NULL argument", d->name);
    pthread_mutex_lock(&ev_mu);
    int reached = ev->recorded != 0 && ev->done[ev->rec_stream] >= ev->recorded && !ev->failed;
    *t = ev->t_done;
    pthread_mutex_unlock(&ev_mu);
    return reached ? TESS_OK : TESS_EAGAIN;
}

static int host_event_sync(void *bd, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_sync");
    if (!ev) return tess__fail(TESS_EINVAL, "%s: event_sync: NULL event", d->name);
    pthread_mutex_lock(&ev_mu);
    uint64_t gen = ev->recorded;
    int rs = ev->rec_stream;
    while (ev->done[rs] < gen && !ev->failed && !atomic_load(&d->failed)) {
        ev_waiters++;
        pthread_cond_wait(&ev_cv, &ev_mu);
        ev_waiters--;
    }
    int failed = ev->failed;
    pthread_mutex_unlock(&ev_mu);
    if (!live(d)) return dead(d, "event_sync");
    if (failed)
        return tess__fail(TESS_EDEVICE, "%s: event_sync: the event's device failed", d->name);
    return TESS_OK;
}

/* ---- tables ------------------------------------------------------------------------ */

static int cpu_count(const struct tess__config *cfg) {
    (void)cfg;
    return 1;
}

static int emu_count(const struct tess__config *cfg) {
    return cfg && cfg->emulate > 0 ? cfg->emulate : 0;
}

static int cpu_can_peer(void *bd, void *peer) {
    (void)bd;
    (void)peer;
    return 0;
}

static int emu_can_peer(void *bd, void *peer) {
    struct dev *d = bd, *pd = peer;
    return d && pd && d != pd && d->emu && pd->emu;
}

const struct tess__dev_ops tess__cpu_ops = {
    .name = "cpu",
    .count = cpu_count,
    .open = cpu_open,
    .close = host_close,
    .kernel = host_kernel,
    .event_time = host_event_time,
    .arena = cpu_arena,
    .copy2d = host_copy2d,
    .gemm = host_gemm,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .event_query = host_event_query,
    .event_sync = host_event_sync,
    .stream_wait = host_stream_wait,
    .can_peer = cpu_can_peer,
};

const struct tess__dev_ops tess__emu_ops = {
    .name = "emulated",
    .count = emu_count,
    .open = emu_open,
    .close = host_close,
    .kernel = host_kernel,
    .event_time = host_event_time,
    .arena = emu_arena,
    .copy2d = host_copy2d,
    .gemm = host_gemm,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .event_query = host_event_query,
    .event_sync = host_event_sync,
    .stream_wait = host_stream_wait,
    .can_peer = emu_can_peer,
};
