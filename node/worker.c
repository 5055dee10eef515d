/* node/worker.c: the loop one thread runs for one device (BLASX Alg. 1, ComputingKernel):
 * reap completed steps, refill the station from the queue (steal when dry), activate the
 * best station tasks on free slots, issue one k step per slot per round (docs/design.md,
 * "The worker loop"). Owns the device's slots (struct tess__slot: ring, out, rec; balance.c
 * and trace.c own bal and tr), their events and bounce buffers, and the commit thread of
 * TESSERA_RECOVER; not tiles (cache/) nor the queue (runtime.c).
 * Invariants: a task is activated only if the heap admits it (C + A + B of every running
 * task fit, and its C block is placed so that two operand tiles of each running task still
 * fit around the C blocks: tess__cache_alloc_planned); a step without room stalls its slot,
 * which then goes first until the device drains and flushes its idle copies, so every
 * running task progresses. No task is lost: a station push that fails requeues it.
 * Stream ownership: slot s uses stream s; only this thread queues work on this device's
 * streams. Locks taken here: a station's lock (rs.c), then the cache lock inside cache.c;
 * the commit queue's lock is a leaf.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node.h"

#define STALL_LIMIT_S 5.0 /* no room, nothing in flight, this long: the job fails ENOMEM */
#define ROOM_COPIES 2     /* operand tiles of one step (A, B) the admission keeps room for */

/* Process-wide counts of the tight-heap paths (tess__worker_pressure). */
static _Atomic uint64_t n_flushes, n_flush_ok, n_planned, n_deferred, n_stall_enomem;
/* ... and of dataflow inside a job (ops->awaits): tasks started before a task they await
 * was done, and waits of a step for one. */
static _Atomic uint64_t n_early_starts, n_awaited_steps, n_given_back;

uint64_t tess__rt_early_starts(void) { return atomic_load(&n_early_starts); }
uint64_t tess__rt_awaited_steps(void) { return atomic_load(&n_awaited_steps); }
uint64_t tess__rt_given_back(void) { return atomic_load(&n_given_back); }

void tess__worker_pressure(struct tess__pressure *out) {
    out->flushes = atomic_load(&n_flushes);
    out->flush_retries_ok = atomic_load(&n_flush_ok);
    out->planned_evictions = atomic_load(&n_planned);
    out->deferred = atomic_load(&n_deferred);
    out->stall_enomem = atomic_load(&n_stall_enomem);
}

static void job_fail(struct tess__job *job, int status) {
    int ok = TESS_OK;
    atomic_compare_exchange_strong(&job->status, &ok, status);
}

/* A held tile the job needs was lost with a failed device (TESS_EDEVICE), or a running task
 * writes a tile the job reads (outside the contract of held data: TESS_EINVAL). */
static void held_fail(struct tess__job *job, int rc) {
    if (rc == TESS__ELOST) atomic_store(&job->lost, 1);
    job_fail(job, rc == TESS__ELOST ? TESS_EDEVICE : TESS_EINVAL);
}

/* Finish a task that will not run (its job failed). */
static void task_cancel(struct tess__rt *rt, struct tess__task *t) { tess__task_done(rt, t); }

static bool unified(const struct tess__dev *d) { return d->desc.caps & TESS__CAP_UNIFIED; }

/* How far t is from running all its steps: 0 every task it awaits is done; 1 one is still
 * running; 2 one has not started (went back to the queue when its device failed). One pass
 * over its steps. */
static int await_tier(const struct tess__task *t) {
    const struct tess__job *job = t->job;
    int tier = 0;
    for (int s = 0; s < t->nsteps && tier < 2; s++) {
        const struct tess__task *w = job->ops->awaits(job, t, s);
        int ws = w ? atomic_load(&w->state) : TESS__TASK_DONE;
        if (ws != TESS__TASK_DONE) tier = ws == TESS__TASK_RUNNING ? 1 : 2;
    }
    return tier;
}

/* ---- Eq. 3: priority = sum over k of f(A_ik) + f(B_kj), f = 2 L1, 1 L2, 0 host -------- */

/* Dataflow tiers below Eq. 3: a task awaiting a running task ranks below every task that
 * can run all its steps now (a slot given to it would wait part of the time); one awaiting
 * a task that has not started ranks below every other (its slot would only wait, and be
 * given back, while the awaited task may sit in the same station): activate starts it only
 * when the station is full of such tasks. */
#define PRIO_EARLY (-(1 << 20))
#define PRIO_BLOCKED (-(1 << 30))
#define PRIO_SHIFT 12 /* task.pri counts above any cache-hit score */

static int task_prio(struct tess__task *t, void *arg) {
    struct tess__dev *d = arg;
    struct tess__cache *c = &d->rt->cache;
    int p = 0;
    int tier = t->job->ops->awaits ? await_tier(t) : 0;
    if (tier == 2) return PRIO_BLOCKED;
    if (tier == 1) p = PRIO_EARLY;
    p += (int)t->pri << PRIO_SHIFT;
    if (unified(d)) return p;
    tess__cache_lock(c);
    for (int s = 0; s < t->nsteps; s++) {
        struct tess__step st;
        t->job->ops->step(t->job, t, s, &st);
        p += tess__cache_locality(c, d->id, &st.a.key) + tess__cache_locality(c, d->id, &st.b.key);
    }
    if (t->job->hv_c) {
        /* a held C tile here is not loaded at all: as much as an A and a B tile */
        struct tess__tile ct;
        int64_t ro, co;
        tess__hview_tile(t->job->hv_c, t->row, t->col, &ct, &ro, &co);
        p += 2 * tess__cache_locality(c, d->id, &ct.key);
    }
    tess__cache_unlock(c);
    return p;
}

/* ---- busy time: wall time with at least one step in flight ------------------------ */

static void inflight_add(struct tess__dev *d, int delta) {
    if (d->inflight == 0 && delta > 0) d->busy_since = tess__now();
    d->inflight += delta;
    if (d->inflight == 0 && delta < 0) {
        double busy = tess__now() - d->busy_since;
        TESS__COUNT(&d->ctr, busy_ns, (uint64_t)(busy * 1e9));
        tess__bal_idle(d, busy);
    }
}

/* ---- slots ------------------------------------------------------------------------ */

static bool has_work(const struct tess__dev *d) {
    for (int i = 0; i < d->nstreams; i++)
        if (d->slot[i].t) return true;
    return false;
}

/* Out of room with nothing in flight: true once that has lasted STALL_LIMIT_S (the clock
 * then starts again). */
