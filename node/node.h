/* node/node.h: the node runtime of BLASX Alg. 1. A level-3 call becomes a job of tasks (one
 * per output tile C_ij, a list of k steps) in one non-blocking queue (queue.c); one worker
 * per device (worker.c) pulls them by demand into its reservation station (rs.c), ranks
 * them by expected cache hits (Eq. 3), runs the best on its stream slots with their k steps
 * interleaved, steals when the queue is dry, and leaves a task to a faster peer at the end
 * (balance.c). runtime.c: devices, workers, life, jobs; trace.c: timeline; tune.c: tile.
 * Task states: QUEUED -> RESERVED (a station; may be stolen) -> RUNNING (a slot) -> DONE; a
 * RUNNING task of a failed device goes back to QUEUED unless its write-back was queued
 * (then its job fails TESS_EDEVICE). Each field has one writer, named at its struct.
 * Lock order: the runtime's life lock (runtime.c), a station lock, the cache lock
 * (cache/cache.h), a heap lock. The queue has no lock; a job's lock is a leaf.
 */
#ifndef TESS_NODE_H
#define TESS_NODE_H

#include <pthread.h>

#include "cache.h"

/* ---- queue.c: bounded MPMC queue (D. Vyukov's array queue: each cell carries a sequence
 * number; producers and consumers claim positions with CAS, no locks, no ABA) ----------- */

struct tess__queue;
struct tess__queue *tess__queue_create(size_t capacity_pow2);
void tess__queue_destroy(struct tess__queue *q);
/* false when full */
bool tess__queue_push(struct tess__queue *q, void *item);
/* false when empty */
bool tess__queue_pop(struct tess__queue *q, void **item);
/* approximate number of items */
size_t tess__queue_size(struct tess__queue *q);

/* ---- jobs and tasks ---------------------------------------------------------------- */

/* One kernel of one task on one stream, on the task's output tile C_ij (see struct
 * tess__kernel for the kinds): C_ij = f(a, b, C_ij). */
struct tess__step {
    enum tess__kernel_kind kind;
    struct tess__tile a, b; /* operand tiles, fetched through the cache */
    int nops;               /* operand tiles used: 0 (POTRF), 1 (a) or 2 (a, b) */
    char side, uplo, ta, tb, diag;
    int64_t m, n, k;   /* kernel shape */
    const void *alpha; /* host scalars of the job's precision (live as long as the job) */
    const void *beta;  /* typically the job's beta on step 0, one after */
    /* the kernel's operand starts at (row, col) of the copy (a held tile: hold.c) */
    int64_t a_ro, a_co, b_ro, b_co;
    /* the kernel's C starts at (c_ro, c_co) of the task's output; b_in_c: its B lies in
     * that output too, at (b_ro, b_co) (nops 1: a region of C this step does not write) */
    int64_t c_ro, c_co;
    bool b_in_c;
    bool a_in_c;     /* its A lies in the task's output, at (a_ro, a_co) of it (possibly before
                    its (0, 0): another part of the same tile); never fetched (nops 0) */
    bool a_dep_only; /* a only orders the step after its writer (hold.c), never fetched */
    int *info;       /* POTRF, GETRF: where its kernel puts LAPACK's INFO (lives with the job) */
    int *ipiv; /* GETRF, LASWP: the pivots it writes or reads (backend.h; lives with the job) */
    /* not NULL: no kernel; the step copies its C region (m x n) into this memory of the
     * task's device (ld copy_ld), C unchanged (a distributed factorization's panel leaving
     * its held tiles: src/lapack/bpanel.c; the job pins that device) */
    void *copy_to;
    int64_t copy_ld;
};

/* hold.c: where an operand of a job lies in a held matrix. Its tiles are the held grid's
 * (T x T blocks anchored at base, clipped at rows x cols), keyed in the hold's space. */
struct tess__hview {
    uint64_t space;
    const char *base;
    int64_t ld, rows, cols, T;
    int64_t TR; /* tile rows: T, except on a hold of column strips (tess__hold_strips) */
    uint32_t es;
    int64_t r0, c0; /* the operand's element (0, 0) in the held matrix */
};
/* The held tile holding element (r, c) of the operand (its coordinates), with a host home,
 * and the element's row and column inside that tile. */
void tess__hview_tile(const struct tess__hview *v, int64_t r, int64_t c, struct tess__tile *out,
                      int64_t *ro, int64_t *co);
/* Whether the column-major rows x cols array X (ld, es-byte elements) overlaps the held
 * matrix of view v, by address span. */
bool tess__hview_overlaps(const struct tess__hview *v, const void *X, int64_t rows, int64_t cols,
                          int64_t ld, size_t es);

