/* src/backend/stage.c: pinned staging for copies between a GPU and pageable host memory
 * (stage.h; the protocol, its ordering guarantees and fallbacks: docs/design.md, "Pageable
 * operands: staging"). A device owns up to TESSERA_STAGING bytes of pinned pages, allocated
 * in slabs on demand; each page has a flag word in mapped pinned memory holding the
 * generation of its last finished CPU copy. A staged copy is cut into page-sized segments:
 * a staging thread copies each piece and stores its generation; the stream waits on the
 * flag (cuStreamWaitValue32, or a blocking host function where the driver lacks it) before
 * the DMA (H2D), or posts the piece from a host function after it (D2H). A copy with no
 * free page waits for the oldest pending group; it goes direct only with no pool at all.
 * Threads: the device's worker queues groups and alone owns `pending`, page generations and
 * the event pool; a pool of staging threads shared by all devices runs pieces (FIFO) and
 * slab allocations; a piece never waits, so every flag wait is eventually met.
 * Locks: the pool mutex and each device's page mutex are leaves, never held together nor
 * across a CUDA call. The worker may call in with the cache lock held.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "cuda_check.h"
#include "stage.h"

#define PAGE ((size_t)8 << 20)       /* bytes of one staging page */
#define SLAB_PAGES 8                 /* pages per cudaHostAlloc (64 MiB) */
#define STAGE_MIN ((size_t)32 << 10) /* smaller copies go direct (the driver's own path) */
#define FLAG_STRIDE 64               /* bytes between flag words: one cache line each */
#define MAX_PAGES 65536              /* 512 GiB */

typedef CUresult (*wait32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*errname_fn)(CUresult, const char **);

struct stage_page {
    char *buf;               /* PAGE pinned bytes */
    _Atomic uint32_t *flag;  /* host address of its flag word */
    CUdeviceptr flag_dev;    /* the same word for cuStreamWaitValue32 */
    uint32_t gen;            /* last generation handed out (worker only) */
    struct stage_page *next; /* free list (st->mu) */
};

struct stage_group;

/* The CPU copy of one segment: ncols columns of width bytes between the user's memory
 * (host, hpitch apart) and a page (packed). */
struct stage_piece {
    struct stage_group *g;
    struct stage_page *pg;
    uint32_t gen; /* written to pg->flag once the copy is done */
    char *host;
    size_t hpitch, width, ncols;
    int npost;                 /* a posting host function's argument: pieces to post */
    struct stage_piece *qnext; /* pool queue */
};

struct stage_group {
    struct tess__stage *st;
    int h2d, n, p; /* direction, segments, pages */
    int recorded;  /* rel recorded behind every operation of the group */
    cudaEvent_t rel;
    struct stage_group *next;  /* st->pending */
    struct stage_page **pages; /* [p] */
    struct stage_piece pc[];   /* [n] */
};

struct stage_slab {
    void *base;
    struct stage_slab *next;
};

struct tess__stage {
    int ord, max_pages, memops, summary;
    int (*fail)(void *, const char *);
    void *ctx;
    _Atomic int dead;
    char *flags; /* (max_pages + 1) flag words, mapped pinned */
    CUdeviceptr flags_dev;
    struct stage_page *pages; /* [max_pages], the first `allocated` in use */

    pthread_mutex_t mu; /* page mutex: the fields below up to `growing` */
    struct stage_page *free;
    int nfree, allocated, want, growing, alloc_failed;
    int fail_slab; /* the slab whose allocation is made to fail (tests) */
    _Atomic int slabs_tried;
    struct stage_slab *slabs;

    /* pool mutex */
    int busy;   /* pieces posted and not finished, allocations running */
    int closed; /* host functions drop their pieces, no more growth */
    int alloc_queued;
    struct tess__stage *alloc_next;

    /* the worker's */
    struct stage_group *pending;
    cudaEvent_t *evfree;
    int nev, evcap;

    /* statistics */
    _Atomic uint64_t h2d_bytes, d2h_bytes, h2d_copies, d2h_copies, ring_copies, direct_copies,
        direct_bytes, page_waits;
};

/* ---- process state: driver entry points, totals, the thread pool ---------------------- */

static pthread_once_t entry_once = PTHREAD_ONCE_INIT;
static wait32_fn p_wait32;
static errname_fn p_errname;

static _Atomic uint64_t tot_h2d_bytes, tot_d2h_bytes, tot_h2d_copies, tot_d2h_copies,
    tot_ring_copies, tot_direct_copies, tot_direct_bytes, tot_pool_bytes, tot_page_waits;