static bool stall_expired(struct tess__dev *d) {
    double now = tess__now();
    if (!d->stall_since) d->stall_since = now;
    if (now - d->stall_since <= STALL_LIMIT_S) return false;
    d->stall_since = 0;
    return true;
}

/* Nap while out of room: 50 us at first, 1 ms after the first millisecond (what is waited
 * for is a peer's sync point; no core is kept busy). */
static void stall_nap(const struct tess__dev *d) {
    usleep(d->stall_since && tess__now() - d->stall_since > 1e-3 ? 1000 : 50);
}

/* TESSERA_RECOVER: the slot's bounce buffer, one C block (allocated at first use,
 * pinned where tess_malloc_host can; kept until the device closes). false when it cannot
 * be had: the tile is then written back directly. */
static bool bounce_ready(struct tess__slot *sl, size_t bytes) {
    if (sl->rec.bounce && sl->rec.bounce_bytes >= bytes) return true;
    tess_free_host(sl->rec.bounce); /* a job of larger blocks than before */
    sl->rec.bounce = tess_malloc_host(bytes);
    sl->rec.bounce_bytes = sl->rec.bounce ? bytes : 0;
    return sl->rec.bounce != NULL;
}

/* The write-back into the bounce buffer completed: now C gets the tile. */
static void bounce_commit(const struct tess__slot *sl) {
    const struct tess__task *t = sl->t;
    size_t es = tess__dtypes[t->job->dt].size, w = (size_t)t->m * es;
    for (int64_t j = 0; j < t->n; j++) /* non-temporal: C is not read here again */
        tess__copy_nt((char *)t->c + (size_t)j * (size_t)t->job->ldc * es,
                      (const char *)sl->rec.bounce + (size_t)j * w, w);
    tess__copy_nt_fence(); /* before slot.commit = 2 publishes the tile */
}

/* The commit thread of a device (TESSERA_RECOVER): copies completed bounce buffers into C
 * (bounce_commit) off the worker thread, so the worker keeps issuing while a tile lands.
 * The worker posts a slot (commit 0 -> 1) and leaves it alone until commit is 2; the slot's
 * task and bounce buffer do not change meanwhile. mu is a leaf. */
struct tess__commit {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct tess__slot *q[TESS_MAX_STREAMS];
    int n, stop;
};

static void *commit_main(void *arg) {
    struct tess__commit *cm = arg;
    pthread_mutex_lock(&cm->mu);
    for (;;) {
        while (!cm->n && !cm->stop) pthread_cond_wait(&cm->cv, &cm->mu);
        if (!cm->n) break; /* stopped, nothing left */
        struct tess__slot *sl = cm->q[0];
        memmove(cm->q, cm->q + 1, (size_t)--cm->n * sizeof *cm->q);
        pthread_mutex_unlock(&cm->mu);
        bounce_commit(sl);
        atomic_store(&sl->rec.commit, 2);
        pthread_mutex_lock(&cm->mu);
    }
    pthread_mutex_unlock(&cm->mu);
    return NULL;
}

/* Hand the slot's bounce buffer to the commit thread (started at first use); false when
 * there is no thread (it could not be started): the caller copies it itself. */
static bool commit_post(struct tess__dev *d, struct tess__slot *sl) {
    struct tess__commit *cm = d->commit;
    if (!cm) {
        cm = calloc(1, sizeof *cm);
        if (!cm) return false;
        pthread_mutex_init(&cm->mu, NULL);
        pthread_cond_init(&cm->cv, NULL);
        if (pthread_create(&cm->th, NULL, commit_main, cm)) {
            pthread_cond_destroy(&cm->cv);
            pthread_mutex_destroy(&cm->mu);
            free(cm);
            return false;
        }
        d->commit = cm;
    }
    atomic_store(&sl->rec.commit, 1);
    pthread_mutex_lock(&cm->mu);
    cm->q[cm->n++] = sl; /* at most one entry per slot */
    pthread_cond_signal(&cm->cv);
    pthread_mutex_unlock(&cm->mu);
    return true;
}

static void commit_stop(struct tess__dev *d) {
    struct tess__commit *cm = d->commit;
    if (!cm) return;
    pthread_mutex_lock(&cm->mu);
    cm->stop = 1;
    pthread_cond_signal(&cm->cv);
    pthread_mutex_unlock(&cm->mu);
    pthread_join(cm->th, NULL);
    pthread_cond_destroy(&cm->cv);
    pthread_mutex_destroy(&cm->mu);
    free(cm);
    d->commit = NULL;
}

int tess__worker_slots_open(struct tess__dev *d) {
    int rc = TESS_OK;
    for (int s = 0; s < d->nstreams; s++) {
        struct tess__slot *sl = &d->slot[s];
        sl->stream = s;
        bool ok = !d->ops->event_create(d->bd, &sl->out.wb) && !tess__trace_slot_open(d, sl);
        if (s == 0 && !(d->desc.caps & TESS__CAP_UNIFIED))
            ok = !d->ops->event_create(d->bd, &d->wbh_ev) && ok;
        for (int r = 0; r < TESS__DEPTH; r++)
            ok = !d->ops->event_create(d->bd, &sl->ring.done[r]) && ok;
        if (!ok) rc = tess__fail(TESS_EDEVICE, "device %d: cannot create events", d->id);
    }
    return rc;
}

void tess__worker_slots_close(struct tess__dev *d) {
    commit_stop(d);
    for (int s = 0; s < d->nstreams; s++) {
        struct tess__slot *sl = &d->slot[s];
        for (int r = 0; r < TESS__DEPTH; r++)
            if (sl->ring.done[r]) d->ops->event_destroy(d->bd, sl->ring.done[r]);
        if (sl->out.wb) d->ops->event_destroy(d->bd, sl->out.wb);
        tess__trace_slot_close(d, sl);
        tess_free_host(sl->rec.bounce);
    }
    if (d->sync_ev) d->ops->event_destroy(d->bd, d->sync_ev);
    d->sync_ev = NULL;
    free(d->eager);
    d->eager = NULL;
    d->neager = d->eager_cap = 0;
    if (d->wbh_ev) d->ops->event_destroy(d->bd, d->wbh_ev);
    d->wbh_ev = NULL;
}

