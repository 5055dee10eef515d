/* src/backend/host_dev.h: the host backend's objects (host.c, host_arena.c, host_ops.c,
 * host_stream.c; private to them): a device, its streams and their FIFO of ops, events,
 * emulated arenas, and the process-wide locks they share.
 *
 * Lock order: a stream's queue lock, then ev_mu (event_record and stream_wait hold both so
 * a record's generation and its place in the FIFO agree). arena_mu is a leaf; so is a
 * device's engine_mu. Stream threads hold no lock while they copy, compute, sleep or call
 * tess__fail.
 */
#ifndef TESS_BACKEND_HOST_DEV_H
#define TESS_BACKEND_HOST_DEV_H

#include <pthread.h>

#include "backend.h"

#define HOST_STREAMS \
    (TESS_MAX_STREAMS + TESS_COMM_STREAMS + TESS_AUX_STREAMS) /* the worker's, (emulated) the \
                                                                 comm streams, write-behind */

/* One emulated device memory. Freed when its device closed and no queued P2P copy still
 * reads it. All fields guarded by arena_mu. */
struct arena {
    unsigned char *base;
    size_t size;
    int refs;           /* 1 for the owning device + 1 per queued P2P copy from it */
    struct arena *next; /* registry of live arenas */
};

enum op_kind { OP_COPY, OP_GEMM, OP_KERNEL, OP_RECORD, OP_WAIT };

struct gemm_args {
    tess_dtype_t dt;
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    tess__scalar_t alpha, beta; /* copied at enqueue: the caller's may change */
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
            struct arena *pin; /* P2P: the peer's arena, held until the op is gone */
        } copy;
        struct gemm_args gemm;
        struct {
            struct tess__kernel k; /* k.alpha/k.beta point at the copies below */
            tess__scalar_t alpha, beta;
        } kern;
        struct {
            tess__event *ev; /* holds one reference */
            int stream;      /* RECORD: this stream; WAIT: the stream of the record */
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
    pthread_cond_t cv;      /* signalled on append and on stop */
    struct op *head, *tail; /* the FIFO, guarded by mu */
    int stop;               /* close(): exit once the FIFO is empty; guarded by mu */
    unsigned seed;          /* rand_r state for jitter; the thread's own */
};

struct dev {
    int emu; /* 1: tess__emu_ops, 0: tess__cpu_ops */
    struct tess__dev_params p;
    char name[64];
    size_t mem_default;   /* emulated: arena size for want = 0 */
    struct arena *arena;  /* emulated: set once by arena(); guarded by arena_mu */
    _Atomic int failing;  /* the fault happened: stream threads drop every op; ev_mu */
    _Atomic int failed;   /* failure published (hooks answer TESS_EDEVICE): set under
                                * ev_mu once failing and no copy/gemm of d is executing */
    int busy;             /* copies/gemms executing now; guarded by ev_mu */
    _Atomic int64_t nops; /* copy/gemm ops started: the fault_at counter */
    char fail_msg[160];   /* written once, under ev_mu, before failing becomes 1 */
    tess__event *events;  /* created here and not yet freed; guarded by ev_mu */
    int nstreams;
    struct stream s[HOST_STREAMS];
    /* p.shared_engine: when the engine is free of the kernels queued on it so far */
    pthread_mutex_t engine_mu; /* a leaf */
    double engine_free;
};

/* All fields guarded by ev_mu. */
struct tess__event {
    struct dev *owner;           /* creating device; NULL once it closed */
    tess__event *prev, *next;    /* owner's list */
    uint64_t recorded;           /* generation of the latest record, 0 = never recorded */
    int rec_stream;              /* stream of the latest record */
    uint64_t done[HOST_STREAMS]; /* per stream of the owner: highest generation reached */
    int failed;                  /* the owner failed: the event never reports OK again */
    int refs;                    /* 1 for the handle (until event_destroy) + 1 per queued op */
    double t_done;               /* tess__now() when the latest record was reached */
};

/* Process-wide state of all host devices. */
struct tess__hostdev_shared {
    pthread_mutex_t ev_mu;    /* every event's fields, devices' busy/events/failing */
    pthread_cond_t ev_cv;     /* broadcast when an event is reached or a device failed */
    int ev_waiters;           /* threads sleeping on ev_cv */
    pthread_mutex_t arena_mu; /* the arenas and each device's arena pointer */
    struct arena *arenas;     /* every live arena, for the "host pointer" checks */
};
extern struct tess__hostdev_shared tess__hostdev;

static inline int dead(struct dev *d, const char *hook) {
    return tess__fail(TESS_EDEVICE, "%s: %s: device failed earlier: %s", d->name, hook,
                      d->fail_msg);
}

static inline int live(struct dev *d) { return !atomic_load(&d->failed); }

static inline int check_stream(struct dev *d, int stream, const char *hook) {
    if (stream < 0 || stream >= d->nstreams)
        return tess__fail(TESS_EINVAL, "%s: %s: stream %d out of range 0..%d", d->name, hook,
                          stream, d->nstreams - 1);
    return TESS_OK;
}

static inline const char *kind_name(enum tess__copy_kind k) {
    switch (k) {
    case TESS__H2D: return "H2D";
    case TESS__D2H: return "D2H";
    case TESS__D2D: return "D2D";
    case TESS__P2P: return "P2P";
    }
    return "?";
}

/* host_arena.c: arenas (the ops tables' arena hooks), a reference dropped (unmapped at the
 * last), and where an emulated device's operands must lie: a copy's pointers (a P2P copy
 * takes a reference on the peer's arena, *pin) and a stored rows x cols operand. */
int tess__hostdev_cpu_arena(void *bd, size_t want, void **base, size_t *got);
int tess__hostdev_emu_arena(void *bd, size_t want, void **base, size_t *got);
void tess__hostdev_arena_unref(struct arena *a);
int tess__hostdev_check_copy(struct dev *d, enum tess__copy_kind kind, void *dst, size_t dext,
                             const void *src, size_t sext, struct dev *peer, struct arena **pin);
int tess__hostdev_check_operand(struct dev *d, const char *what, const void *p, int64_t rows,
                                int64_t cols, int64_t ld, size_t es);

/* host_ops.c: the hooks that queue work (backend.h). */
int tess__hostdev_copy2d(void *bd, int stream, enum tess__copy_kind kind, void *dst, size_t dpitch,
                         const void *src, size_t spitch, size_t width, size_t height, void *peer);
int tess__hostdev_gemm(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m,
                       int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                       const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
int tess__hostdev_kernel(void *bd, int stream, const struct tess__kernel *k);

/* host_stream.c: a stream thread's loop, a new op and its append to a stream's FIFO, and
 * the event hooks (backend.h). */
void *tess__hostdev_stream_main(void *stream);
struct op *tess__hostdev_op_new(enum op_kind kind);
void tess__hostdev_append(struct stream *s, struct op *op);
int tess__hostdev_event_create(void *bd, tess__event **out);
void tess__hostdev_event_destroy(void *bd, tess__event *ev);
int tess__hostdev_event_record(void *bd, int stream, tess__event *ev);
int tess__hostdev_stream_wait(void *bd, int stream, tess__event *ev);
int tess__hostdev_event_query(void *bd, tess__event *ev);
int tess__hostdev_event_time(void *bd, tess__event *ev, double *t);
int tess__hostdev_event_sync(void *bd, tess__event *ev);

#endif /* TESS_BACKEND_HOST_DEV_H */