struct tess__pq_ent {
    struct tess__task *t;
    uint64_t seq; /* FIFO among equal priorities */
};

enum tess__task_state {
    TESS__TASK_QUEUED,
    TESS__TASK_RESERVED,
    TESS__TASK_RUNNING,
    TESS__TASK_DONE
};

struct tess__job;

/* The most tasks one job takes (its task list is allocated whole) and the most steps of one
 * task: 2^24 each, e.g. a GEMM of order 16 million in 4096-tiles. Larger counts come only
 * from matrices no host holds (or tiny TESSERA_TILE values): TESS_ENOMEM "too many tasks
 * or steps". With any tile the devices choose (16 to 4096) an operand dimension of 2^40
 * passes one of these bounds, so such calls are refused alike on GPUs, emulated devices
 * and the CPU worker, before anything is read or written. */
#define TESS__TASKS_MAX ((int64_t)1 << 24)
#define TESS__STEPS_MAX ((int64_t)1 << 24)

/* The work that produces one output tile. */
struct tess__task {
    struct tess__job *job;
    int32_t i, j;      /* output tile coordinates */
    int32_t nsteps;    /* k steps (varies by routine and tile) */
    int64_t m, n;      /* output tile shape */
    void *c;           /* host address of element (0,0) of the output tile */
    int load_c;        /* read C_ij before step 0 (beta != 0, a triangle to keep, B of TRSM) */
    _Atomic int ndeps; /* tasks that must be DONE (ops->awaits: RUNNING) before
                          this one is queued */
    struct tess__task *succ; /* the task waiting for this one (one chain), or NULL */
    _Atomic int released;    /* succ's dependency on this task is released (once) */
    _Atomic int state;       /* enum tess__task_state */
    int prio;                /* Eq. 3 for the device whose station holds it */
    /* Set before submit. pri: how soon it should run (0: no hurry, the FIFO queue; > 0:
     * the priority queue, highest first, taken before the FIFO one, and ranked above any
     * cache-hit score in a station). urgent: on the critical path (a factorization's
     * panel): may use the streams kept for such tasks (the first tess__crit_streams slots:
     * the GPU's highest stream priority) while rt->crit_live. final: its held output tile is final once it is
     * done, written behind at once (TESSERA_WRITE_BEHIND), not after the idle age. */
    int16_t pri;
    bool urgent, final;
    int64_t row, col; /* element (0, 0) of its output tile in C (held C: hold.c) */
    /* Dependencies across calls by held tile (hold.c, under rt->dep_mu): tasks of later
     * calls waiting for this one (each counted in its ndeps), and whether this one is done
     * (no more are added then). */
    struct tess__task **dsucc;
    int ndsucc, dsucc_cap;
    bool dep_done;
    double work_k; /* kflop of all its steps (balance.c), 0 until first asked;
                                  written by the worker holding the task */
};

/* What a routine provides to the runtime. */
struct tess__job_ops {
    const char *name; /* "gemm" */
    /* Outputs are read again by later tasks (TRSM): after its write-back a C tile stays
     * on its device as a clean cached copy (MESI-X E) that others hit or fetch (L2). */
    int publish;
    /* Fill step s (0 <= s < t->nsteps) of task t. */
    void (*step)(const struct tess__job *job, const struct tess__task *t, int s,
                 struct tess__step *out);
    /* Optional: whether the operands of step s are in host memory yet (panels still
     * arriving, comm/pgemm.c). A running task waits on its slot for a step that is not
     * ready; NULL means always ready. */
    bool (*ready)(const struct tess__job *job, const struct tess__task *t, int s);
    /* Optional, dataflow inside the job (TRSM): a chain's successor is queued when its
     * predecessor starts, not when it is done, and its steps wait for the tasks whose tiles
     * they read: awaits(job, t, s) names the task whose output step s reads (NULL: none), and a
     * running task waits on its slot until that task is DONE. A waiting task only waits
     * for tasks that started before it, so the earliest unfinished task of a chain always
     * runs; a task awaited after it went back to the queue (its device failed) makes the
     * waiter give its slot back (worker.c). */
    const struct tess__task *(*awaits)(const struct tess__job *job, const struct tess__task *t,
                                       int s);
    /* Optional: the worker calls it once task t's last step completed, before t is DONE; a
     * nonzero status fails the job (tasks of later calls waiting for t fail naming it) while
     * t's output counts as written (a factorization's INFO > 0, src/lapack). */
    int (*finished)(const struct tess__job *job, const struct tess__task *t);
};
/* The status a finished hook fails a job with when a tile factorization met INFO > 0. */
#define TESS__EINFO (-66)