static void slot_clear(struct tess__dev *d, struct tess__slot *sl) {
    tess__bal_end(d, sl);
    d->committed -= sl->out.committed;
    sl->out.committed = 0;
    sl->t = NULL;
    sl->out.c = NULL;
    sl->ring.next = sl->ring.inflight = 0;
    sl->out.writing_back = sl->rec.bounced = sl->out.cancelled = 0;
    atomic_store(&sl->rec.commit, 0);
    sl->out.c_loaded = 0;
    sl->out.held = 0;
    sl->out.was_dirty = false;
    sl->ring.awaiting = 0;
    if (d->stalled_slot == sl->stream + 1) d->stalled_slot = 0;
}

/* The key of the task's output tile as an operand of later tasks would name it. */
static void out_key(const struct tess__task *t, struct tess__tile_key *key) {
    memset(key, 0, sizeof *key);
    key->space = t->job->space;
    key->addr = (uintptr_t)t->c;
    key->ld = t->job->ldc;
    key->rows = (int32_t)t->m;
    key->cols = (int32_t)t->n;
    key->esize = (uint32_t)tess__dtypes[t->job->dt].size;
}

/* A finished task's held tile is final (task.final): note it for write-behind. */
static void note_final(struct tess__dev *d, const struct tess__tile_key *key) {
    if (!d->rt->cfg.write_behind || d->rt->cfg.hold_check) return;
    if (d->neager == d->eager_cap) {
        int cap = d->eager_cap ? 2 * d->eager_cap : 64;
        struct tess__tile_key *grown = realloc(d->eager, sizeof *grown * (size_t)cap);
        if (!grown) return; /* written back at the sync instead */
        d->eager = grown, d->eager_cap = cap;
    }
    d->eager[d->neager++] = *key;
}

/* An untouched held tile goes back to the directory (a task cancelled or given back
 * before its first step): the fill that brought it here at activation (its stream's
 * first copy, tracked by no event) must have landed first, or a reader on another stream
 * or device, or its write-back, could see the block before it. Whether it did. */
static bool held_fill_landed(struct tess__dev *d, struct tess__slot *sl) {
    tess__event *ev = sl->ring.done[sl->ring.next % TESS__DEPTH]; /* free: nothing in flight */
    return d->ops->event_record(d->bd, sl->stream, ev) == TESS_OK &&
           d->ops->event_sync(d->bd, ev) == TESS_OK;
}

static void slot_finish(struct tess__dev *d, struct tess__slot *sl) {
    struct tess__task *t = sl->t;
    bool dead = atomic_load(&d->failed); /* its copies are about to leave: publish none */
    tess__trace_slot_end(d, sl);
    if (sl->out.held) {
        /* the held tile stays here, dirty; a cancelled task's is put back if untouched */
        if (!sl->out.cancelled) {
            tess__cache_put(&d->rt->cache, d->id, &sl->out.ckey, sl->out.c, true, sl->out.w_r0);
            if (t->final && !dead) note_final(d, &sl->out.ckey);
        } else
            tess__cache_abandon(&d->rt->cache, d->id, &sl->out.ckey, sl->out.c, sl->out.was_dirty,
                                sl->ring.next == 0 && !dead && held_fill_landed(d, sl));
        sl->out.c = NULL;
    } else if (!sl->out.cancelled) {
        /* MESI-X: the tile was written (M) and written back; copies others cached of its
         * old contents are invalid. A published tile stays here as a clean copy (E). */
        struct tess__tile_key key;
        out_key(t, &key);
        bool keep = sl->out.c && t->job->ops->publish && !dead;
        tess__cache_written(&d->rt->cache, d->id, &key, keep ? sl->out.c : NULL);
        if (keep) sl->out.c = NULL;
    }
    if (sl->out.c) tess__cache_free_work(&d->rt->cache, sl->out.c);
    if (!sl->out.cancelled) TESS__COUNT(&d->ctr, tasks, 1);
    int rc = !sl->out.cancelled && !dead && t->job->ops->finished ? t->job->ops->finished(t->job, t)
                                                                  : TESS_OK;
    if (rc) job_fail(t->job, rc);
    slot_clear(d, sl);
    tess__task_done(d->rt, t);
}

/* The device failed. Its tasks go back to the ready pool and run elsewhere, except a task
 * whose C tile may be half written (write-back queued, or computed in place on the CPU
 * worker) while the call needs C's old contents: that job fails (TESS_EDEVICE). Its
 * cached copies leave the directory; jobs that copied an unfinished tile of it fail too
 * (cache poison). The device is left out from now on, with one warning. */
void tess__worker_fail(struct tess__dev *d, int status, const char *what) {
    struct tess__cache *c = &d->rt->cache;
    if (atomic_exchange(&d->failed, 1)) return;
    if (!atomic_exchange(&d->warned, 1))
        tess__log(TESS__LOG_WARN, "device %d (%s) failed during %s: %s; it is left out from now on",
                  d->id, d->desc.name, what, tess_last_error());
    for (int i = 0; i < d->nstreams; i++) {
        struct tess__slot *sl = &d->slot[i];
        if (!sl->t) continue;
        if (atomic_load(&sl->rec.commit)) {
            /* The tile arrived whole in the bounce buffer and is landing in C (or has): the
             * task is done, not redone (C no longer holds its old values). */
            while (atomic_load(&sl->rec.commit) != 2) usleep(50);
            slot_finish(d, sl);
            continue;
        }
        for (int s = sl->ring.next - sl->ring.inflight; s < sl->ring.next; s++)
            for (int h = 0; h < 2; h++) {
                struct tess__blk *b = sl->ring.held[2 * (s % TESS__DEPTH) + h];
                if (b) tess__cache_unacquire(c, b);
            }
        bool held_torn = sl->out.held && sl->out.was_dirty;
        if (sl->out.c && sl->out.held)
            tess__cache_abandon(c, d->id, &sl->out.ckey, sl->out.c, sl->out.was_dirty, false);
        else if (sl->out.c)
            tess__cache_free_work(c, sl->out.c);
        sl->out.c = NULL;
        struct tess__task *t = sl->t;
        /* a write-back into the slot's bounce buffer has not touched C; a held tile whose
         * home was stale had its only current contents here */
        bool torn = sl->out.held ? held_torn
                                 : t->load_c && ((sl->out.writing_back && !sl->rec.bounced) ||
                                                 (unified(d) && sl->ring.next > 0));
        if (held_torn) atomic_store(&t->job->lost, 1);
        sl->ring.inflight = 0;
        slot_clear(d, sl);
        if (torn || atomic_load(&t->job->status) != TESS_OK) {
            if (torn) job_fail(t->job, status);
            task_cancel(d->rt, t);
        } else {
            tess__rt_requeue(d->rt, t); /* redone from its inputs on another device */
        }
    }
    d->inflight = 0;
    tess__worker_behind_end(d, false); /* never known landed */
    d->neager = 0;
    struct tess__task *t;
    while ((t = tess__rs_steal(&d->rs))) tess__rt_requeue(d->rt, t);
    tess__cache_drop_dev(c, d->id);
    pthread_mutex_lock(&d->rt->mu);
    pthread_cond_broadcast(&d->rt->work);
    pthread_mutex_unlock(&d->rt->mu);
    tess__hold_dev_failed(d);
}