static _Atomic int last_memops;

static struct {
    pthread_mutex_t life; /* start/stop of the threads (taken before mu) */
    pthread_mutex_t mu;
    pthread_cond_t work; /* pieces or allocations queued */
    pthread_cond_t done; /* a piece or an allocation finished */
    struct stage_piece *head, *tail;
    struct tess__stage *alloc_head;
    pthread_t *thr;
    int nthr, users, stop;
} pool = {PTHREAD_MUTEX_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER,
          PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER,
          NULL,
          NULL,
          NULL,
          NULL,
          0,
          0,
          0};

/* cuStreamWaitValue32 through the runtime (cudaGetDriverEntryPoint*): no link dependency on
 * libcuda. Asked for the CUDA 12.0 ABI, which is the v2 stream memory operations (CUDA 11.7+;
 * CUDA 12 dropped the v1 ones and their kernel module parameter). */
static void resolve_entry(void) {
    void *w = NULL, *en = NULL;
    int ok1, ok2;
#if CUDART_VERSION >= 12050
    enum cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = q1;
    ok1 = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &w, 12000, cudaEnableDefault,
                                           &q1) == cudaSuccess &&
          q1 == cudaDriverEntryPointSuccess;
    ok2 = cudaGetDriverEntryPointByVersion("cuGetErrorName", &en, 12000, cudaEnableDefault, &q2) ==
              cudaSuccess &&
          q2 == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    enum cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = q1;
    ok1 = cudaGetDriverEntryPoint("cuStreamWaitValue32", &w, cudaEnableDefault, &q1) ==
              cudaSuccess &&
          q1 == cudaDriverEntryPointSuccess;
    ok2 = cudaGetDriverEntryPoint("cuGetErrorName", &en, cudaEnableDefault, &q2) == cudaSuccess &&
          q2 == cudaDriverEntryPointSuccess;
#pragma GCC diagnostic pop
#else /* CUDA 11: the runtime's version picks the symbol (v2 memops from 11.7) */
    ok1 = cudaGetDriverEntryPoint("cuStreamWaitValue32", &w, cudaEnableDefault) == cudaSuccess;
    ok2 = cudaGetDriverEntryPoint("cuGetErrorName", &en, cudaEnableDefault) == cudaSuccess;
#endif
    (void)cudaGetLastError(); /* a failed look-up is an answer, not an error to keep */
    /* object to function pointer: by memcpy, as POSIX dlsym users do */
    if (ok1 && w) memcpy(&p_wait32, &w, sizeof p_wait32);
    if (ok2 && en) memcpy(&p_errname, &en, sizeof p_errname);
}

/* ---- failures ---------------------------------------------------------------------------- */

static int drv_check_(struct tess__stage *st, CUresult r, const char *call, const char *file,
                      int line) {
    if (r == CUDA_SUCCESS) return TESS_OK;
    const char *name = NULL;
    if (!p_errname || p_errname(r, &name) != CUDA_SUCCESS || !name) name = "CUresult";
    char msg[320];
    snprintf(msg, sizeof msg, "%s at %s:%d: %s (%d)", call, tess__src_file(file), line, name,
             (int)r);
    return st->fail(st->ctx, msg);
}

#define SCU(st, call) TESS_CUDA_CHECK(call, (st)->fail, (st)->ctx)
#define SDRV(st, call) drv_check_((st), (call), #call, __FILE__, __LINE__)

/* ---- the CPU copy ------------------------------------------------------------------------- */

/* Run one piece on a staging thread; returns its device (the piece may be freed by the
 * worker as soon as the flag is stored, so nothing of it is touched after that). */
static struct tess__stage *piece_run(struct stage_piece *pc) {
    struct tess__stage *st = pc->g->st;
    _Atomic uint32_t *flag = pc->pg->flag;
    uint32_t gen = pc->gen;
    if (!atomic_load_explicit(&st->dead, memory_order_acquire)) {
        char *page = pc->pg->buf;
        size_t w = pc->width;
        int h2d = pc->g->h2d;
        if (pc->ncols == 1 || pc->hpitch == w) {
            if (h2d)
                tess__copy_nt(page, pc->host, w * pc->ncols);
            else
                tess__copy_nt(pc->host, page, w * pc->ncols);
        } else {
            for (size_t c = 0; c < pc->ncols; c++) {
                if (h2d)
                    tess__copy_nt(page + c * w, pc->host + c * pc->hpitch, w);
                else
                    tess__copy_nt(pc->host + c * pc->hpitch, page + c * w, w);
            }
        }
    }
    /* the copied bytes (non-temporal stores included) before the flag */
    tess__copy_nt_fence();
    atomic_thread_fence(memory_order_seq_cst);
    atomic_store_explicit(flag, gen, memory_order_release);
    return st;
}