struct tess__job {
    const struct tess__job_ops *ops;
    tess_dtype_t dt;
    uint64_t space;    /* cache space of its tiles (unique per job) */
    int64_t tile;      /* tile edge used to split the job */
    size_t blk_bytes;  /* bytes reserved per tile copy (full tile: no fragmentation) */
    uint32_t dev_mask; /* devices whose heap can hold a running task of this job */
    int64_t ldc;
    tess__scalar_t alpha, beta;
    /* routine parameters (column-major after layout folding) */
    char ta, tb;
    int64_t m, n, k;
    const void *A, *B;
    void *C;
    int64_t lda, ldb;
    /* Streaming operands (ops->ready): how much of A and B is in place, as a count of
     * leading indices along dimension ready_dim ('k': k indices of both; 'm': rows of
     * op(A), all k; 'n': columns of op(B), all k); grows while the job runs, written by
     * the submitting thread. NULL: everything is there. */
    const _Atomic int64_t *ready;
    char ready_dim;
    /* A or B homed in device memory (runtime device index, -1: host); such a job runs on
     * devices only, never on the CPU worker (device_only). */
    int a_dev, b_dev;
    bool device_only;
    int pin_dev;       /* 0: any device; d + 1: runtime device d only (its memory is named) */
    bool homes_stable; /* A and B in device memory stay unchanged until the job is done:
                          their own device reads them in place (cache.h, home_stable) */
    /* Held operands (hold.c): NULL, or where A, B (as stored) and C lie in a held matrix;
     * cut[d]: the segment boundaries along m, n, k (ncut[d] + 1 entries from 0 to the
     * extent), NULL: multiples of tile. A task's output tile lies in one held tile. */
    const struct tess__hview *hv_a, *hv_b, *hv_c;
    const int64_t *cut[3];
    /* tasks and completion */
    struct tess__task *tasks;
    int ntasks;
    _Atomic int remaining; /* tasks not DONE */
    _Atomic int status;    /* first error, TESS_OK otherwise */
    bool aborted;          /* failed by its submitter (tess__rt_job_fail), whose own
                                  message stands; written and read on that thread */
    _Atomic int lost;      /* it met a held tile lost with a failed device */
    /* Held jobs (hold.c): its tasks are in the tile dependency tables (held_deps), each
     * with one extra dependency that submit releases (the guard: nothing of it is queued
     * by another job's task before it is submitted); its call number, the first failed
     * call it depended on (0: none), when its first task started and its last ended. */
    bool held_deps;
    uint64_t seq;
    _Atomic uint64_t cause;
    _Atomic uint64_t t_first_ns, t_end_ns;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct tess__job *next_running; /* rt->jobs list */
};

/* ---- rs.c: reservation station of one device ---------------------------------------- */

struct tess__rs {
    pthread_mutex_t lock;
    int cap; /* slots */
    int count;
    struct tess__task **t; /* cap entries; t[0..count) in use */
};

int tess__rs_init(struct tess__rs *rs, int cap);
void tess__rs_destroy(struct tess__rs *rs);
/* Add a task (false when full). */
bool tess__rs_push(struct tess__rs *rs, struct tess__task *t);
/* Recompute every task's priority with prio(t, arg), then remove and return the highest
 * (ties: oldest). NULL when empty. */
struct tess__task *tess__rs_pop_best(struct tess__rs *rs, int (*prio)(struct tess__task *, void *),
                                     void *arg);
/* Steal for a thief: remove the task the owner ranks lowest (it would run last). */
struct tess__task *tess__rs_steal(struct tess__rs *rs);
int tess__rs_count(struct tess__rs *rs);

/* ---- devices and the runtime -------------------------------------------------------- */

struct tess__rt;

#define TESS__DEPTH 2   /* steps of one slot in flight at once */
#define TESS__WBH_MAX 8 /* held tiles one write-behind batch copies */

/* One task running on a stream of a device: slot s uses stream s. Each part has one writer,
 * the device's worker thread, through the file named; the commit thread of TESSERA_RECOVER
 * writes rec.commit only. Steps next - inflight .. next - 1 are in flight, step s in ring
 * entry s % TESS__DEPTH (operand copies held[2 r], held[2 r + 1]). */
