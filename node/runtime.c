/* node/runtime.c: the node runtime's life and its front door. Owns the device list (GPUs,
 * then emulated devices, then the CPU worker, in index order), their heaps, stations and
 * worker threads, the task queue and the cache; starts them once, runs jobs, tears down.
 * Does not own tile scheduling (worker.c) or tile placement (cache/).
 * Life (docs/design.md, "Runtime life"): g_rt, started by the first tess_init or call;
 * tess_init/tess_finalize count references (g_refs); every call holds a call reference
 * (rt->calls) on its thread, an object that outlives a call a pin (rt->pins). The last
 * tess_finalize detaches g_rt, waits for other threads' calls on it and stops it; the last
 * to let go of a pinned or self-held runtime stops it. A call nested in one its thread holds
 * gets the same runtime (t_rt) and never waits. Workers take no reference. After fork the
 * child forgets the parent's runtimes and starts anew on first use.
 * Lock order: g_lock (g_rt, g_refs, rt->calls, rt->pins; the fork handlers take it, then the
 * host backend's locks) before every lock of a runtime and its backends; held while one
 * starts or stops, never while a job runs, never by a worker. rt->mu guards workers' sleep.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER; /* a call let go, a stop ended */
static struct tess__rt *g_rt;                          /* the attached runtime, NULL when none */
static int g_refs;    /* tess_init references of g_rt (an implicit start: 1) */
static int g_closing; /* finalizes waiting for the calls of a detached runtime */
static int g_epoch;   /* forks survived: a runtime of another epoch is the parent's */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local struct tess__rt *t_rt; /* the runtime of this thread's calls */
static _Thread_local int t_calls;           /* call references this thread holds on t_rt */

#define HEAP_ALIGN 256
#define QUEUE_CAP (1u << 16)

/* "dev:k,dev:k": the fault point of device index dev, 0 if none. */
static int64_t fault_for_dev(const char *spec, int dev) {
    char key[16];
    snprintf(key, sizeof key, "%d", dev);
    return tess__fault_at(spec, key);
}

static int open_dev(struct tess__rt *rt, const struct tess__dev_ops *ops, int ordinal, int nstreams,
                    size_t mem) {
    int id = rt->ndev;
    if (id >= TESS_MAX_DEVICES)
        return tess__fail(TESS_EINVAL, "more than %d devices", TESS_MAX_DEVICES);
    struct tess__dev *d = calloc(1, sizeof *d);
    if (!d) return tess__fail(TESS_ENOMEM, "device record: out of host memory");
    d->id = id;
    d->rt = rt;
    d->ops = ops;
    d->nstreams = nstreams;
    int emu = ops == &tess__emu_ops; /* emulated devices open the comm streams too */
    d->comm_stream = emu ? nstreams : -1;
    d->wb_stream = nstreams + (emu ? TESS_COMM_STREAMS : 0);
    struct tess__dev_params p = {
        .ordinal = ordinal,
        .nstreams = d->wb_stream + TESS_AUX_STREAMS,
        .mem_cap = mem,
        .link_gbs = rt->cfg.emu_link_gbs,
        .gflops = tess__list_double(rt->cfg.emu_gflops, ordinal, 0.0),
        .fault_at = fault_for_dev(rt->cfg.emu_fault, id),
        .jitter_us = rt->cfg.emu_jitter_us,
        .shared_engine = rt->cfg.emu_shared,
        .timing = rt->trace.on,
    };
    if (!emu) p.link_gbs = p.gflops = 0, p.jitter_us = p.shared_engine = 0;
    int rc = ops->open(&p, &d->bd, &d->desc);
    if (rc) {
        free(d);
        return rc;
    }
    struct tess__heap *heap = NULL;
    if (!(d->desc.caps & TESS__CAP_UNIFIED)) {
        void *base;
        size_t got;
        rc = ops->arena(d->bd, mem, &base, &got);
        if (!rc && !(heap = tess__heap_create(base, got, HEAP_ALIGN)))
            rc = tess__fail(TESS_ENOMEM, "device heap: out of host memory");
        if (rc) {
            ops->close(d->bd);
            free(d);
            return rc;
        }
        d->heap_bytes = got;
    }
    if ((rc = tess__rs_init(&d->rs, rt->cfg.rs_size))) {
        if (heap) tess__heap_destroy(heap);
        ops->close(d->bd);
        free(d);
        return rc;
    }
    rc = tess__worker_slots_open(d); /* on failure closed with the device, as registered */
    tess__cache_set_dev(&rt->cache, id, ops, d->bd, d->desc.caps, heap, &d->ctr);
    rt->dev[id] = d;
    rt->ndev++;
    return rc;
}