/* ---- pages ------------------------------------------------------------------------------- */

/* One slab of pages for st, with the device current; not under any lock. 0 or -1. */
static int slab_alloc(struct tess__stage *st) {
    pthread_mutex_lock(&st->mu);
    int k = TESS__MIN(SLAB_PAGES, st->max_pages - st->allocated);
    if (st->growing || k <= 0 || st->alloc_failed) {
        pthread_mutex_unlock(&st->mu);
        return -1;
    }
    st->growing = 1;
    pthread_mutex_unlock(&st->mu);

    struct stage_slab *sl = calloc(1, sizeof *sl);
    void *base = NULL;
    int nth = atomic_fetch_add(&st->slabs_tried, 1) + 1;
    cudaError_t e = !sl || nth == st->fail_slab
                        ? cudaErrorMemoryAllocation /* (or the injected failure) */
                        : cudaHostAlloc(&base, (size_t)k * PAGE, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* out of pinned memory is not a device failure */
        free(sl);
        pthread_mutex_lock(&st->mu);
        st->growing = 0;
        st->alloc_failed = 1;
        int have = st->allocated;
        pthread_mutex_unlock(&st->mu);
        tess__log(TESS__LOG_WARN,
                  "cuda:%d: staging: cudaHostAlloc of %zu MiB failed (%s); "
                  "staying at %d MiB of pinned pages",
                  st->ord, ((size_t)k * PAGE) >> 20, cudaGetErrorString(e),
                  (int)(((size_t)have * PAGE) >> 20));
        return -1;
    }
    atomic_fetch_add(&tot_pool_bytes, (uint64_t)k * PAGE);
    sl->base = base;
    pthread_mutex_lock(&st->mu);
    sl->next = st->slabs;
    st->slabs = sl;
    for (int i = 0; i < k; i++) {
        struct stage_page *pg = &st->pages[st->allocated + i];
        pg->buf = (char *)base + (size_t)i * PAGE;
        pg->next = st->free;
        st->free = pg;
    }
    st->allocated += k;
    st->nfree += k;
    st->growing = 0;
    pthread_mutex_unlock(&st->mu);
    return 0;
}

/* Ask the pool to grow st towards `want` pages (background). */
static void want_more(struct tess__stage *st, int shortfall) {
    pthread_mutex_lock(&st->mu);
    int target = TESS__MIN(st->max_pages, st->allocated + shortfall);
    int go = !st->alloc_failed && target > st->allocated;
    if (target > st->want) st->want = target;
    pthread_mutex_unlock(&st->mu);
    if (!go) return;
    pthread_mutex_lock(&pool.mu);
    if (!st->alloc_queued && !st->closed) {
        st->alloc_queued = 1;
        st->alloc_next = pool.alloc_head;
        pool.alloc_head = st;
        pthread_cond_signal(&pool.work);
    }
    pthread_mutex_unlock(&pool.mu);
}