struct tess__slot_ring {                     /* worker.c: the steps in flight */
    int next;                                /* next step to issue */
    int inflight;                            /* issued steps not yet reaped (<= TESS__DEPTH) */
    struct tess__blk *held[2 * TESS__DEPTH]; /* operand copies (a, b) of each step */
    tess__event *done[TESS__DEPTH];          /* recorded after each step */
    double t_issue[TESS__DEPTH];             /* when it was issued (wait order, trace) */
    int awaiting;                            /* step `next` waits for an awaited task */
};
struct tess__slot_out {  /* worker.c: the output tile C_ij on the device */
    struct tess__blk *c; /* working block, placed at activation (NULL: UNIFIED) */
    size_t committed;    /* heap bytes this slot counts on (admission) */
    int c_loaded;        /* step 0's C load was queued */
    tess__event *wb;     /* recorded after the write-back */
    int writing_back;    /* write-back queued (held C: the last step's completion event) */
    int cancelled;       /* the job failed: issue nothing more, write nothing back */
    int held;            /* c is the held tile ckey itself (hold.c), taken at activation */
    bool was_dirty;      /* ... whose home was stale when taken */
    struct tess__tile_key ckey;
    size_t c_off;  /* bytes from c->ptr to the task's element (0, 0) */
    int64_t c_row; /* held: the tile's row of the task's element (0, 0) */
    int64_t w_r0;  /* held: the first row of the tile a queued step writes (tess__cache_put) */
};
struct tess__slot_recover { /* worker.c, TESSERA_RECOVER: C through a host buffer */
    int bounced;            /* the write-back went into bounce, ... */
    _Atomic int commit;     /* ... copied into C: 0 not begun, 1 commit thread, 2 done */
    void *bounce;           /* one C block of host memory (at first use, kept) */
    size_t bounce_bytes;
};
struct tess__slot_bal {         /* balance.c: the task's work left (the end game) */
    double work_k;              /* kflop of its steps not yet completed */
    double step_k[TESS__DEPTH]; /* kflop of each step in flight */
};
struct tess__slot_trace {         /* trace.c (TESSERA_TRACE): the stream's intervals */
    double t_act;                 /* when the task was put on the slot */
    double last_t;                /* when the stream's last traced operation ended */
    int8_t fill[2 * TESS__DEPTH]; /* enum tess__fill of each held copy */
    int8_t kind[TESS__DEPTH];     /* enum tess__kernel_kind of each step in flight */
    tess__event *cl;              /* recorded after the C load */
    int cl_rec;                   /* cl was recorded for the running task */
};
struct tess__slot {
    struct tess__task *t; /* NULL: free (worker.c) */
    int stream;
    struct tess__slot_ring ring;
    struct tess__slot_out out;
    struct tess__slot_recover rec;
    struct tess__slot_bal bal;
    struct tess__slot_trace tr;
};

/* balance.c: what a device publishes for the end game (TESSERA_BALANCE). Written by the
 * device's worker only; peers read the atomics. */
struct tess__bal {
    double done_k;         /* kflop of steps completed since the runtime started */
    double busy_s;         /* seconds with steps in flight, over the periods that ended */
    _Atomic uint64_t rate; /* done_k over busy time: kflop/s, 0 until a step completed */
    _Atomic uint64_t left; /* the slots' work_k summed: kflop not yet completed */
    double held_s;         /* seconds idle and holding back since it last started a task */
    double hold_last;      /* when it last held back while idle (0: not since then) */
};

struct tess__dev {
    int id;
    struct tess__rt *rt;
    const struct tess__dev_ops *ops;
    void *bd;
    struct tess__dev_desc desc;
    int nstreams;    /* the worker's streams: 0 .. nstreams - 1 */
    int comm_stream; /* emulated devices: the first of TESS_COMM_STREAMS streams the
                                  distributed layer queues on (xport_nccl.c); -1 elsewhere */
    size_t heap_bytes;
    struct tess__rs rs;
    struct tess__slot slot[TESS_MAX_STREAMS];
    size_t committed;   /* sum of the slots' commitments */
    int inflight;       /* steps in flight over all slots */
    double busy_since;  /* when inflight last went from 0 to 1 */
    double stall_since; /* first failed allocation with nothing in flight, 0 if none */
    int stalled_slot;   /* 1 + the slot whose step found no room (tried first), 0 if none */
    pthread_t thread;
    _Atomic int failed;
    _Atomic int dropped; /* failed, its copies out of the directory (tess__hold_dev_failed) */
    _Atomic int warned;
    struct tess__counters ctr;
    struct tess__commit *commit; /* TESSERA_RECOVER: the thread copying bounce buffers into C */
    /* hold.c: a sync's request to this worker (under rt->hold_mu; posted > served) */
    int wb_stream; /* the write-behind stream (worker.c): after the slots' and comm streams */
    struct tess__blk *wbh[TESS__WBH_MAX]; /* held tiles being written behind */
    int nwbh;
    tess__event *wbh_ev; /* recorded after them */
    /* held tiles final once their task was done (task.final): written behind first */
    struct tess__tile_key *eager;
    int neager, eager_cap;
    double wbh_scan; /* when idle dirty tiles were last looked for */
    uint64_t sync_space;
    struct tess__wb_range sync_range; /* the tiles it covers, if sync_ranged */
    bool sync_ranged;
    _Atomic uint64_t sync_posted, sync_served;
    int sync_drop, sync_rc;
    tess__event *sync_ev; /* recorded after its write-backs */
    struct tess__bal bal;
};

