/* tests/test_rs.c: the reservation station (node/rs.c): priority order, ties, stealing,
 * capacity, and concurrent owners and thieves losing or duplicating no task; a worker's
 * push into a full or failed device's station (tess__worker_station_put) losing no task.
 */
#include <pthread.h>
#include <sched.h>

#include "harness.h"
#include "../node/node.h"

/* Priority = the task's i field plus an offset table indexed by j (set per test). */
static int prio_of_i(struct tess__task *t, void *arg) {
    const int *bonus = arg;
    return t->i + (bonus ? bonus[t->j] : 0);
}

static void tasks_init(struct tess__task *t, int n, const int *prio) {
    memset(t, 0, (size_t)n * sizeof *t);
    for (int k = 0; k < n; k++) {
        t[k].i = prio ? prio[k] : 0;
        t[k].j = k; /* identity */
    }
}

/* pop_best returns tasks in decreasing priority and stores the computed prio. */
TEST(rs_priority_order) {
    struct tess__rs rs;
    ASSERT_OK(tess__rs_init(&rs, 8));
    struct tess__task t[5];
    tasks_init(t, 5, (int[]){3, 9, 1, 7, 5});
    for (int k = 0; k < 5; k++) ASSERT(tess__rs_push(&rs, &t[k]));
    ASSERT_EQ(tess__rs_count(&rs), 5);
    int want[5] = {1, 3, 4, 0, 2};
    for (int k = 0; k < 5; k++) {
        struct tess__task *x = tess__rs_pop_best(&rs, prio_of_i, NULL);
        ASSERT(x == &t[want[k]]);
        ASSERT_EQ(x->prio, x->i);
    }
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, NULL) == NULL);
    ASSERT_EQ(tess__rs_count(&rs), 0);
    tess__rs_destroy(&rs);
}

/* Priorities are recomputed on every pop: a change in the callback's answer reorders. */
TEST(rs_priority_recomputed) {
    struct tess__rs rs;
    ASSERT_OK(tess__rs_init(&rs, 4));
    struct tess__task t[3];
    tasks_init(t, 3, (int[]){1, 2, 3});
    for (int k = 0; k < 3; k++) tess__rs_push(&rs, &t[k]);
    int bonus[3] = {10, 0, 0}; /* task 0 now ranks 11 */
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, bonus) == &t[0]);
    ASSERT_EQ(t[1].prio, 2);
    ASSERT_EQ(t[2].prio, 3);
    bonus[1] = 5; /* task 1 now ranks 7 */
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, bonus) == &t[1]);
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, bonus) == &t[2]);
    tess__rs_destroy(&rs);
}

/* Equal priorities come out oldest first; a task pushed again counts as the newest. */
TEST(rs_ties_oldest_first) {
    struct tess__rs rs;
    ASSERT_OK(tess__rs_init(&rs, 8));
    struct tess__task t[6];
    tasks_init(t, 6, (int[]){4, 4, 8, 4, 8, 4});
    for (int k = 0; k < 6; k++) tess__rs_push(&rs, &t[k]);
    int want[6] = {2, 4, 0, 1, 3, 5};
    for (int k = 0; k < 6; k++) {
        struct tess__task *x = tess__rs_pop_best(&rs, prio_of_i, NULL);
        ASSERT_MSG(x == &t[want[k]], "pop %d: got task %d, want %d", k, x ? x->j : -1, want[k]);
    }
    /* order is kept across a removal from the middle and a re-push */
    for (int k = 0; k < 4; k++) tess__rs_push(&rs, &t[k]); /* prios 4 4 8 4 */
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, NULL) == &t[2]);
    tess__rs_push(&rs, &t[2]);
    t[2].i = 4; /* all equal now: 0 1 3 2 */
    int want2[4] = {0, 1, 3, 2};
    for (int k = 0; k < 4; k++) ASSERT(tess__rs_pop_best(&rs, prio_of_i, NULL) == &t[want2[k]]);
    tess__rs_destroy(&rs);
}