/* Background growth by one slab; 1 if more is wanted. */
static int grow_once(struct tess__stage *st) {
    if (cudaSetDevice(st->ord) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    pthread_mutex_lock(&st->mu);
    int need = st->allocated < st->want && !st->alloc_failed;
    pthread_mutex_unlock(&st->mu);
    if (!need || slab_alloc(st)) return 0;
    pthread_mutex_lock(&st->mu);
    need = st->allocated < st->want && st->allocated < st->max_pages && !st->alloc_failed;
    pthread_mutex_unlock(&st->mu);
    return need;
}

/* Take up to n pages (at most a quarter of what exists while the pool is small, so that
 * concurrent copies share it). Returns how many. */
static int pages_take(struct tess__stage *st, int n, struct stage_page **out) {
    pthread_mutex_lock(&st->mu);
    int first = st->allocated == 0 && !st->growing && !st->alloc_failed;
    pthread_mutex_unlock(&st->mu);
    if (first) slab_alloc(st); /* once: the worker pays for the first slab (device current) */
    pthread_mutex_lock(&st->mu);
    int cap = TESS__MAX(2, st->allocated / 4);
    int p = TESS__MIN(n, TESS__MIN(st->nfree, cap));
    for (int i = 0; i < p; i++) {
        out[i] = st->free;
        st->free = st->free->next;
    }
    st->nfree -= p;
    pthread_mutex_unlock(&st->mu);
    return p;
}

static void pages_give(struct tess__stage *st, struct stage_page **pg, int p) {
    pthread_mutex_lock(&st->mu);
    for (int i = 0; i < p; i++) {
        pg[i]->next = st->free;
        st->free = pg[i];
    }
    st->nfree += p;
    pthread_mutex_unlock(&st->mu);
}

/* ---- the thread pool ---------------------------------------------------------------------- */

static void *pool_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        struct tess__stage *ast = pool.alloc_head;
        if (ast) {
            pool.alloc_head = ast->alloc_next;
            ast->alloc_queued = 0;
            if (ast->closed) continue;
            ast->busy++;
            pthread_mutex_unlock(&pool.mu);
            int more = grow_once(ast);
            pthread_mutex_lock(&pool.mu);
            ast->busy--;
            if (more && !ast->closed && !ast->alloc_queued) {
                ast->alloc_queued = 1;
                ast->alloc_next = pool.alloc_head;
                pool.alloc_head = ast;
            }
            pthread_cond_broadcast(&pool.done);
            continue;
        }
        struct stage_piece *pc = pool.head;
        if (pc) {
            pool.head = pc->qnext;
            if (!pool.head) pool.tail = NULL;
            pthread_mutex_unlock(&pool.mu);
            struct tess__stage *st = piece_run(pc);
            pthread_mutex_lock(&pool.mu);
            st->busy--;
            pthread_cond_broadcast(&pool.done);
            continue;
        }
        if (pool.stop) break;
        pthread_cond_wait(&pool.work, &pool.mu);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static int pool_acquire(int threads) {
    pthread_mutex_lock(&pool.life);
    int rc = TESS_OK;
    if (pool.nthr == 0) {
        if (threads <= 0) {
            long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
            threads = (int)TESS__MIN(8, TESS__MAX(1, ncpu / 2));
        }
        pool.thr = calloc((size_t)threads, sizeof *pool.thr);
        for (int i = 0; pool.thr && i < threads; i++) {
            if (pthread_create(&pool.thr[i], NULL, pool_main, NULL)) break;
            pool.nthr++;
        }
        if (pool.nthr == 0) {
            free(pool.thr);
            pool.thr = NULL;
            rc = TESS_ENOMEM;
        } else {
            tess__log(TESS__LOG_INFO, "staging: %d threads", pool.nthr);
        }
    }
    if (rc == TESS_OK) pool.users++;
    pthread_mutex_unlock(&pool.life);
    return rc;
}

static void pool_release(void) {
    pthread_mutex_lock(&pool.life);
    if (--pool.users == 0 && pool.nthr > 0) {
        pthread_mutex_lock(&pool.mu);
        pool.stop = 1;
        pthread_cond_broadcast(&pool.work);
        pthread_mutex_unlock(&pool.mu);
        for (int i = 0; i < pool.nthr; i++) pthread_join(pool.thr[i], NULL);
        free(pool.thr);
        pool.thr = NULL;
        pool.nthr = 0;
        pthread_mutex_lock(&pool.mu);
        pool.stop = 0;
        pthread_mutex_unlock(&pool.mu);
    }
    pthread_mutex_unlock(&pool.life);
}

/* Append n consecutive pieces to the queue (worker, or a host function). */
static void post(struct tess__stage *st, struct stage_piece *first, int n) {
    pthread_mutex_lock(&pool.mu);
    if (!st->closed) {
        for (int i = 0; i < n; i++) {
            struct stage_piece *pc = first + i;
            pc->qnext = NULL;
            if (pool.tail)
                pool.tail->qnext = pc;
            else
                pool.head = pc;
            pool.tail = pc;
        }
        st->busy += n;
        if (n == 1)
            pthread_cond_signal(&pool.work);
        else
            pthread_cond_broadcast(&pool.work);
    }
    pthread_mutex_unlock(&pool.mu);
}

/* Host function: post the pieces whose pages the DMA before it released (H2D) or filled
 * (D2H). Makes no CUDA call. */
static void CUDART_CB post_fn(void *arg) {
    struct stage_piece *pc = arg;
    post(pc->g->st, pc, pc->npost);
}

/* Host function standing in for cuStreamWaitValue32 where the driver lacks it. */
static void CUDART_CB wait_fn(void *arg) {
    struct stage_piece *pc = arg;
    struct tess__stage *st = pc->g->st;
    _Atomic uint32_t *flag = pc->pg->flag;
    uint32_t gen = pc->gen;
    pthread_mutex_lock(&pool.mu);
    while ((int32_t)(atomic_load_explicit(flag, memory_order_acquire) - gen) < 0 && !st->closed)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}

/* ---- open / close ------------------------------------------------------------------------- */

int tess__stage_open(const struct tess__stage_params *p, struct tess__stage **out) {
    *out = NULL;
    if (p->budget <= 0) return TESS_OK;
    pthread_once(&entry_once, resolve_entry);
    struct tess__stage *st = calloc(1, sizeof *st);
    int64_t np = p->budget / (int64_t)PAGE;
    np = TESS__MAX(1, TESS__MIN(np, MAX_PAGES));
    if (st) st->pages = calloc((size_t)np, sizeof *st->pages);
    if (!st || !st->pages) {
        free(st);
        return TESS_ENOMEM;
    }
    st->ord = p->ord;
    st->fail_slab = p->fail_slab;
    st->max_pages = (int)np;
    st->summary = p->summary;
    st->fail = p->fail;
    st->ctx = p->ctx;
    atomic_init(&st->dead, 0);
    pthread_mutex_init(&st->mu, NULL);

    /* flag words: mapped pinned memory the GPU polls (device pointer from the runtime) */
    size_t fbytes = ((size_t)np + 1) * FLAG_STRIDE;
    void *flags = NULL, *fdev = NULL;
    cudaError_t e = cudaHostAlloc(&flags, fbytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&fdev, flags, 0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        tess__log(TESS__LOG_WARN, "cuda:%d: staging off: flag words: %s", p->ord,
                  cudaGetErrorString(e));
        if (flags) cudaFreeHost(flags);
        (void)cudaGetLastError();
        pthread_mutex_destroy(&st->mu);
        free(st->pages);
        free(st);
        return TESS_ENOSYS;
    }
    memset(flags, 0, fbytes);
    st->flags = flags;
    st->flags_dev = (CUdeviceptr)(uintptr_t)fdev;
    for (int64_t i = 0; i < np; i++) {
        st->pages[i].flag = (_Atomic uint32_t *)(st->flags + (size_t)i * FLAG_STRIDE);
        st->pages[i].flag_dev = st->flags_dev + (CUdeviceptr)((size_t)i * FLAG_STRIDE);
    }

    /* probe: a wait that is already satisfied, on an idle stream */
    if (p_wait32) {
        CUdeviceptr probe = st->flags_dev + (CUdeviceptr)((size_t)np * FLAG_STRIDE);
        CUresult r = p_wait32((CUstream)p->probe, probe, 0, CU_STREAM_WAIT_VALUE_GEQ);
        cudaError_t se = r == CUDA_SUCCESS ? cudaStreamSynchronize(p->probe) : cudaSuccess;
        if (se != cudaSuccess) (void)cudaGetLastError();
        st->memops = r == CUDA_SUCCESS && se == cudaSuccess;
        if (!st->memops)
            tess__log(TESS__LOG_INFO,
                      "cuda:%d: cuStreamWaitValue32 unusable (CUresult %d, %s): "
                      "staging waits in host functions",
                      p->ord, (int)r, cudaGetErrorString(se));
    }
    int rc = pool_acquire(p->threads);
    if (rc != TESS_OK) {
        cudaFreeHost(st->flags);
        (void)cudaGetLastError();
        pthread_mutex_destroy(&st->mu);
        free(st->pages);
        free(st);
        return rc;
    }
    atomic_store(&last_memops, st->memops);
    tess__log(TESS__LOG_INFO,
              "cuda:%d: pageable staging up to %d MiB of pinned pages, "
              "stream waits by %s",
              p->ord, (int)(((size_t)np * PAGE) >> 20),
              st->memops ? "cuStreamWaitValue32" : "host functions");
    *out = st;
    return TESS_OK;
}

void tess__stage_dead(struct tess__stage *st) {
    if (st) atomic_store_explicit(&st->dead, 1, memory_order_release);
}

static void ev_put(struct tess__stage *st, cudaEvent_t ev) {
    if (st->nev == st->evcap) {
        int cap = st->evcap ? 2 * st->evcap : 32;
        cudaEvent_t *n = realloc(st->evfree, (size_t)cap * sizeof *n);
        if (!n) {
            if (cudaEventDestroy(ev) != cudaSuccess) (void)cudaGetLastError();
            return;
        }
        st->evfree = n;
        st->evcap = cap;
    }
    st->evfree[st->nev++] = ev;
}

static void print_stats(const struct tess__stage *st) {
    uint64_t hb = atomic_load(&st->h2d_bytes), db = atomic_load(&st->d2h_bytes);
    uint64_t dc = atomic_load(&st->direct_copies);
    if (hb + db + dc == 0) return;
    char line[400];
    snprintf(line, sizeof line,
             "cuda:%d pageable staging: H2D %.2f GB in %llu copies, D2H %.2f GB in %llu, "
             "%llu with fewer pages than segments, %llu direct (%.2f GB, no free page), "
             "%llu waits for pages, pool %d MiB, waits by %s",
             st->ord, 1e-9 * (double)hb, (unsigned long long)atomic_load(&st->h2d_copies),
             1e-9 * (double)db, (unsigned long long)atomic_load(&st->d2h_copies),
             (unsigned long long)atomic_load(&st->ring_copies), (unsigned long long)dc,
             1e-9 * (double)atomic_load(&st->direct_bytes),
             (unsigned long long)atomic_load(&st->page_waits),
             (int)(((size_t)st->allocated * PAGE) >> 20),
             st->memops ? "cuStreamWaitValue32" : "host functions");
    if (st->summary)
        fprintf(stderr, "  %s\n", line);
    else
        tess__log(TESS__LOG_INFO, "%s", line);
}

void tess__stage_close(struct tess__stage *st, int streams_ok) {
    if (!st) return;
    if (!streams_ok) tess__stage_dead(st);
    /* Host functions still to run drop their pieces from here on; the pieces already posted
     * finish (skipping their memcpy when the device is dead); a running allocation too. */
    pthread_mutex_lock(&pool.mu);
    st->closed = 1;
    while (st->busy > 0) pthread_cond_wait(&pool.done, &pool.mu);
    if (st->alloc_queued) {
        struct tess__stage **pp = &pool.alloc_head;
        while (*pp && *pp != st) pp = &(*pp)->alloc_next;
        if (*pp) *pp = st->alloc_next;
        st->alloc_queued = 0;
    }
    pthread_mutex_unlock(&pool.mu);
    print_stats(st);

    /* Groups: with the streams synchronized nothing refers to them any more; otherwise a
     * group whose event was not reached may still be read by a host function, so it stays. */
    int leak = 0;
    for (struct stage_group *g = st->pending, *next; g; g = next) {
        next = g->next;
        cudaError_t e = g->recorded ? cudaEventQuery(g->rel) : cudaErrorNotReady;
        if (e != cudaSuccess) (void)cudaGetLastError();
        if (e == cudaSuccess || streams_ok) {
            if (cudaEventDestroy(g->rel) != cudaSuccess) (void)cudaGetLastError();
            free(g);
        } else {
            leak = 1;
        }
    }
    st->pending = NULL;
    for (int i = 0; i < st->nev; i++)
        if (cudaEventDestroy(st->evfree[i]) != cudaSuccess) (void)cudaGetLastError();
    free(st->evfree);
    st->evfree = NULL;
    st->nev = st->evcap = 0;
    if (leak) {
        tess__log(TESS__LOG_WARN,
                  "cuda:%d: staging pages left allocated: the device's streams "
                  "could not be synchronized",
                  st->ord);
        pool_release();
        return;
    }
    for (struct stage_slab *sl = st->slabs, *next; sl; sl = next) {
        next = sl->next;
        if (cudaFreeHost(sl->base) != cudaSuccess) (void)cudaGetLastError();
        free(sl);
    }
    atomic_fetch_sub(&tot_pool_bytes, (uint64_t)st->allocated * PAGE);
    if (cudaFreeHost(st->flags) != cudaSuccess) (void)cudaGetLastError();
    pthread_mutex_destroy(&st->mu);
    free(st->pages);
    free(st);
    pool_release();
}

/* ---- the staged copy ----------------------------------------------------------------------- */

/* Pageable: host memory CUDA does not know (cudaMemoryTypeUnregistered; CUDA < 11 answered
 * cudaErrorInvalidValue). Pinned, registered or managed memory goes direct. */
static int pageable(const void *p) {
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return e == cudaErrorInvalidValue;
    }
    return a.type == cudaMemoryTypeUnregistered;
}