/* trace.c: the timeline (TESSERA_TRACE) and the summary (TESSERA_SUMMARY). */
struct tess__trace_rec;
struct tess__trace {
    pthread_mutex_t mu; /* a leaf */
    int on;
    double origin; /* tess__now() at start: time 0 of the trace */
    struct tess__trace_rec *rec;
    size_t n, cap, dropped;
};

/* tune.c: the tile edge of a GEMM from a model of its time per candidate edge, fed by
 * each device kind's measured tile-kernel rates and host link (measured once per machine,
 * kept in a file). */
#define TESS__TUNE_NCAND 6
extern const int64_t tess__tune_gpu_edges[TESS__TUNE_NCAND]; /* 1024 ... 8192 */
extern const int64_t tess__tune_emu_edges[TESS__TUNE_NCAND]; /* 64 ... 512 */
struct tess__tune {
    char key[96];                     /* device kind: "NVIDIA_H100_80GB_HBM3", "emulated" */
    int64_t edges[TESS__TUNE_NCAND];  /* candidate edges of that kind */
    int have[4];                      /* rates known for precision s, d, c, z */
    double rate[4][TESS__TUNE_NCAND]; /* flop/s of one device per edge (0: unknown) */
    double link[4];                   /* host -> device bytes/s of one device */
    int measured;                     /* precisions this process measured */
};
/* What the model needs of one call and the devices. */
struct tess__tile_in {
    int64_t m, n, k;
    size_t es;            /* bytes of one element */
    double flop_mul;      /* flops per multiply-add */
    int ndev, nstreams;   /* devices sharing the call, streams of each */
    size_t heap;          /* the smallest device heap, bytes */
    double link;          /* bytes/s host -> one device */
    const int64_t *edges; /* TESS__TUNE_NCAND candidates, ascending */
    const double *rate;   /* their flop/s (0: not measured, never chosen) */
};
/* The edge of least modelled time (0 if no candidate has a rate); *pred its time, s. */
int64_t tess__tile_model(const struct tess__tile_in *in, double *pred);

struct tess__rt {
    struct tess__config cfg;
    struct tess__tune tune; /* written by tess__tune_start only, before the workers */
    struct tess__trace trace;
    int ndev;
    struct tess__dev *dev[TESS_MAX_DEVICES];
    struct tess__queue *q;
    struct tess__cache cache;
    pthread_mutex_t mu;  /* guards the sleeping workers' condition */
    pthread_cond_t work; /* signalled when tasks are queued or at shutdown */
    _Atomic int shutdown;
    _Atomic uint64_t next_space;
    pthread_mutex_t jobs_mu; /* a leaf: the running jobs, for failing one by its space */
    struct tess__job *jobs;
    /* Ready tasks that found the queue full when a worker released them (a worker must
     * never wait for room in the queue it drains): taken after the queue. */
    pthread_mutex_t overflow_mu;
    struct tess__task **overflow;
    int noverflow, overflow_cap;
    /* Ready tasks with a priority (task.pri > 0): a binary max-heap on (pri, oldest first),
     * taken before the queue (overflow_mu; npq is read without it to skip the lock when it
     * is empty). crit_live: running calls with urgent tasks (the first slots are kept for
     * those). */
    struct tess__pq_ent *pq;
    int pq_cap;
    _Atomic int npq;
    uint64_t pq_seq;
    _Atomic int crit_live;
    /* Calls submitting the several jobs of one call on held tiles (tess_?potrf, tess_?getrf):
     * while any is, write-behind's idle scan leaves held tiles alone, since a job not yet
     * submitted may write them again (node/hold.c, rewrite_pending). */
    _Atomic int batching;
    /* Its life (runtime.c, under its life lock): call references, pins, whether the last
     * tess_finalize let it go and is waiting for its calls, the fork epoch it began in. */
    int calls, pins;
    bool detached, draining;
    int epoch;
    /* hold.c: the held matrices (hold_mu, a leaf; hold_cv: a worker served a sync) */
    pthread_mutex_t hold_mu;
    pthread_cond_t hold_cv;
    struct tess__hold *holds;
    bool sync_busy; /* a sync is posted to the workers (one at a time) */
    /* hold.c: the tile dependency tables' lock (a leaf); the asynchronous calls not yet
     * reaped, oldest first, and their errors not yet reported (async_mu, a leaf) */
    pthread_mutex_t dep_mu;
    pthread_mutex_t async_mu;
    struct tess__async *async;
    int nasync;
    _Atomic uint64_t next_seq;
    int async_err, async_nlater; /* the first error, later calls failed because of one */
    char async_msg[512];
    double last_end; /* latest end of a reaped held job (the overlap count) */
};

