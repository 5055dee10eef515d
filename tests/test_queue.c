/* tests/test_queue.c: the bounded MPMC queue (node/queue.c): FIFO order, full and empty,
 * capacity checks, and many producers and consumers losing or duplicating nothing.
 */
#include <pthread.h>
#include <sched.h>

#include "harness.h"
#include "../node/node.h"

static void *item(uintptr_t v) { return (void *)v; }

/* One thread: items come out in the order they went in, across many wrap-arounds. */
TEST(queue_fifo_single_thread) {
    struct tess__queue *q = tess__queue_create(8);
    ASSERT(q);
    uintptr_t next_in = 1, next_out = 1;
    unsigned seed = 5;
    for (int round = 0; round < 2000; round++) {
        int pushes = rand_r(&seed) % 6, pops = rand_r(&seed) % 6;
        for (int i = 0; i < pushes; i++)
            if (tess__queue_push(q, item(next_in))) next_in++;
        for (int i = 0; i < pops; i++) {
            void *v;
            if (!tess__queue_pop(q, &v)) {
                ASSERT_EQ(next_out, next_in); /* empty only when all were taken */
                break;
            }
            ASSERT_EQ((uintptr_t)v, next_out);
            next_out++;
        }
        ASSERT_EQ(tess__queue_size(q), next_in - next_out);
    }
    ASSERT_GT(next_out, 1000);
    tess__queue_destroy(q);
}

/* A full queue refuses a push, an empty one a pop, and NULL items pass through. */
TEST(queue_full_empty) {
    struct tess__queue *q = tess__queue_create(4);
    void *v = item(99);
    ASSERT(!tess__queue_pop(q, &v));
    ASSERT(v == item(99)); /* untouched on failure */
    ASSERT_EQ(tess__queue_size(q), 0);
    for (uintptr_t i = 1; i <= 4; i++) ASSERT(tess__queue_push(q, item(i)));
    ASSERT_EQ(tess__queue_size(q), 4);
    ASSERT(!tess__queue_push(q, item(5)));
    ASSERT(!tess__queue_push(q, item(6)));
    ASSERT(tess__queue_pop(q, &v));
    ASSERT(v == item(1));
    ASSERT(tess__queue_push(q, NULL)); /* room again after one pop */
    ASSERT(!tess__queue_push(q, item(7)));
    for (uintptr_t i = 2; i <= 4; i++) {
        ASSERT(tess__queue_pop(q, &v));
        ASSERT(v == item(i));
    }
    ASSERT(tess__queue_pop(q, &v));
    ASSERT(v == NULL);
    ASSERT(!tess__queue_pop(q, &v));
    ASSERT_EQ(tess__queue_size(q), 0);
    tess__queue_destroy(q);
}

/* Capacities that are not a power of two (or below 2) are refused. */
TEST(queue_capacity_checked) {
    ASSERT(tess__queue_create(0) == NULL);
    ASSERT(tess__queue_create(1) == NULL);
    ASSERT(tess__queue_create(3) == NULL);
    ASSERT(tess__queue_create(1000) == NULL);
    ASSERT(tess__queue_create(SIZE_MAX) == NULL);
    struct tess__queue *q = tess__queue_create(2);
    ASSERT(q);
    ASSERT(tess__queue_push(q, item(1)) && tess__queue_push(q, item(2)));
    ASSERT(!tess__queue_push(q, item(3)));
    tess__queue_destroy(q);
    q = tess__queue_create(1024);
    ASSERT(q);
    tess__queue_destroy(q);
}

enum { NPROD = 4, NCONS = 4, PER_PROD = 250000, TOTAL = NPROD * PER_PROD };

struct mpmc {
    struct tess__queue *q;
    _Atomic unsigned char *seen; /* TOTAL counters */
    _Atomic long consumed;
    _Atomic int order_bad;
};

struct prod_arg {
    struct mpmc *m;
    int id;
};

static void *producer(void *p) {
    struct prod_arg *a = p;
    for (uintptr_t i = 0; i < PER_PROD; i++) {
        /* item = 1 + global index; global index = id * PER_PROD + i */
        void *v = item(1 + (uintptr_t)a->id * PER_PROD + i);
        while (!tess__queue_push(a->m->q, v)) sched_yield();
    }
    return NULL;
}

static void *consumer(void *p) {
    struct mpmc *m = p;
    long last[NPROD]; /* per producer: last index seen here */
    for (int i = 0; i < NPROD; i++) last[i] = -1;
    while (atomic_load(&m->consumed) < TOTAL) {
        void *v;
        if (!tess__queue_pop(m->q, &v)) {
            sched_yield();
            continue;
        }
        uintptr_t g = (uintptr_t)v - 1;
        if (g >= TOTAL) {
            atomic_store(&m->order_bad, 1);
            continue;
        }
        atomic_fetch_add(&m->seen[g], 1);
        /* FIFO: one consumer sees each producer's items in the order they were pushed */
        int pr = (int)(g / PER_PROD);
        long idx = (long)(g % PER_PROD);
        if (idx <= last[pr]) atomic_store(&m->order_bad, 1);
        last[pr] = idx;
        atomic_fetch_add(&m->consumed, 1);
    }
    return NULL;
}

/* 4 producers and 4 consumers move 1,000,000 items through a small queue; every item is
 * seen exactly once and each producer's items keep their order. */
TEST(queue_mpmc_exactly_once) {
    struct mpmc m = {0};
    m.q = tess__queue_create(1024);
    m.seen = calloc(TOTAL, sizeof *m.seen);
    ASSERT(m.q && m.seen);
    pthread_t pt[NPROD], ct[NCONS];
    struct prod_arg pa[NPROD];
    for (int i = 0; i < NCONS; i++) ASSERT_EQ(pthread_create(&ct[i], NULL, consumer, &m), 0);
    for (int i = 0; i < NPROD; i++) {
        pa[i] = (struct prod_arg){&m, i};
        ASSERT_EQ(pthread_create(&pt[i], NULL, producer, &pa[i]), 0);
    }
    for (int i = 0; i < NPROD; i++) pthread_join(pt[i], NULL);
    for (int i = 0; i < NCONS; i++) pthread_join(ct[i], NULL);
    ASSERT_EQ(atomic_load(&m.consumed), TOTAL);
    ASSERT_EQ(atomic_load(&m.order_bad), 0);
    long missing = 0, dup = 0;
    for (long i = 0; i < TOTAL; i++) {
        unsigned c = atomic_load(&m.seen[i]);
        missing += c == 0;
        dup += c > 1;
    }
    ASSERT_EQ(missing, 0);
    ASSERT_EQ(dup, 0);
    void *v;
    ASSERT(!tess__queue_pop(m.q, &v));
    free((void *)m.seen);
    tess__queue_destroy(m.q);
}

TEST_MAIN()