/* Sync point: release what completed. Returns 1 if anything did. */
static int reap(struct tess__dev *d) {
    int progress = 0;
    for (int i = 0; i < d->nstreams; i++) {
        struct tess__slot *sl = &d->slot[i];
        if (!sl->t) continue;
        while (sl->ring.inflight > 0) {
            int s = sl->ring.next - sl->ring.inflight;
            int rc = d->ops->event_query(d->bd, sl->ring.done[s % TESS__DEPTH]);
            if (rc == TESS_EAGAIN) break;
            if (rc) {
                tess__worker_fail(d, TESS_EDEVICE, "a tile kernel");
                return 1;
            }
            tess__trace_slot_step(d, sl, s);
            for (int h = 0; h < 2; h++) {
                struct tess__blk **b = &sl->ring.held[2 * (s % TESS__DEPTH) + h];
                if (*b) tess__cache_release(&d->rt->cache, *b);
                *b = NULL;
            }
            tess__bal_step_done(d, sl, s);
            sl->ring.inflight--;
            inflight_add(d, -1);
            progress = 1;
        }
        if (sl->ring.inflight == 0 && sl->out.writing_back) {
            int cs = atomic_load(&sl->rec.commit);
            if (cs == 1) continue; /* landing in C on the commit thread */
            if (cs == 0) {
                int rc = d->ops->event_query(d->bd, sl->out.wb);
                if (rc == TESS_EAGAIN) continue;
                if (rc) {
                    tess__worker_fail(d, TESS_EDEVICE, "a tile write-back");
                    return 1;
                }
                tess__trace_slot_wb(d, sl);
                if (sl->rec.bounced && !sl->out.cancelled) {
                    progress = 1;
                    if (commit_post(d, sl)) continue;
                    bounce_commit(sl);
                }
            }
            slot_finish(d, sl);
            progress = 1;
        } else if (sl->ring.inflight == 0 &&
                   (sl->out.cancelled || (unified(d) && sl->ring.next == sl->t->nsteps))) {
            slot_finish(d, sl);
            progress = 1;
        }
    }
    return progress;
}

/* A station push fails only when the station is full, which a thief giving a stolen task
 * back can cause between a count and the push: the task then goes to the ready pool
 * instead, and so does a task pushed into a failed device's station (after its drain,
 * tess__worker_fail, nothing would take it out again). */
void tess__worker_station_put(struct tess__dev *d, struct tess__task *t) {
    struct tess__rt *rt = d->rt;
    atomic_store(&t->state, TESS__TASK_RESERVED);
    if (!atomic_load(&d->failed) && tess__rs_push(&d->rs, t)) {
        if (!atomic_load(&d->failed)) return;
        /* failed meanwhile: its drain may have run before the push; drain again */
        while ((t = tess__rs_steal(&d->rs))) tess__rt_requeue(rt, t);
    } else {
        tess__rt_requeue(rt, t);
    }
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
}

static int free_slots(const struct tess__dev *d) {
    int n = 0;
    for (int i = 0; i < d->nstreams; i++) n += !d->slot[i].t;
    return n;
}

/* Demand: fill the station from the queue; steal when the queue is dry and a slot idles. */
static int refill(struct tess__dev *d) {
    struct tess__rt *rt = d->rt;
    int progress = 0;
    /* while a call with urgent tasks runs, as many places as the slots kept for them stay
     * free for them: a station full of updates waiting for a busy slot would otherwise hold
     * the next panel's task in the pool while its slot is idle */
    int keep = atomic_load(&rt->crit_live) ? tess__crit_streams(d->nstreams) : 0;
    keep = TESS__MIN(keep, d->rs.cap - 1); /* at least one place for the rest */
    while (tess__rs_count(&d->rs) < d->rs.cap) {
        struct tess__task *t = tess__rt_next_task(rt);
        if (!t) break;
        if (!(t->job->dev_mask & (1u << d->id))) {
            /* this device cannot hold the job's tiles: leave the task to the others */
            tess__rt_requeue(rt, t);
            break;
        }
        if (!t->urgent && tess__rs_count(&d->rs) + keep >= d->rs.cap) {
            tess__rt_requeue(rt, t);
            break;
        }
        tess__worker_station_put(d, t);
        progress = 1;
    }
    if (tess__rs_count(&d->rs) == 0 && free_slots(d) > 0 && tess__rt_pending(rt) == 0) {
        struct tess__dev *victim = NULL;
        int best = 0;
        for (int i = 0; i < rt->ndev; i++) {
            struct tess__dev *o = rt->dev[i];
            if (o == d || atomic_load(&o->failed)) continue;
            int n = tess__rs_count(&o->rs);
            if (n > best) best = n, victim = o;
        }
        struct tess__task *t = victim ? tess__rs_steal(&victim->rs) : NULL;
        if (t) {
            if (!(t->job->dev_mask & (1u << d->id))) {
                tess__worker_station_put(victim, t); /* given back */
            } else {
                tess__worker_station_put(d, t);
                TESS__COUNT(&d->ctr, stolen, 1);
                progress = 1;
            }
        }
    }
    return progress;
}

/* The C block of task t about to run on slot sl, placed by the room plan: with it, two
 * operand tiles of every running task (t included) still fit around the C blocks. */