/* A call reference on the runtime, started on first use (as by tess_init): *rt stays valid
 * until the matching tess__rt_put, which every path of the call makes, on the thread that
 * took it; tess_finalize waits for it. Nested in a call of this thread: the same runtime.
 * Never from a worker thread. Nonzero status (with a message, *rt NULL) if it does not
 * start. */
int tess__rt_get(struct tess__rt **rt);
void tess__rt_put(struct tess__rt *rt); /* NULL: nothing */
/* For an object that outlives the call that made it (the distributed GEMM's transport,
 * cached on its grid): pin a runtime the caller holds a call reference on, so that it is
 * not freed while the object uses it; tess_finalize does not wait for pins, the last
 * unpin of a finalized runtime stops it. */
void tess__rt_pin(struct tess__rt *rt);
void tess__rt_unpin(struct tess__rt *rt); /* NULL: nothing */
/* One runtime's start and stop, for the life above (runtime.c) only. */
int tess__rt_start(struct tess__rt **rt);
void tess__rt_stop(struct tess__rt *rt);
/* Split job into its tasks' queue entries, wake the workers, wait for every task, purge
 * the job's cached tiles, return the job's status. job->tasks must be filled. */
int tess__rt_run(struct tess__rt *rt, struct tess__job *job);
/* tess__rt_run in two halves, for a caller that works while the job runs (streaming
 * operands): submit queues the tasks and returns; wait is the rest. After a failed
 * submit, do not wait. */
int tess__rt_submit(struct tess__rt *rt, struct tess__job *job);
int tess__rt_wait(struct tess__rt *rt, struct tess__job *job);
/* Fail a submitted job from outside (its operands will never arrive): tasks not yet
 * finished are cancelled, tess__rt_wait returns status (or a worker's earlier one) and
 * leaves the caller's error message as it is. Call on the thread that waits. */
void tess__rt_job_fail(struct tess__rt *rt, struct tess__job *job, int status);
/* What the tile rules need to know of the devices: GPUs, emulated devices, the live ones
 * (not failed) that are not the CPU worker, whether the CPU worker is among them, streams
 * per device (the last live one's) and the smallest heap of the devices with own memory. */
struct tess__rt_devsum {
    int gpus, emulated, live, cpu, streams;
    size_t min_heap;
};
void tess__rt_devsum(const struct tess__rt *rt, struct tess__rt_devsum *out);
/* Tile edge for a job of precision dt and shape m x n x k: TESSERA_TILE, or, when
 * heap_share > 0 (GEMM jobs), the tuned model over that share of the smallest heap (the
 * rest held by the distributed GEMM's device panels) when the devices have rates, else the
 * fixed rule. */
int64_t tess__rt_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t m, int64_t n, int64_t k,
                      double heap_share);
/* tune.c: measure what the file lacks (TESSERA_TUNE); called once the devices are open,
 * before the workers start. Never fails the start. */
int tess__tune_start(struct tess__rt *rt);
/* The tuned edge for this call with heap_share of the smallest heap for its tiles, 0 when
 * there is none (no rates, or the CPU worker runs). */
int64_t tess__tune_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t m, int64_t n, int64_t k,
                        double heap_share);

/* The next ready task (queue first, then the overflow list), or NULL. */
struct tess__task *tess__rt_next_task(struct tess__rt *rt);
/* Give a task back to the ready pool from a worker (never waits). */
void tess__rt_requeue(struct tess__rt *rt, struct tess__task *t);
/* Ready tasks not yet pulled (approximate). */
size_t tess__rt_pending(struct tess__rt *rt);
/* Task t is DONE (or cancelled): queue the task waiting for it, then count it off its job.
 * The count drops under the job's lock, so the waiter cannot free the job while the last
 * finisher still signals it. */
void tess__task_done(struct tess__rt *rt, struct tess__task *t);
/* Queue t, whose last dependency a worker released (never waits). */
void tess__rt_queue_released(struct tess__rt *rt, struct tess__task *t);
/* Queue t's successor if t was the last task it depended on (once per task: at t's start
 * for ops->awaits, else at its end). */
void tess__task_release(struct tess__rt *rt, struct tess__task *t);
/* Test hooks, since the process started: tasks started while a task they await was not
 * done, steps that had to wait for one, and tasks given back because one they awaited
 * went back to the queue. */
uint64_t tess__rt_early_starts(void);
uint64_t tess__rt_awaited_steps(void);
uint64_t tess__rt_given_back(void);