/* Return the pages of every group whose event was reached. Worker only. */
static int reclaim(struct tess__stage *st) {
    for (struct stage_group **pp = &st->pending; *pp;) {
        struct stage_group *g = *pp;
        if (!g->recorded) { /* queueing failed half way: the device is dead, keep it */
            pp = &g->next;
            continue;
        }
        cudaError_t e = cudaEventQuery(g->rel);
        if (e == cudaErrorNotReady) {
            pp = &g->next;
            continue;
        }
        if (e != cudaSuccess) return SCU(st, e);
        *pp = g->next;
        pages_give(st, g->pages, g->p);
        ev_put(st, g->rel);
        free(g);
    }
    return TESS_OK;
}

/* No page was free: wait for the oldest queued group to release its pages (its event; the
 * pending list holds the newest first) and take back every finished group's. *waited is 0
 * when nothing was pending. Worker only. The event needs no action of the worker's: its
 * pieces are posted already or by host functions, and the stream waits only on events
 * already recorded. */
static int wait_oldest(struct tess__stage *st, int *waited) {
    struct stage_group *old = NULL;
    for (struct stage_group *g = st->pending; g; g = g->next)
        if (g->recorded) old = g;
    *waited = 0;
    if (!old) return TESS_OK;
    cudaError_t e = cudaEventSynchronize(old->rel);
    if (e != cudaSuccess) return SCU(st, e);
    *waited = 1;
    atomic_fetch_add(&st->page_waits, 1);
    atomic_fetch_add(&tot_page_waits, 1);
    return reclaim(st);
}