static int alloc_c(struct tess__dev *d, struct tess__slot *sl, struct tess__task *t) {
    size_t room[TESS_MAX_STREAMS + 1];
    int n = 0;
    for (int i = 0; i < d->nstreams; i++)
        if (d->slot[i].t) room[n++] = d->slot[i].t->job->blk_bytes;
    room[n++] = t->job->blk_bytes;
    bool evicted = false;
    if (t->job->hv_c) {
        /* held C: the held tile itself, taken with its current contents (hold.c) */
        struct tess__tile ct;
        int64_t ro, co;
        bool dirty = false;
        tess__hview_tile(t->job->hv_c, t->row, t->col, &ct, &ro, &co);
        int rc = tess__cache_take(&d->rt->cache, d->id, sl->stream, &ct, t->job->blk_bytes, room, n,
                                  ROOM_COPIES, &sl->out.c, &dirty);
        if (rc) return rc;
        sl->out.held = 1;
        sl->out.was_dirty = dirty;
        sl->out.ckey = ct.key;
        sl->out.c_off = (size_t)(ro + co * sl->out.c->ld) * tess__dtypes[t->job->dt].size;
        sl->out.c_row = ro;
        sl->out.w_r0 = ct.key.rows;
        sl->out.c_loaded = 1;
        return TESS_OK;
    }
    int rc = tess__cache_alloc_planned(&d->rt->cache, d->id, sl->stream, t->job->blk_bytes, room, n,
                                       ROOM_COPIES, &sl->out.c, &evicted);
    if (rc) return rc;
    if (evicted) atomic_fetch_add(&n_planned, 1);
    sl->out.c->ld = t->m;
    return TESS_OK;
}

/* ---- dataflow inside a job (ops->awaits) ----------------------------------------------- */

/* The slot's task awaits a task that went back to the queue (its device failed) and may
 * find no slot while waiters hold them all: give this slot back. Its task is queued again
 * and redone from its inputs, as a failed device's are, once nothing of it is in flight
 * and C still holds its old values; on the CPU worker, which computes C in place, only
 * before its first step (after it, the job fails TESS_EDEVICE: never a wrong result).
 * Returns whether the slot is free now. */
static bool give_back(struct tess__dev *d, struct tess__slot *sl) {
    if (sl->ring.inflight > 0 || sl->out.writing_back) return false;
    struct tess__task *t = sl->t;
    if (unified(d) && sl->ring.next > 0) {
        job_fail(t->job, TESS_EDEVICE);
        sl->out.cancelled = 1;
        return false;
    }
    if (sl->out.c && sl->out.held)
        tess__cache_abandon(&d->rt->cache, d->id, &sl->out.ckey, sl->out.c, sl->out.was_dirty,
                            held_fill_landed(d, sl));
    else if (sl->out.c)
        tess__cache_free_work(&d->rt->cache, sl->out.c);
    slot_clear(d, sl);
    tess__rt_requeue(d->rt, t);
    atomic_fetch_add(&n_given_back, 1);
    return true;
}

/* Whether the slot's next step may be issued as far as ops->awaits goes; *freed when the
 * slot gave its task back (give_back). */
static bool awaited_done(struct tess__dev *d, struct tess__slot *sl, bool *freed) {
    const struct tess__job *job = sl->t->job;
    *freed = false;
    if (!job->ops->awaits) return true;
    const struct tess__task *w = job->ops->awaits(job, sl->t, sl->ring.next);
    int ws = w ? atomic_load(&w->state) : TESS__TASK_DONE;
    if (ws == TESS__TASK_DONE) {
        sl->ring.awaiting = 0;
        return true;
    }
    if (!sl->ring.awaiting) {
        sl->ring.awaiting = 1;
        atomic_fetch_add(&n_awaited_steps, 1);
    }
    if (ws != TESS__TASK_RUNNING) *freed = give_back(d, sl);
    return false;
}

/* Put the best station tasks on free slots, within the heap's admission budget. *deferred:
 * a task was kept back for want of room while this device runs nothing (not counted as
 * progress; wait_for_something naps, and fails its job after STALL_LIMIT_S). */
static int activate(struct tess__dev *d, int *deferred) {
    int progress = 0;
    *deferred = 0;
    for (int i = 0; i < d->nstreams; i++) {
        struct tess__slot *sl = &d->slot[i];
        if (sl->t) continue;
        struct tess__task *t = tess__rs_pop_best(&d->rs, task_prio, d);
        if (!t) break;
        if (atomic_load(&t->job->status) != TESS_OK) {
            task_cancel(d->rt, t);
            progress = 1;
            i--;
            continue;
        }
        if (i < tess__crit_streams(d->nstreams) && !t->urgent && atomic_load(&d->rt->crit_live)) {
            /* the first slots (the highest stream priority) are kept for the critical path */
            tess__worker_station_put(d, t);
            continue;
        }
        if (t->prio == PRIO_BLOCKED && tess__rs_count(&d->rs) + 1 < d->rs.cap) {
            /* every station task awaits one that has not started: while the station has
             * room, refill may still bring that one here; when it is full, start one (it
             * gives its slot back, making room) so that nothing waits for good */
            tess__worker_station_put(d, t);
            break;
        }
        if (tess__bal_defer(d, t, has_work(d))) {
            tess__worker_station_put(d, t); /* the end game: a peer finishes it sooner */
            break;
        }
        size_t need = unified(d) ? 0 : 3 * t->job->blk_bytes;
        if (need && d->committed + need > d->heap_bytes) {
            tess__worker_station_put(d, t); /* no room for another running task now */
            break;
        }
        if (need) {
            int rc = alloc_c(d, sl, t);
            if (rc == TESS_EAGAIN) {
                /* No place keeps room for the running tasks (wait for one to end), or
                 * copies in use lie there (wait for them to be released). */
                atomic_fetch_add(&n_deferred, 1);
                if (!has_work(d)) {
                    *deferred = 1;
                    if (stall_expired(d)) {
                        tess__fail(TESS_ENOMEM, "device %d: no room for the tiles of a task",
                                   d->id);
                        job_fail(t->job, TESS_ENOMEM);
                        atomic_fetch_add(&n_stall_enomem, 1);
                    }
                }
                tess__worker_station_put(d, t);
                break;
            }
            if (rc == TESS__ELOST || rc == TESS__ECONFLICT) {
                held_fail(t->job, rc);
                task_cancel(d->rt, t);
                progress = 1;
                i--;
                continue;
            }
            if (rc) {
                if (rc != TESS_ENOMEM) {
                    tess__worker_station_put(d, t); /* drained with the station below */
                    tess__worker_fail(d, TESS_EDEVICE, "allocating a tile");
                    return 1;
                }
                job_fail(t->job, rc);
                task_cancel(d->rt, t);
                progress = 1;
                i--;
                continue;
            }
        }
        atomic_store(&t->state, TESS__TASK_RUNNING);
        if (t->job->held_deps) {
            uint64_t none = 0; /* when its call began running (cross-call overlap count) */
            atomic_compare_exchange_strong(&t->job->t_first_ns, &none,
                                           (uint64_t)(tess__now() * 1e9));
        }
        if (t->job->ops->awaits) {
            tess__task_release(d->rt, t); /* its successor may start now and wait by step */
            if (await_tier(t)) atomic_fetch_add(&n_early_starts, 1);
        }
        sl->t = t;
        tess__trace_slot_start(sl);
        sl->ring.next = sl->ring.inflight = 0;
        sl->out.committed = need;
        d->committed += need;
        tess__bal_start(d, sl);
        progress = 1;
    }
    return progress;
}