static void close_dev(struct tess__rt *rt, struct tess__dev *d) {
    tess__worker_slots_close(d);
    if (rt->cache.dev[d->id].heap) tess__heap_destroy(rt->cache.dev[d->id].heap);
    d->ops->close(d->bd);
    tess__rs_destroy(&d->rs);
    free(d);
}

static int open_all(struct tess__rt *rt) {
    const struct tess__config *cfg = &rt->cfg;
    int rc = TESS_OK;
#ifdef TESS_HAVE_CUDA
    int ngpu = tess__cuda_ops.count(cfg);
    for (int i = 0; i < ngpu && !rc; i++)
        rc = open_dev(rt, &tess__cuda_ops, tess__cuda_ordinal(cfg, i), cfg->streams,
                      (size_t)cfg->dev_mem);
    if (rc) return rc;
#endif
    for (int i = 0; i < cfg->emulate && !rc; i++)
        rc = open_dev(rt, &tess__emu_ops, i, cfg->emu_streams, (size_t)cfg->emu_mem);
    if (rc) return rc;
    if (cfg->cpu_worker == 1 || (cfg->cpu_worker < 0 && rt->ndev == 0))
        rc = open_dev(rt, &tess__cpu_ops, 0, 1, 0);
    if (rc) return rc;
    if (rt->ndev == 0)
        return tess__fail(TESS_ENODEV, "no device: TESSERA_DEVICES, TESSERA_EMULATE and "
                                       "TESSERA_CPU_WORKER leave nothing to run on");
    /* Peers: devices of one backend that can copy from each other directly. */
    for (int i = 0; i < rt->ndev; i++) {
        uint32_t mask = 0;
        for (int j = 0; j < rt->ndev && cfg->p2p; j++)
            if (j != i && rt->dev[i]->ops == rt->dev[j]->ops &&
                (rt->dev[i]->desc.caps & TESS__CAP_P2P) &&
                rt->dev[i]->ops->can_peer(rt->dev[i]->bd, rt->dev[j]->bd))
                mask |= 1u << j;
        tess__cache_set_peers(&rt->cache, i, mask);
    }
    return TESS_OK;
}

void tess__rt_stop(struct tess__rt *rt) {
    if (!rt) return;
    tess__holds_stop(rt); /* written back while the workers still serve */
    pthread_mutex_lock(&rt->mu);
    atomic_store(&rt->shutdown, 1);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
    for (int i = 0; i < rt->ndev; i++)
        if (rt->dev[i]->thread) pthread_join(rt->dev[i]->thread, NULL);
    tess__trace_stop(rt);
    tess__cache_destroy(&rt->cache);
    for (int i = 0; i < rt->ndev; i++) close_dev(rt, rt->dev[i]);
    if (rt->q) tess__queue_destroy(rt->q);
    free(rt->overflow);
    free(rt->pq);
    pthread_mutex_destroy(&rt->overflow_mu);
    pthread_mutex_destroy(&rt->jobs_mu);
    pthread_cond_destroy(&rt->work);
    pthread_mutex_destroy(&rt->mu);
    tess__holds_destroy(rt);
    free(rt);
}

/* cache poison hook: the job whose tiles live in `space` cannot be trusted any more */
static void poison_space(void *arg, uint64_t space) {
    struct tess__rt *rt = arg;
    pthread_mutex_lock(&rt->jobs_mu);
    for (struct tess__job *j = rt->jobs; j; j = j->next_running)
        if (j->space == space || (j->hv_a && j->hv_a->space == space) ||
            (j->hv_b && j->hv_b->space == space) || (j->hv_c && j->hv_c->space == space)) {
            int ok = TESS_OK;
            atomic_compare_exchange_strong(&j->status, &ok, TESS_EDEVICE);
        }
    pthread_mutex_unlock(&rt->jobs_mu);
}