/* hold.c. Whether any matrix is held (any runtime): the fast path of every call. */
bool tess__holds_any(void);
/* Where the column-major rows x cols operand X (ld, es-byte elements) lies in a held matrix:
 * 1 inside one (*v filled: GEMM reads and writes its tiles there), 0 it touches none,
 * -1 it touches one but does not lie inside it (served stateless: tess__hold_unheld). fn
 * names the call for the contract checker, which may fail it (TESS_EINVAL, < -1). */
int tess__hold_view(struct tess__rt *rt, const char *fn, const void *X, int64_t rows, int64_t cols,
                    int64_t ld, size_t es, struct tess__hview *v);
/* tess__hold_view for an operand the call only reads: a hold of column strips answers 1
 * too (v->TR is then its rows; a factorization's solves read its factor there). The block
 * jobs of the call that made such a hold (src/lapack/bpanel.c) find their regions so. */
int tess__hold_view_read(struct tess__rt *rt, const char *fn, const void *X, int64_t rows,
                         int64_t cols, int64_t ld, size_t es, struct tess__hview *v);
/* Hold the rows x cols matrix A (ld; checked by the caller) for one call as column strips:
 * tiles of every row by tile columns (src/lapack/getrf.c), *v its view; released with
 * tess_release. tess__hold_view never answers 1 for such a hold. It may overlap held
 * matrices, which the caller wrote back and dropped first (tess__hold_unheld). */
int tess__hold_strips(struct tess__rt *rt, tess_dtype_t dtype, void *A, int64_t ld, int64_t rows,
                      int64_t cols, int64_t tile, struct tess__hview *v);
/* A call served as if nothing were held touches X: every held matrix X overlaps is written
 * back, and (written) its device copies dropped. Status of the sync (TESS_EDEVICE: tiles
 * lost). */
int tess__hold_unheld(struct tess__rt *rt, const char *fn, const void *X, int64_t rows,
                      int64_t cols, int64_t ld, size_t es, bool written);
/* Enter job's tasks in the tile dependency tables: each task then also waits for the tasks
 * of earlier calls that write a held tile it reads or writes, or read one it writes (and
 * for the guard). tess__rt_submit calls it for a job with held_deps set, once the job can
 * no longer fail to be submitted; tess__hold_deps_clear after the job is done (before it
 * is freed). */
void tess__hold_deps(struct tess__rt *rt, struct tess__job *job);
void tess__hold_deps_clear(struct tess__rt *rt, struct tess__job *job);
/* job (submitted, held_deps) runs on after its call returns; once it is done and waited for
 * (tess_sync of a matrix it uses, tess_wait, or any later call when it is done already),
 * release(arg) frees it. desc names the call in its error. TESS_OK, or the job's status
 * when it had to be waited for at once (no memory to record it). */
int tess__hold_async(struct tess__rt *rt, struct tess__job *job, void (*release)(void *), void *arg,
                     const char *desc);
/* A task of a held job was done: release the tasks of later calls waiting for it (failing
 * their jobs if its job failed). runtime.c, from tess__task_done. */
void tess__hold_task_done(struct tess__rt *rt, struct tess__task *t);
/* Test hook: held jobs that started before an earlier one ended, since the process began. */
uint64_t tess__hold_overlapped(void);
/* runtime.c: the registry's life; stop writes back and forgets every held matrix. */
void tess__holds_init(struct tess__rt *rt);
/* The cache's hooks into the held data (its checker's, write-behind's), once the cache is
 * initialized and before any worker runs. */
void tess__holds_wire(struct tess__rt *rt);
void tess__holds_stop(struct tess__rt *rt);
/* Its locks, once the workers are gone (a failing worker still signals hold_cv). */
void tess__holds_destroy(struct tess__rt *rt);
/* worker.c calls it each round: serve a posted sync (false: none). */
bool tess__hold_serve(struct tess__dev *d);
/* A device failed and its copies left the directory (worker_fail, last): mark it dropped,
 * wake the syncs waiting for it. */
void tess__hold_dev_failed(struct tess__dev *d);

/* api.c: the public counters of one device. */
void tess__dev_stats(const struct tess__dev *d, tess_dev_stats_t *out);

/* The rank an MPI or Slurm launch gave this process, among all its ranks or (local) among
 * those of its node, read from the launcher's variables; 0 without a launcher. */
long tess__launch_rank(int local);
void tess__trace_start(struct tess__rt *rt);
/* TESSERA_TRACE's file name with "%r" replaced by the launcher's rank, "%%" by "%". */
void tess__trace_path(const char *spec, char *out, size_t len);
/* A slot's stream intervals (struct tess__slot_trace), at the worker's calls: its event
 * (open/close with the device), task put on the slot, C load queued, step s issued with its
 * operands' fills (enum tess__fill), step s completed, write-back completed, task ended.
 * Only intervals are recorded, and only with TESSERA_TRACE. */