/* steal takes the lowest stored priority (ties: the newest) and leaves the rest in order. */
TEST(rs_steal_lowest) {
    struct tess__rs rs;
    ASSERT_OK(tess__rs_init(&rs, 8));
    ASSERT(tess__rs_steal(&rs) == NULL);
    struct tess__task t[6];
    tasks_init(t, 6, NULL);
    int p[6] = {5, 1, 7, 1, 3, 1};
    for (int k = 0; k < 6; k++) {
        t[k].prio = p[k];
        tess__rs_push(&rs, &t[k]);
    }
    ASSERT(tess__rs_steal(&rs) == &t[5]); /* prio 1, newest of three */
    ASSERT(tess__rs_steal(&rs) == &t[3]);
    ASSERT(tess__rs_steal(&rs) == &t[1]);
    ASSERT(tess__rs_steal(&rs) == &t[4]); /* prio 3 */
    ASSERT_EQ(tess__rs_count(&rs), 2);
    /* remaining: t0 (5), t2 (7) in that order; with a NULL callback stored prios rule */
    ASSERT(tess__rs_pop_best(&rs, NULL, NULL) == &t[2]);
    ASSERT(tess__rs_steal(&rs) == &t[0]);
    ASSERT(tess__rs_steal(&rs) == NULL);
    /* steal uses the prio stored by the owner's last pop_best */
    tasks_init(t, 3, (int[]){2, 6, 4});
    for (int k = 0; k < 3; k++) tess__rs_push(&rs, &t[k]);
    ASSERT(tess__rs_pop_best(&rs, prio_of_i, NULL) == &t[1]);
    ASSERT(tess__rs_steal(&rs) == &t[0]);
    tess__rs_destroy(&rs);
}

/* A full station refuses a push; a removal makes room; bad capacities are refused. */
TEST(rs_full) {
    struct tess__rs rs;
    ASSERT(tess__rs_init(&rs, 0) != TESS_OK);
    ASSERT_OK(tess__rs_init(&rs, 3));
    struct tess__task t[5];
    tasks_init(t, 5, NULL);
    for (int k = 0; k < 3; k++) ASSERT(tess__rs_push(&rs, &t[k]));
    ASSERT(!tess__rs_push(&rs, &t[3]));
    ASSERT_EQ(tess__rs_count(&rs), 3);
    ASSERT(tess__rs_steal(&rs) != NULL);
    ASSERT(tess__rs_push(&rs, &t[3]));
    ASSERT(!tess__rs_push(&rs, &t[4]));
    ASSERT_EQ(tess__rs_count(&rs), 3);
    tess__rs_destroy(&rs);
}

/* The worker's station push: into the station while it has room; a full station (a thief
 * gave a task back meanwhile) or a failed device's sends the task to the ready pool,
 * QUEUED, where the next pull finds it. */
TEST(station_put_full_goes_to_the_pool) {
    struct tess__rt *rt = calloc(1, sizeof *rt);
    struct tess__dev *d = calloc(1, sizeof *d);
    ASSERT(rt && d);
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->work, NULL);
    pthread_mutex_init(&rt->overflow_mu, NULL);
    rt->q = tess__queue_create(4);
    ASSERT(rt->q != NULL);
    d->rt = rt;
    ASSERT_OK(tess__rs_init(&d->rs, 1));
    struct tess__task t[3];
    tasks_init(t, 3, NULL);
    tess__worker_station_put(d, &t[0]);
    ASSERT_EQ(tess__rs_count(&d->rs), 1);
    ASSERT_EQ(atomic_load(&t[0].state), TESS__TASK_RESERVED);
    ASSERT(tess__rt_next_task(rt) == NULL);
    tess__worker_station_put(d, &t[1]); /* full */
    ASSERT_EQ(tess__rs_count(&d->rs), 1);
    ASSERT_EQ(atomic_load(&t[1].state), TESS__TASK_QUEUED);
    ASSERT(tess__rt_next_task(rt) == &t[1]);
    ASSERT(tess__rs_steal(&d->rs) == &t[0]);
    atomic_store(&d->failed, 1); /* room, but nobody takes it out of a failed station */
    tess__worker_station_put(d, &t[2]);
    ASSERT_EQ(tess__rs_count(&d->rs), 0);
    ASSERT_EQ(atomic_load(&t[2].state), TESS__TASK_QUEUED);
    ASSERT(tess__rt_next_task(rt) == &t[2]);
    ASSERT(tess__rt_next_task(rt) == NULL);
    tess__rs_destroy(&d->rs);
    tess__queue_destroy(rt->q);
    pthread_mutex_destroy(&rt->overflow_mu);
    pthread_cond_destroy(&rt->work);
    pthread_mutex_destroy(&rt->mu);
    free(rt->overflow);
    free(d);
    free(rt);
}