int tess__rt_start(struct tess__rt **out) {
    struct tess__rt *rt = calloc(1, sizeof *rt);
    if (!rt) return tess__fail(TESS_ENOMEM, "runtime: out of host memory");
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->work, NULL);
    pthread_mutex_init(&rt->overflow_mu, NULL);
    pthread_mutex_init(&rt->jobs_mu, NULL);
    tess__holds_init(rt); /* before anything can fail: stop destroys its locks */
    atomic_store(&rt->next_space, 1);
    int rc = tess__config_load(&rt->cfg);
    if (!rc) rc = tess__hostblas_load();
    if (!rc) {
        tess__verbose = rt->cfg.verbose;
        tess__trace_start(rt);
        rc = tess__cache_init(&rt->cache, TESS_MAX_DEVICES);
    }
    if (!rc) {
        rt->cache.p2p = rt->cfg.p2p;
        rt->cache.peer_done_only = rt->cfg.recover;
        rt->cache.poison = poison_space;
        rt->cache.poison_arg = rt;
        tess__holds_wire(rt);
    }
    if (!rc && !(rt->q = tess__queue_create(QUEUE_CAP)))
        rc = tess__fail(TESS_ENOMEM, "task queue: out of host memory");
    if (!rc) rc = open_all(rt);
    if (!rc) rc = tess__fault_check(rt->cfg.emu_fault, rt->ndev);
    if (!rc) tess__tune_start(rt);
    for (int i = 0; i < rt->ndev && !rc; i++)
        if (pthread_create(&rt->dev[i]->thread, NULL, tess__worker_main, rt->dev[i]))
            rc = tess__fail(TESS_ENOMEM, "cannot start the worker of device %d", i);
    if (rc) {
        tess__rt_stop(rt);
        return rc;
    }
    for (int i = 0; i < rt->ndev; i++)
        tess__log(TESS__LOG_INFO, "device %d: %s, %zu MiB heap, %d streams", i,
                  rt->dev[i]->desc.name, rt->dev[i]->heap_bytes >> 20, rt->dev[i]->nstreams);
    *out = rt;
    return TESS_OK;
}

/* ---- life: references, finalize, fork ------------------------------------------------- */

/* The child of a fork has one thread, the forking one: the parent's workers, stream
 * threads and any thread waiting in tess_finalize or tess__rt_get are gone, so nothing of
 * the parent's runtimes may be waited for, joined or freed. Forget them (their memory is
 * leaked in the child), count the fork (a reference to one of them that the child lets go
 * never stops it) and start anew on first use. prepare holds g_lock across fork so that no
 * runtime is half started or half stopped in the child, then the host backend's
 * process-wide locks (a stream thread of the parent may hold one: the child's new devices
 * need them); the child releases them all (its one thread is the holder) and makes g_cv
 * new (the parent's waiters on it are not here). */
static void fork_prepare(void) {
    pthread_mutex_lock(&g_lock);
    tess__host_fork_prepare();
}
static void fork_parent(void) {
    tess__host_fork_parent();
    pthread_mutex_unlock(&g_lock);
}
static void fork_child(void) {
    tess__host_fork_child();
    g_rt = NULL;
    g_refs = g_closing = 0;
    g_epoch++;
    t_rt = NULL;
    t_calls = 0;
    pthread_mutex_unlock(&g_lock);
    pthread_cond_init(&g_cv, NULL);
}