static int wait_op(struct tess__stage *st, cudaStream_t s, struct stage_piece *pc) {
    if (st->memops)
        return SDRV(st, p_wait32((CUstream)s, pc->pg->flag_dev, pc->gen, CU_STREAM_WAIT_VALUE_GEQ));
    return SCU(st, cudaLaunchHostFunc(s, wait_fn, pc));
}

static int dma(struct tess__stage *st, cudaStream_t s, void *dst, size_t dpitch, const void *src,
               size_t spitch, size_t width, size_t ncols, enum cudaMemcpyKind k) {
    if (ncols == 1) return SCU(st, cudaMemcpyAsync(dst, src, width, k, s));
    return SCU(st, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, ncols, k, s));
}

static int post_later(struct tess__stage *st, cudaStream_t s, struct stage_piece *first, int n) {
    first->npost = n;
    return SCU(st, cudaLaunchHostFunc(s, post_fn, first));
}

int tess__stage_copy2d(struct tess__stage *st, cudaStream_t s, int h2d, int nowait, void *dst,
                       size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                       size_t max_pitch, int *staged) {
    *staged = 0;
    if (!st || atomic_load(&st->dead)) return TESS_OK;
    size_t devpitch = h2d ? dpitch : spitch;
    if (width * height < STAGE_MIN || width > PAGE || (height > 1 && devpitch > max_pitch))
        return TESS_OK;
    const void *host = h2d ? src : dst;
    if (!pageable(host)) return TESS_OK;

    int rc = reclaim(st);
    if (rc) return rc;
    size_t cps = height == 1 ? 1 : PAGE / width; /* columns per segment (page) */
    int n = (int)((height + cps - 1) / cps);
    struct stage_group *g = calloc(1, sizeof *g + (size_t)n * sizeof(struct stage_piece) +
                                          (size_t)n * sizeof(struct stage_page *));
    if (!g) return TESS_OK; /* out of host memory: the direct copy needs none */
    g->pages = (struct stage_page **)((char *)g + sizeof *g +
                                      (size_t)n * sizeof(struct stage_piece));
    int p = pages_take(st, n, g->pages), waited = 1;
    if (p < n) want_more(st, n - p);
    if (p == 0 && nowait) { /* neither a page wait nor a direct (blocking) copy */
        free(g);
        return TESS_EAGAIN;
    }
    while (p == 0 && waited) {
        if ((rc = wait_oldest(st, &waited))) {
            free(g);
            return rc;
        }
        p = pages_take(st, n, g->pages);
    }
    if (p == 0) {
        free(g);
        atomic_fetch_add(&st->direct_copies, 1);
        atomic_fetch_add(&st->direct_bytes, (uint64_t)(width * height));
        atomic_fetch_add(&tot_direct_copies, 1);
        atomic_fetch_add(&tot_direct_bytes, (uint64_t)(width * height));
        return TESS_OK;
    }
    cudaEvent_t rel = NULL;
    if (st->nev) {
        rel = st->evfree[--st->nev];
    } else if ((rc = SCU(st, cudaEventCreateWithFlags(&rel, cudaEventDisableTiming)))) {
        pages_give(st, g->pages, p);
        free(g);
        *staged = 1;
        return rc;
    }
    g->st = st;
    g->h2d = h2d;
    g->n = n;
    g->p = p;
    g->rel = rel;
    char *hbase = (char *)(h2d ? src : dst);
    size_t hpitch = h2d ? spitch : dpitch;
    for (int j = 0; j < n; j++) {
        struct stage_piece *pc = &g->pc[j];
        size_t c0 = (size_t)j * cps;
        pc->g = g;
        pc->pg = g->pages[j % p];
        pc->gen = ++pc->pg->gen;
        pc->host = hbase + c0 * hpitch;
        pc->hpitch = hpitch;
        pc->width = width;
        pc->ncols = TESS__MIN(cps, height - c0);
    }
    /* From here the group is the pending list's, whatever happens: pieces may be posted. */
    g->next = st->pending;
    st->pending = g;
    *staged = 1;

    int batch = p == n ? n : TESS__MAX(1, p / 2);
    if (h2d) {
        post(st, &g->pc[0], p);
        int next = p;
        for (int j = 0; j < n && !rc; j++) {
            struct stage_piece *pc = &g->pc[j];
            size_t c0 = (size_t)j * cps;
            rc = wait_op(st, s, pc);
            if (!rc)
                rc = dma(st, s, (char *)dst + c0 * dpitch, dpitch, pc->pg->buf, width, width,
                         pc->ncols, cudaMemcpyHostToDevice);
            if (!rc && next < n && (j + 1) % batch == 0) {
                int upto = TESS__MIN(n, j + 1 + p); /* piece k reuses the page of k - p <= j */
                rc = post_later(st, s, &g->pc[next], upto - next);
                next = upto;
            }
        }
    } else {
        int posted = 0;
        for (int j = 0; j < n && !rc; j++) {
            struct stage_piece *pc = &g->pc[j];
            size_t c0 = (size_t)j * cps;
            if (j >= p) rc = wait_op(st, s, &g->pc[j - p]); /* its page is free again */
            if (!rc)
                rc = dma(st, s, pc->pg->buf, width, (const char *)src + c0 * spitch, spitch, width,
                         pc->ncols, cudaMemcpyDeviceToHost);
            if (!rc && ((j + 1) % batch == 0 || j == n - 1)) {
                rc = post_later(st, s, &g->pc[posted], j + 1 - posted);
                posted = j + 1;
            }
        }
        for (int j = TESS__MAX(0, n - p); j < n && !rc; j++) rc = wait_op(st, s, &g->pc[j]);
    }
    if (!rc) rc = SCU(st, cudaEventRecord(rel, s));
    if (rc) return rc; /* the device failed; the group stays pending until close */
    g->recorded = 1;
    uint64_t bytes = (uint64_t)(width * height);
    if (h2d) {
        atomic_fetch_add(&st->h2d_bytes, bytes);
        atomic_fetch_add(&st->h2d_copies, 1);
        atomic_fetch_add(&tot_h2d_bytes, bytes);
        atomic_fetch_add(&tot_h2d_copies, 1);
    } else {
        atomic_fetch_add(&st->d2h_bytes, bytes);
        atomic_fetch_add(&st->d2h_copies, 1);
        atomic_fetch_add(&tot_d2h_bytes, bytes);
        atomic_fetch_add(&tot_d2h_copies, 1);
    }
    if (p < n) {
        atomic_fetch_add(&st->ring_copies, 1);
        atomic_fetch_add(&tot_ring_copies, 1);
    }
    return TESS_OK;
}

void tess__cuda_staging_stats(struct tess__cuda_staging *out) {
    memset(out, 0, sizeof *out);
    out->h2d_bytes = atomic_load(&tot_h2d_bytes);
    out->d2h_bytes = atomic_load(&tot_d2h_bytes);
    out->h2d_copies = atomic_load(&tot_h2d_copies);
    out->d2h_copies = atomic_load(&tot_d2h_copies);
    out->ring_copies = atomic_load(&tot_ring_copies);
    out->direct_copies = atomic_load(&tot_direct_copies);
    out->direct_bytes = atomic_load(&tot_direct_bytes);
    out->pool_bytes = atomic_load(&tot_pool_bytes);
    out->page_waits = atomic_load(&tot_page_waits);
    out->memops = atomic_load(&last_memops);
}