enum { NT = 100000, NPUSH = 2, NOWN = 2, NTHIEF = 2 };

struct conc {
    struct tess__rs rs;
    struct tess__task *t;
    _Atomic unsigned char *seen;
    _Atomic int taken;
    _Atomic int next; /* next task to push */
};

static int prio_hash(struct tess__task *t, void *arg) {
    (void)arg;
    return (int)(((unsigned)t->j * 2654435761u) >> 28); /* 0..15, many ties */
}

static void *pusher(void *p) {
    struct conc *c = p;
    for (;;) {
        int k = atomic_fetch_add(&c->next, 1);
        if (k >= NT) return NULL;
        while (!tess__rs_push(&c->rs, &c->t[k])) sched_yield();
    }
}

static void *owner(void *p) {
    struct conc *c = p;
    while (atomic_load(&c->taken) < NT) {
        struct tess__task *x = tess__rs_pop_best(&c->rs, prio_hash, NULL);
        if (!x) {
            sched_yield();
            continue;
        }
        atomic_fetch_add(&c->seen[x->j], 1);
        atomic_fetch_add(&c->taken, 1);
    }
    return NULL;
}

static void *thief(void *p) {
    struct conc *c = p;
    while (atomic_load(&c->taken) < NT) {
        struct tess__task *x = tess__rs_steal(&c->rs);
        if (!x) {
            sched_yield();
            continue;
        }
        atomic_fetch_add(&c->seen[x->j], 1);
        atomic_fetch_add(&c->taken, 1);
    }
    return NULL;
}

/* Pushers, owners (pop_best) and thieves (steal) at once: every task comes out once. */
TEST(rs_concurrent_no_loss) {
    struct conc c;
    ASSERT_OK(tess__rs_init(&c.rs, 32));
    c.t = calloc(NT, sizeof *c.t);
    c.seen = calloc(NT, sizeof *c.seen);
    ASSERT(c.t && c.seen);
    for (int k = 0; k < NT; k++) c.t[k].j = k;
    atomic_init(&c.taken, 0);
    atomic_init(&c.next, 0);
    pthread_t th[NPUSH + NOWN + NTHIEF];
    int n = 0;
    for (int i = 0; i < NOWN; i++) ASSERT_EQ(pthread_create(&th[n++], NULL, owner, &c), 0);
    for (int i = 0; i < NTHIEF; i++) ASSERT_EQ(pthread_create(&th[n++], NULL, thief, &c), 0);
    for (int i = 0; i < NPUSH; i++) ASSERT_EQ(pthread_create(&th[n++], NULL, pusher, &c), 0);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    ASSERT_EQ(atomic_load(&c.taken), NT);
    ASSERT_EQ(tess__rs_count(&c.rs), 0);
    for (int k = 0; k < NT; k++)
        ASSERT_MSG(atomic_load(&c.seen[k]) == 1, "task %d seen %d times", k,
                   (int)atomic_load(&c.seen[k]));
    free((void *)c.seen);
    free(c.t);
    tess__rs_destroy(&c.rs);
}

TEST_MAIN()