static void register_fork(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Lock the runtime's life; the first time, register the fork handlers. */
static void life_lock(void) {
    pthread_once(&g_once, register_fork);
    pthread_mutex_lock(&g_lock);
}

/* Stop rt once it is detached and neither a call, a pin nor a waiting finalize holds it.
 * Caller holds g_lock. */
static void stop_if_unused(struct tess__rt *rt) {
    if (rt->detached && !rt->draining && rt->calls == 0 && rt->pins == 0 && rt->epoch == g_epoch)
        tess__rt_stop(rt);
}

/* A thread holding no call waits for the finalizes in progress (their runtime stopped). */
static void wait_closing(void) {
    while (t_calls == 0 && g_closing > 0) pthread_cond_wait(&g_cv, &g_lock);
}

int tess_init(void) {
    tess__clear_error();
    life_lock();
    wait_closing();
    int rc = TESS_OK;
    if (!g_rt && !(rc = tess__rt_start(&g_rt))) g_rt->epoch = g_epoch;
    if (!rc) g_refs++;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int tess_finalize(void) {
    life_lock();
    if (g_refs > 0 && --g_refs == 0) {
        struct tess__rt *rt = g_rt;
        g_rt = NULL;
        rt->detached = true;
        /* this thread's own calls (tess_finalize from inside one) cannot be waited for */
        int mine = t_calls > 0 && t_rt == rt ? t_calls : 0;
        rt->draining = true;
        g_closing++;
        while (rt->calls > mine) pthread_cond_wait(&g_cv, &g_lock);
        rt->draining = false;
        g_closing--;
        if (rt->pins)
            tess__trace_detached(rt); /* a pin may outlive the process's exit */
        else
            stop_if_unused(rt); /* else the last tess__rt_put or tess__rt_unpin stops it */
        pthread_cond_broadcast(&g_cv);
    }
    pthread_mutex_unlock(&g_lock);
    return TESS_OK;
}

int tess__rt_get(struct tess__rt **out) {
    life_lock();
    int rc = TESS_OK;
    struct tess__rt *rt = t_calls > 0 ? t_rt : NULL; /* nested: the runtime of the outer call */
    if (!rt) {
        wait_closing();
        if (!g_rt && !(rc = tess__rt_start(&g_rt))) {
            g_rt->epoch = g_epoch;
            g_refs = 1; /* implicit start: lives until tess_finalize or exit */
        }
        rt = g_rt;
    }
    if (!rc) {
        rt->calls++;
        t_rt = rt;
        t_calls++;
    }
    pthread_mutex_unlock(&g_lock);
    *out = rc ? NULL : rt;
    return rc;
}

void tess__rt_put(struct tess__rt *rt) {
    if (!rt) return;
    pthread_mutex_lock(&g_lock);
    rt->calls--;
    if (t_calls > 0 && --t_calls == 0) t_rt = NULL;
    if (rt->detached) {
        pthread_cond_broadcast(&g_cv); /* a finalize may wait for this call */
        stop_if_unused(rt);
    }
    pthread_mutex_unlock(&g_lock);
}

void tess__rt_pin(struct tess__rt *rt) {
    pthread_mutex_lock(&g_lock);
    rt->pins++;
    pthread_mutex_unlock(&g_lock);
}

void tess__rt_unpin(struct tess__rt *rt) {
    if (!rt) return;
    pthread_mutex_lock(&g_lock);
    rt->pins--;
    stop_if_unused(rt);
    pthread_mutex_unlock(&g_lock);
}

/* ---- jobs ------------------------------------------------------------------------------ */

static int live_devices(const struct tess__rt *rt, uint32_t mask) {
    int n = 0;
    for (int i = 0; i < rt->ndev; i++) n += (mask & (1u << i)) && !atomic_load(&rt->dev[i]->failed);
    return n;
}

/* The priority heap (rt->pq, under overflow_mu): a before b. */
static bool pq_before(const struct tess__pq_ent *a, const struct tess__pq_ent *b) {
    return a->t->pri != b->t->pri ? a->t->pri > b->t->pri : a->seq < b->seq;
}

static bool pq_push(struct tess__rt *rt, struct tess__task *t) {
    int n = atomic_load(&rt->npq);
    if (n == rt->pq_cap) {
        int cap = rt->pq_cap ? 2 * rt->pq_cap : 256;
        struct tess__pq_ent *grown = realloc(rt->pq, sizeof *grown * (size_t)cap);
        if (!grown) return false;
        rt->pq = grown, rt->pq_cap = cap;
    }
    struct tess__pq_ent e = {t, rt->pq_seq++};
    int i = n;
    while (i > 0 && pq_before(&e, &rt->pq[(i - 1) / 2])) {
        rt->pq[i] = rt->pq[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    rt->pq[i] = e;
    atomic_store(&rt->npq, n + 1);
    return true;
}

static struct tess__task *pq_pop(struct tess__rt *rt) {
    int n = atomic_load(&rt->npq);
    if (n == 0) return NULL;
    struct tess__task *top = rt->pq[0].t;
    struct tess__pq_ent last = rt->pq[--n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pq_before(&rt->pq[c + 1], &rt->pq[c])) c++;
        if (!pq_before(&rt->pq[c], &last)) break;
        rt->pq[i] = rt->pq[c];
        i = c;
    }
    if (n > 0) rt->pq[i] = last;
    atomic_store(&rt->npq, n);
    return top;
}

/* Put a ready task on the queue. The caller's thread submits (may wait for room while the
 * workers drain the queue); a worker never waits: a full queue sends it to the overflow. */
static void queue_task(struct tess__rt *rt, struct tess__task *t, bool may_wait) {
    atomic_store(&t->state, TESS__TASK_QUEUED);
    if (t->pri > 0) {
        pthread_mutex_lock(&rt->overflow_mu);
        bool in = pq_push(rt, t);
        pthread_mutex_unlock(&rt->overflow_mu);
        if (in) return; /* else no memory: the plain queue */
    }
    while (!tess__queue_push(rt->q, t)) {
        if (!may_wait) {
            pthread_mutex_lock(&rt->overflow_mu);
            if (rt->noverflow == rt->overflow_cap) {
                int cap = rt->overflow_cap ? 2 * rt->overflow_cap : 256;
                struct tess__task **grown = realloc(rt->overflow, sizeof *grown * (size_t)cap);
                if (!grown) { /* cannot grow: yield and retry the queue */
                    pthread_mutex_unlock(&rt->overflow_mu);
                    sched_yield();
                    continue;
                }
                rt->overflow = grown;
                rt->overflow_cap = cap;
            }
            rt->overflow[rt->noverflow++] = t;
            pthread_mutex_unlock(&rt->overflow_mu);
            return;
        }
        pthread_mutex_lock(&rt->mu);
        pthread_cond_broadcast(&rt->work);
        pthread_mutex_unlock(&rt->mu);
        sched_yield();
    }
}

void tess__rt_requeue(struct tess__rt *rt, struct tess__task *t) { queue_task(rt, t, false); }

size_t tess__rt_pending(struct tess__rt *rt) {
    pthread_mutex_lock(&rt->overflow_mu);
    size_t n = (size_t)rt->noverflow + (size_t)atomic_load(&rt->npq);
    pthread_mutex_unlock(&rt->overflow_mu);
    return n + tess__queue_size(rt->q);
}

struct tess__task *tess__rt_next_task(struct tess__rt *rt) {
    void *item;
    struct tess__task *t = NULL;
    if (atomic_load_explicit(&rt->npq, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&rt->overflow_mu);
        t = pq_pop(rt);
        pthread_mutex_unlock(&rt->overflow_mu);
        if (t) return t;
    }
    if (tess__queue_pop(rt->q, &item)) return item;
    pthread_mutex_lock(&rt->overflow_mu);
    if (rt->noverflow > 0) t = rt->overflow[--rt->noverflow];
    pthread_mutex_unlock(&rt->overflow_mu);
    return t;
}

void tess__task_release(struct tess__rt *rt, struct tess__task *t) {
    struct tess__task *next = t->succ;
    if (!next || atomic_exchange(&t->released, 1)) return;
    if (atomic_fetch_sub(&next->ndeps, 1) == 1) {
        queue_task(rt, next, false); /* even when the job failed: it is then cancelled */
        pthread_mutex_lock(&rt->mu);
        pthread_cond_broadcast(&rt->work);
        pthread_mutex_unlock(&rt->mu);
    }
}

void tess__task_done(struct tess__rt *rt, struct tess__task *t) {
    struct tess__job *job = t->job;
    atomic_store(&t->state, TESS__TASK_DONE);
    tess__task_release(rt, t);
    if (job->held_deps) tess__hold_task_done(rt, t);
    pthread_mutex_lock(&job->mu);
    if (atomic_fetch_sub(&job->remaining, 1) == 1) {
        if (job->held_deps) atomic_store(&job->t_end_ns, (uint64_t)(tess__now() * 1e9));
        pthread_cond_broadcast(&job->cv);
    }
    pthread_mutex_unlock(&job->mu);
}

void tess__rt_queue_released(struct tess__rt *rt, struct tess__task *t) {
    queue_task(rt, t, false);
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
}

/* With no device left to take them, cancel whatever the queue holds. */
static void drain_queue(struct tess__rt *rt) {
    struct tess__task *t;
    while ((t = tess__rt_next_task(rt))) {
        int ok = TESS_OK;
        atomic_compare_exchange_strong(&t->job->status, &ok, TESS_ENODEV);
        tess__task_done(rt, t);
    }
}

static void unlist_job(struct tess__rt *rt, struct tess__job *job) {
    pthread_mutex_lock(&rt->jobs_mu);
    for (struct tess__job **p = &rt->jobs; *p; p = &(*p)->next_running)
        if (*p == job) {
            *p = job->next_running;
            break;
        }
    pthread_mutex_unlock(&rt->jobs_mu);
}

int tess__rt_run(struct tess__rt *rt, struct tess__job *job) {
    int rc = tess__rt_submit(rt, job);
    return rc ? rc : tess__rt_wait(rt, job);
}

void tess__rt_job_fail(struct tess__rt *rt, struct tess__job *job, int status) {
    int ok = TESS_OK;
    atomic_compare_exchange_strong(&job->status, &ok, status);
    job->aborted = true;
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
}

int tess__rt_submit(struct tess__rt *rt, struct tess__job *job) {
    job->space = atomic_fetch_add(&rt->next_space, 1);
    job->dev_mask = 0;
    for (int i = 0; i < rt->ndev; i++) {
        struct tess__dev *d = rt->dev[i];
        if ((d->desc.caps & TESS__CAP_UNIFIED) ? !job->device_only
                                               : job->blk_bytes <= d->heap_bytes / 3)
            job->dev_mask |= 1u << i;
    }
    if (job->pin_dev > 0) job->dev_mask &= 1u << (job->pin_dev - 1);
    if (!job->dev_mask)
        return tess__fail(TESS_ENOMEM,
                          "no device heap holds three %zu-byte tiles; lower TESSERA_TILE",
                          job->blk_bytes);
    if (!live_devices(rt, job->dev_mask))
        return tess__fail(TESS_ENODEV, "every device able to run this call has failed");
    atomic_store(&job->remaining, job->ntasks);
    atomic_store(&job->status, TESS_OK);
    job->aborted = false;
    pthread_mutex_init(&job->mu, NULL);
    pthread_cond_init(&job->cv, NULL);
    pthread_mutex_lock(&rt->jobs_mu);
    job->next_running = rt->jobs;
    rt->jobs = job;
    pthread_mutex_unlock(&rt->jobs_mu);

    /* The ready tasks are chosen before any is queued: once one runs, a finishing task
     * may queue its successor itself. */
    struct tess__task **ready = malloc(sizeof *ready * (size_t)(job->ntasks + 1));
    if (!ready) {
        unlist_job(rt, job);
        pthread_mutex_destroy(&job->mu);
        pthread_cond_destroy(&job->cv);
        return tess__fail(TESS_ENOMEM, "task list: out of host memory");
    }
    /* held jobs wait for earlier calls by tile; nothing fails from here on */
    if (job->held_deps) tess__hold_deps(rt, job);
    int nready = 0;
    for (int i = 0; i < job->ntasks; i++)
        if (job->held_deps ? atomic_fetch_sub(&job->tasks[i].ndeps, 1) == 1 /* the guard */
                           : atomic_load(&job->tasks[i].ndeps) == 0)
            ready[nready++] = &job->tasks[i];
    for (int i = 0; i < nready; i++) {
        queue_task(rt, ready[i], true);
        if ((i & 255) == 255) {
            pthread_mutex_lock(&rt->mu);
            pthread_cond_broadcast(&rt->work);
            pthread_mutex_unlock(&rt->mu);
        }
    }
    free(ready);
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
    return TESS_OK;
}

int tess__rt_wait(struct tess__rt *rt, struct tess__job *job) {
    pthread_mutex_lock(&job->mu);
    while (atomic_load(&job->remaining) > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&job->cv, &job->mu, &ts);
        if (atomic_load(&job->remaining) > 0 && !live_devices(rt, job->dev_mask)) {
            pthread_mutex_unlock(&job->mu);
            drain_queue(rt);
            pthread_mutex_lock(&job->mu);
        }
    }
    pthread_mutex_unlock(&job->mu);
    tess__cache_purge(&rt->cache, job->space);
    unlist_job(rt, job);
    pthread_mutex_destroy(&job->mu);
    pthread_cond_destroy(&job->cv);
    /* The failure was recorded on a worker's thread: say it again on the caller's (unless
     * the caller failed the job and has said why). */
    int st = atomic_load(&job->status);
    if (job->aborted) return st;
    if (st == TESS_EDEVICE && atomic_load(&job->lost))
        tess__fail(st, "a device failed holding the only current copy of a held tile this call "
                       "uses (tess_sync names the range); C is unspecified");
    else if (st == TESS_EINVAL)
        tess__fail(st, "a tile this call reads is being written by another call on the same "
                       "held range at once (outside the contract of held data); C is unspecified");
    else if (st == TESS_EDEVICE)
        tess__fail(st, "a device failed during this call and its part could not be redone "
                       "(a tile was being written back, or a peer copy was unfinished); C is "
                       "unspecified, retry the call");
    else if (st == TESS_ENOMEM)
        tess__fail(st, "a device could not get room for the tiles of a task; C is unspecified");
    else if (st == TESS_ENODEV)
        tess__fail(st, "every device able to run this call failed; C is unspecified");
    else if (st)
        tess__fail(st, "the call failed; C is unspecified");
    return st;
}

void tess__rt_devsum(const struct tess__rt *rt, struct tess__rt_devsum *out) {
    memset(out, 0, sizeof *out);
    out->min_heap = SIZE_MAX;
    for (int i = 0; i < rt->ndev; i++) {
        const struct tess__dev *d = rt->dev[i];
        if (d->desc.kind == TESS_DEV_CUDA)
            out->gpus++;
        else if (d->desc.kind == TESS_DEV_EMULATED)
            out->emulated++;
        if (d->desc.caps & TESS__CAP_UNIFIED) {
            out->cpu = 1;
            continue;
        }
        if (d->heap_bytes < out->min_heap) out->min_heap = d->heap_bytes;
        if (atomic_load(&d->failed)) continue;
        out->live++;
        out->streams = d->nstreams;
    }
}

int64_t tess__rt_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t m, int64_t n, int64_t k,
                      double heap_share) {
    if (rt->cfg.tile > 0) return rt->cfg.tile;
    int64_t tt = heap_share > 0 ? tess__tune_tile(rt, dt, m, n, k, heap_share) : 0;
    if (tt > 0) return tt;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    const int gpus = ds.gpus, others = ds.emulated;
    const size_t min_heap = ds.min_heap;
    int64_t t = gpus ? 4096 : 256;
    /* Enough tasks to keep every device's streams busy, but never tiny GPU tiles. */
    int64_t ndev = gpus + others > 0 ? gpus + others : 1;
    int64_t big = TESS__MAX(m, n);
    int64_t tiles; /* checked: two dimensions of 2^40 have 2^64 tiles of 256 */
    while (t > (gpus ? 1024 : 64) && big > 0 &&
           !__builtin_mul_overflow(TESS__CEILDIV(m, t), TESS__CEILDIV(n, t), &tiles) &&
           tiles < 2 * ndev)
        t /= 2;
    /* A running task holds three tiles; leave room for several on the smallest heap. */
    size_t es = tess__dtypes[dt].size;
    while (t > 16 && min_heap != SIZE_MAX && (size_t)(12 * t * t) * es > min_heap) t /= 2;
    (void)k;
    return t;
}