int tess__trace_slot_open(struct tess__dev *d, struct tess__slot *sl);
void tess__trace_slot_close(struct tess__dev *d, struct tess__slot *sl);
void tess__trace_slot_start(struct tess__slot *sl);
void tess__trace_slot_load(struct tess__dev *d, struct tess__slot *sl);
void tess__trace_slot_issue(struct tess__slot *sl, int s, int kind, int fill_a, int fill_b);
void tess__trace_slot_step(struct tess__dev *d, struct tess__slot *sl, int s);
void tess__trace_slot_wb(struct tess__dev *d, struct tess__slot *sl);
void tess__trace_slot_end(struct tess__dev *d, struct tess__slot *sl);
/* Add an interval [t0, t1] (tess__now() clock) on track tid (0 worker, 1 + s stream s,
 * TESS__TRACE_COMM_TID(d, k) the distributed GEMM's GPU transport on that device: k = 0
 * its transfer stream, 1 its pack stream, 2 the calling thread) of device dev. No-op
 * unless TESSERA_TRACE is set. */
#define TESS__TRACE_COMM_TID(d, k) (1 + (d)->nstreams + (k))
void tess__trace_add(struct tess__rt *rt, int dev, int tid, double t0, double t1, const char *fmt,
                     ...) __attribute__((format(printf, 6, 7)));
/* Print the summary if asked, write the trace file if asked, free the buffer. */
void tess__trace_stop(struct tess__rt *rt);
/* The last tess_finalize could not stop rt (a pin holds it, which may outlive the process):
 * write the trace file as it is now, if asked. */
void tess__trace_detached(struct tess__rt *rt);

/* worker.c */
void *tess__worker_main(void *dev);
/* The device's slots: their events (at open, TESS_EDEVICE if one cannot be created); at
 * close, the commit thread (TESSERA_RECOVER), the events and the bounce buffers. Close
 * undoes a partial open. */
int tess__worker_slots_open(struct tess__dev *d);
void tess__worker_slots_close(struct tess__dev *d);
/* Process-wide counts of the tight-heap paths (B7), for tests (linked with the static twin,
 * tessera_internal: the shared library exports no internal name). */
struct tess__pressure {
    uint64_t flushes; /* a step found no room with nothing in flight: idle copies evicted */
    uint64_t flush_retries_ok;  /* ... and the step then went through */
    uint64_t planned_evictions; /* C blocks placed by the room plan where copies had to go */
    uint64_t deferred;          /* activations put off: no place kept room for the running tasks */
    uint64_t stall_enomem;      /* jobs failed TESS_ENOMEM after STALL_LIMIT_S without room */
};
void tess__worker_pressure(struct tess__pressure *out);
/* The device's write-behind batch (dev->wbh) ended: each tile is clean if landed (its event
 * completed) and nothing took it meanwhile (tess__cache_behind_done). Its worker only. */
void tess__worker_behind_end(struct tess__dev *d, bool landed);
/* Put task t into device d's station; when that is full or d failed, into the ready pool
 * (the task is never lost). Any thread. */
void tess__worker_station_put(struct tess__dev *d, struct tess__task *t);
/* A device failed: mark it, drop its cache, return its tasks. */
void tess__worker_fail(struct tess__dev *d, int status, const char *what);

/* balance.c: the end game. Flops of one tile kernel (multiply-add pairs times the
 * precision's flops per pair); the worker's bookkeeping of its backlog and rate (task put
 * on slot sl, step s of slot sl issued with kflop of work, step s completed, slot sl
 * emptied, a busy period of busy_s seconds ended); and whether device d (running: it runs tasks now) should leave station
 * task t for a peer that would finish it sooner. */
double tess__step_flops(const struct tess__step *st, tess_dtype_t dt);
void tess__bal_start(struct tess__dev *d, struct tess__slot *sl);
void tess__bal_step_issued(struct tess__slot *sl, int s, double kflop);
void tess__bal_step_done(struct tess__dev *d, struct tess__slot *sl, int s);
void tess__bal_end(struct tess__dev *d, struct tess__slot *sl);
void tess__bal_idle(struct tess__dev *d, double busy_s);
bool tess__bal_defer(struct tess__dev *d, struct tess__task *t, bool running);
/* Process-wide: times a device left a station task for a peer (tests). */
uint64_t tess__bal_deferred(void);
int tess__bal_scale_rate(int dev, double factor); /* tests */

#endif /* TESS_NODE_H */