/* Queue step sl->ring.next of the slot's task. TESS_EAGAIN: no room on the device now. */
static int issue_step(struct tess__dev *d, struct tess__slot *sl) {
    struct tess__task *t = sl->t;
    struct tess__job *job = t->job;
    struct tess__cache *c = &d->rt->cache;
    const struct tess__dev_ops *ops = d->ops;
    size_t es = tess__dtypes[job->dt].size;
    int s = sl->ring.next, rc;
    struct tess__step st;
    job->ops->step(job, t, s, &st);

    void *cptr = t->c;
    int64_t cld = job->ldc;
    if (!unified(d) && sl->out.held) {
        cptr = (char *)sl->out.c->ptr + sl->out.c_off;
        cld = sl->out.c->ld;
    } else if (!unified(d)) {
        if (!sl->out.c_loaded) {
            /* the C block was placed at activation (alloc_c) */
            sl->out.c_loaded = 1;
            if (t->load_c) {
                rc = ops->copy2d(d->bd, sl->stream, TESS__H2D, sl->out.c->ptr, (size_t)t->m * es,
                                 t->c, (size_t)job->ldc * es, (size_t)t->m * es, (size_t)t->n,
                                 NULL);
                if (rc) {
                    sl->out.c_loaded = 0;
                    return rc;
                }
                TESS__COUNT(&d->ctr, bytes_h2d, (uint64_t)(t->m * t->n) * es);
                tess__trace_slot_load(d, sl);
            }
        }
        cptr = sl->out.c->ptr;
        cld = sl->out.c->ld;
    }
    char *cout = (char *)cptr; /* the task's output; the kernel's C and B regions in it */
    cptr = cout + (size_t)(st.c_ro + st.c_co * cld) * es;
    struct tess__blk *a = NULL, *b = NULL;
    enum tess__fill fa = TESS__FILL_NONE, fb = TESS__FILL_NONE;
    if (st.nops > 0 && !st.a_dep_only &&
        (rc = tess__cache_acquire(c, d->id, sl->stream, &st.a, job->blk_bytes, &a, &fa)))
        return rc;
    if (st.nops > 1 &&
        (rc = tess__cache_acquire(c, d->id, sl->stream, &st.b, job->blk_bytes, &b, &fb))) {
        tess__cache_unacquire(c, a);
        return rc;
    }
    struct tess__kernel k = {
        .kind = st.kind,
        .dt = job->dt,
        .side = st.side,
        .uplo = st.uplo,
        .ta = st.ta,
        .tb = st.tb,
        .diag = st.diag,
        .m = st.m,
        .n = st.n,
        .k = st.k,
        .alpha = st.alpha,
        .beta = st.beta,
        .A = st.a_in_c ? cout + (ptrdiff_t)(st.a_ro + st.a_co * cld) * (ptrdiff_t)es
             : a       ? (char *)a->ptr + (size_t)(st.a_ro + st.a_co * a->ld) * es
                       : NULL,
        .lda = st.a_in_c ? cld
               : a       ? a->ld
                         : 1,
        .B = st.b_in_c ? cout + (size_t)(st.b_ro + st.b_co * cld) * es
             : b       ? (char *)b->ptr + (size_t)(st.b_ro + st.b_co * b->ld) * es
                       : NULL,
        .ldb = st.b_in_c ? cld
               : b       ? b->ld
                         : 1,
        .C = cptr,
        .ldc = cld,
        .info = st.info,
        .ipiv = st.ipiv,
    };
    if (st.copy_to) /* a copy out of C's region (node.h), in the kernel's place */
        rc = ops->copy2d(d->bd, sl->stream, TESS__D2D, st.copy_to, (size_t)st.copy_ld * es, cptr,
                         (size_t)cld * es, (size_t)st.m * es, (size_t)st.n, NULL);
    else
        rc = ops->kernel(d->bd, sl->stream, &k);
    if (!rc) rc = ops->event_record(d->bd, sl->stream, sl->ring.done[s % TESS__DEPTH]);
    if (rc) {
        if (a) tess__cache_unacquire(c, a);
        if (b) tess__cache_unacquire(c, b);
        return rc;
    }
    if (sl->out.held) sl->out.w_r0 = TESS__MIN(sl->out.w_r0, sl->out.c_row + st.c_ro);
    sl->ring.held[2 * (s % TESS__DEPTH)] = a;
    sl->ring.held[2 * (s % TESS__DEPTH) + 1] = b;
    tess__trace_slot_issue(sl, s, st.kind, fa, fb);
    sl->ring.t_issue[s % TESS__DEPTH] = tess__now();
    sl->ring.next++;
    sl->ring.inflight++;
    inflight_add(d, 1);
    TESS__COUNT(&d->ctr, steps, 1);
    double kflop = tess__step_flops(&st, job->dt) / 1000.0;
    tess__bal_step_issued(sl, s, kflop);
    TESS__COUNT(&d->ctr, flops_x1k, (uint64_t)kflop);
    if (sl->ring.next == t->nsteps && sl->out.held) {
        /* held C stays on the device: the task ends when its last step completes */
        if ((rc = ops->event_record(d->bd, sl->stream, sl->out.wb))) return rc;
        sl->out.writing_back = 1;
    } else if (sl->ring.next == t->nsteps && !unified(d)) {
        /* Written back once, after the last k step, on the same stream; with
         * TESSERA_RECOVER a tile whose old values the call needs goes to the slot's
         * bounce buffer first (bounce_commit copies it into C once it has all arrived). */
        void *dst = t->c;
        size_t dpitch = (size_t)job->ldc * es;
        if (t->load_c && d->rt->cfg.recover && bounce_ready(sl, job->blk_bytes)) {
            dst = sl->rec.bounce;
            dpitch = (size_t)t->m * es;
            sl->rec.bounced = 1;
        }
        rc = ops->copy2d(d->bd, sl->stream, TESS__D2H, dst, dpitch, sl->out.c->ptr,
                         (size_t)sl->out.c->ld * es, (size_t)t->m * es, (size_t)t->n, NULL);
        if (!rc) rc = ops->event_record(d->bd, sl->stream, sl->out.wb);
        if (rc) return rc;
        sl->out.writing_back = 1;
        TESS__COUNT(&d->ctr, bytes_d2h, (uint64_t)(t->m * t->n) * es);
    }
    return TESS_OK;
}

/* Interleave the slots k step by k step. Returns progress; *stalled when out of room,
 * *waiting when a slot's next step waits for its operands to arrive (ops->ready). */
static int issue(struct tess__dev *d, int *stalled, int *waiting) {
    int progress = 0, any;
    *stalled = *waiting = 0;
    do {
        any = 0;
        /* a slot stalled for room goes first, and nothing is issued after it (it drains) */
        int first = d->stalled_slot ? d->stalled_slot - 1 : 0;
        for (int j = 0; j < d->nstreams; j++) {
            int i = (first + j) % d->nstreams;
            struct tess__slot *sl = &d->slot[i];
            if (!sl->t || sl->out.cancelled || sl->ring.next >= sl->t->nsteps ||
                sl->ring.inflight >= TESS__DEPTH)
                continue;
            if (atomic_load(&sl->t->job->status) != TESS_OK) {
                sl->out.cancelled = 1; /* its job failed elsewhere: stop, write nothing back */
                continue;
            }
            const struct tess__job *job = sl->t->job;
            if (job->ops->ready && !job->ops->ready(job, sl->t, sl->ring.next)) {
                *waiting = 1;
                continue;
            }
            bool freed;
            if (!awaited_done(d, sl, &freed)) {
                if (freed)
                    progress = 1;
                else
                    *waiting = 1;
                continue;
            }
            int rc = issue_step(d, sl);
            if (rc == TESS_EAGAIN && d->inflight == 0 && !unified(d)) {
                /* Nothing of ours in flight: every copy this device's steps used is idle,
                 * this step's own included (one placed where the other cannot fit). Evict
                 * them all and try again: the admission kept room for this task's operand
                 * tiles around the C blocks. A copy this attempt has just filled is
                 * evictable only once its fill has landed: wait for the slot's stream
                 * first (blocking; the done event of the step not issued yet is free). */
                tess__event *ev = sl->ring.done[sl->ring.next % TESS__DEPTH];
                if (d->ops->event_record(d->bd, sl->stream, ev) == TESS_OK)
                    (void)d->ops->event_sync(d->bd, ev);
                int queued;
                tess__cache_flush_dev(&d->rt->cache, d->id, sl->stream, &queued);
                if (queued && d->ops->event_record(d->bd, sl->stream, ev) == TESS_OK) {
                    /* last copies of dirty held tiles were written back instead: once
                     * they landed, they leave too */
                    (void)d->ops->event_sync(d->bd, ev);
                    tess__cache_flush_dev(&d->rt->cache, d->id, sl->stream, &queued);
                }
                atomic_fetch_add(&n_flushes, 1);
                rc = issue_step(d, sl);
                if (rc == TESS_OK) atomic_fetch_add(&n_flush_ok, 1);
            }
            if (rc == TESS_EAGAIN) {
                d->stalled_slot = i + 1;
                *stalled = 1;
                return progress;
            }
            if (d->stalled_slot == i + 1) d->stalled_slot = 0;
            if (rc == TESS_ENOMEM || rc == TESS__ELOST || rc == TESS__ECONFLICT) {
                if (rc == TESS_ENOMEM)
                    job_fail(sl->t->job, rc);
                else
                    held_fail(sl->t->job, rc);
                sl->out.cancelled = 1;
                continue;
            }
            if (rc) {
                tess__worker_fail(d, TESS_EDEVICE, "queueing a tile step");
                return 1;
            }
            any = progress = 1;
        }
    } while (any);
    return progress;
}

/* Write-behind (TESSERA_WRITE_BEHIND): one held tile at a time on the device's write-back
 * stream, so a later sync finds little left: the least recently used idle dirty one, looked
 * for at most every millisecond. Returns progress (one landed). */
void tess__worker_behind_end(struct tess__dev *d, bool landed) {
    for (int i = 0; i < d->nwbh; i++) tess__cache_behind_done(&d->rt->cache, d->wbh[i], landed);
    d->nwbh = 0;
}

static int write_behind(struct tess__dev *d) {
    /* off under TESSERA_HOLD_CHECK: its checks compare host tiles nothing writes meanwhile */
    if (unified(d) || !d->rt->cfg.write_behind || d->rt->cfg.hold_check || !d->wbh_ev) return 0;
    struct tess__cache *c = &d->rt->cache;
    if (d->nwbh) {
        int rc = d->ops->event_query(d->bd, d->wbh_ev);
        if (rc == TESS_EAGAIN) return 0;
        tess__worker_behind_end(d, rc == TESS_OK);
        if (rc) tess__worker_fail(d, TESS_EDEVICE, "writing a held tile behind");
        return 1;
    }
    /* final tiles first, oldest first, a batch at a time; else one idle tile, looked for
     * at most every millisecond */
    int taken = 0;
    while (taken < d->neager && d->nwbh < TESS__WBH_MAX) {
        struct tess__blk *b = tess__cache_behind(c, d->id, d->wb_stream, &d->eager[taken++]);
        if (b) d->wbh[d->nwbh++] = b;
    }
    if (taken) {
        memmove(d->eager, d->eager + taken, sizeof *d->eager * (size_t)(d->neager - taken));
        d->neager -= taken;
    }
    double now = tess__now();
    if (!d->nwbh && tess__holds_any() && now - d->wbh_scan >= 1e-3) {
        d->wbh_scan = now;
        struct tess__blk *b = tess__cache_behind(c, d->id, d->wb_stream, NULL);
        if (b) d->wbh[d->nwbh++] = b;
    }
    if (!d->nwbh) return 0;
    if (d->ops->event_record(d->bd, d->wb_stream, d->wbh_ev)) {
        tess__worker_behind_end(d, false);
        tess__worker_fail(d, TESS_EDEVICE, "writing a held tile behind");
        return 1;
    }
    return 0;
}

/* A GPU worker with steps in flight and nothing else to do: poll the events evs[0..n)
 * (each slot's oldest step or pending write-back) until one completes, TESSERA_SPIN_US
 * back to back, then with a nap between rounds. Never a blocking wait on one of them: a
 * long update's step would hide a short critical-path task finishing on another stream
 * (a factorization's panel waits for that), for as long as the update runs. A failed
 * query leaves the blocking wait to report it. */
static void poll_events(struct tess__dev *d, tess__event *const *evs, int n) {
    enum { NAP_US = 30 };
    double until = tess__now() + d->rt->cfg.spin_us * 1e-6;
    for (bool spin = true;; spin = spin && tess__now() < until) {
        for (int i = 0; i < n; i++) {
            int rc = d->ops->event_query(d->bd, evs[i]);
            if (rc == TESS_OK) return;
            if (rc != TESS_EAGAIN) {
                if (d->ops->event_sync(d->bd, evs[i]))
                    tess__worker_fail(d, TESS_EDEVICE, "a tile step");
                return;
            }
        }
        if (!spin) usleep(NAP_US);
    }
}

/* Nothing moved: wait for a pending event (GPUs: poll_events), or nap until work arrives. */
static void wait_for_something(struct tess__dev *d, int stalled, int waiting, int deferred) {
    /* Emulated devices block on the event queued first among each slot's oldest step and
     * pending write-back: the device drains its copies and kernels roughly in the order
     * they were queued, so that one is reached first, and reap() then collects every other
     * slot's progress. (Blocking on the lowest slot's event instead could leave the
     * streams that finished before it idle.) */
    tess__event *ev = NULL, *evs[TESS_MAX_STREAMS];
    int nev = 0;
    double first = 0;
    for (int i = 0; i < d->nstreams; i++) {
        struct tess__slot *sl = &d->slot[i];
        if (!sl->t) continue;
        tess__event *e = NULL;
        double t = 0;
        if (sl->ring.inflight > 0) {
            int s = sl->ring.next - sl->ring.inflight;
            e = sl->ring.done[s % TESS__DEPTH], t = sl->ring.t_issue[s % TESS__DEPTH];
        } else if (sl->out.writing_back && atomic_load(&sl->rec.commit) == 1) {
            waiting = 1; /* landing */
        } else if (sl->out.writing_back) {
            e = sl->out.wb,
            t = sl->ring.t_issue[(sl->ring.next - 1) % TESS__DEPTH]; /* queued with the last step */
        }
        if (e && nev < TESS_MAX_STREAMS) evs[nev++] = e;
        if (e && (!ev || t < first)) ev = e, first = t;
    }
    if (ev) {
        d->stall_since = 0;
        if (d->desc.kind == TESS_DEV_CUDA) {
            poll_events(d, evs, nev);
            return;
        }
        if (d->ops->event_sync(d->bd, ev)) tess__worker_fail(d, TESS_EDEVICE, "a tile step");
        return;
    }
    if (waiting) {
        usleep(100); /* operands arriving (streamed panels): look again soon */
        return;
    }
    if (deferred) {
        stall_nap(d); /* a task waits for room that copies still read by peers hold */
        return;
    }
    if (stalled) {
        /* Out of room with nothing of ours in flight, after evicting every idle copy:
         * peers still read some of our copies (a P2P fill in flight; they release them at
         * their next sync point). Never wait forever. */
        if (stall_expired(d)) {
            for (int i = 0; i < d->nstreams; i++)
                if (d->slot[i].t) {
                    tess__fail(TESS_ENOMEM, "device %d: no room for the tiles of a task", d->id);
                    job_fail(d->slot[i].t->job, TESS_ENOMEM);
                    atomic_fetch_add(&n_stall_enomem, 1);
                    d->slot[i].out.cancelled = 1;
                }
        }
        stall_nap(d);
        return;
    }
    /* Idle: while another station holds tasks, look again in 1 ms (to steal), as while our
     * own holds tasks left for a faster peer (the end game); otherwise sleep until a job is
     * queued (broadcast), checking every 100 ms regardless. */
    struct tess__rt *rt = d->rt;
    long wait_ns = tess__rs_count(&d->rs) ? 1000000 : 100000000;
    for (int i = 0; i < rt->ndev; i++)
        if (rt->dev[i] != d && !atomic_load(&rt->dev[i]->failed) && tess__rs_count(&rt->dev[i]->rs))
            wait_ns = 1000000;
    pthread_mutex_lock(&rt->mu);
    if (!atomic_load(&rt->shutdown) && tess__rt_pending(rt) == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += wait_ns;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&rt->work, &rt->mu, &ts);
    }
    pthread_mutex_unlock(&rt->mu);
}

/* TESSERA_PIN: the worker takes one core of the cores it was started with (the process's
 * binding, inherited), the (local rank x devices + device index)-th, so it never leaves a
 * binding that mpirun or Slurm set, and ranks of one node left unbound spread out. */
static void pin_self(const struct tess__dev *d) {
    cpu_set_t allowed, set;
    if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed)) return;
    int n = CPU_COUNT(&allowed);
    if (n < 2) return;
    int idx = (int)((tess__launch_rank(1) * d->rt->ndev + d->id) % n);
    for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && seen++ == idx) {
            CPU_ZERO(&set);
            CPU_SET(c, &set);
            pthread_setaffinity_np(pthread_self(), sizeof set, &set);
            return;
        }
}

void *tess__worker_main(void *arg) {
    struct tess__dev *d = arg;
    struct tess__rt *rt = d->rt;
    if (rt->cfg.pin_threads && !unified(d)) pin_self(d);
    for (;;) {
        if (atomic_load(&d->failed)) {
            if (atomic_load(&rt->shutdown)) break;
            pthread_mutex_lock(&rt->mu);
            if (!atomic_load(&rt->shutdown)) pthread_cond_wait(&rt->work, &rt->mu);
            pthread_mutex_unlock(&rt->mu);
            continue;
        }
        int stalled = 0, waiting = 0, deferred = 0, progress = reap(d);
        if (atomic_load(&d->failed)) continue;
        progress |= tess__hold_serve(d);
        if (atomic_load(&d->failed)) continue; /* reap found the device dead: take nothing more */
        if (atomic_load(&rt->shutdown) && !has_work(d) && tess__rs_count(&d->rs) == 0 &&
            tess__rt_pending(rt) == 0)
            break;
        progress |= refill(d);
        progress |= activate(d, &deferred);
        if (atomic_load(&d->failed)) continue;
        progress |= issue(d, &stalled, &waiting);
        if (atomic_load(&d->failed)) continue;
        progress |= write_behind(d);
        if (atomic_load(&d->failed)) continue;
        if (!stalled && !deferred) d->stall_since = 0;
        if (!progress) wait_for_something(d, stalled, waiting, deferred);
    }
    return NULL;
}
