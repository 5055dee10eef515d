/* node/queue.c: the bounded lock-free MPMC queue of task pointers (D. Vyukov's array
 * queue) that feeds every worker.
 * Owns the ring and the positions; does not own the items (task pointers are the job's).
 * No lock: producers and consumers claim positions by CAS.
 *
 * Each cell carries a sequence number. Cell i starts with seq = i. A producer at position
 * pos may write cell pos & mask when seq == pos, and publishes it with seq = pos + 1; a
 * consumer at pos may read it when seq == pos + 1, and frees it for the producer of the
 * next lap with seq = pos + capacity. seq below those values means full (producer) or
 * empty (consumer); above means another thread got there first, so reload the position.
 * Positions only grow (a 64-bit size_t does not wrap in practice), hence no ABA.
 * The seq store is a release and its load an acquire, which orders the plain data field.
 */
#include <stdlib.h>

#include "node.h"

#define CACHE_LINE 64

struct cell {
    _Atomic size_t seq;
    void *data;
};

struct tess__queue {
    _Alignas(CACHE_LINE) struct cell *buf;   /* read-only after create */
    size_t mask;                             /* capacity - 1 */
    _Alignas(CACHE_LINE) _Atomic size_t enq; /* next position to push (own line) */
    _Alignas(CACHE_LINE) _Atomic size_t deq; /* next position to pop (own line: the
                                                 * struct's size is a multiple of 64) */
};

/* capacity must be a power of two and at least 2 (with one cell a full cell and an empty
 * one carry the same sequence number); NULL otherwise or when out of memory. */
struct tess__queue *tess__queue_create(size_t capacity_pow2) {
    size_t cap = capacity_pow2;
    if (cap < 2 || (cap & (cap - 1)) != 0 || cap > SIZE_MAX / sizeof(struct cell)) return NULL;
    struct tess__queue *q = aligned_alloc(CACHE_LINE, sizeof *q);
    if (!q) return NULL;
    q->buf = malloc(cap * sizeof *q->buf);
    if (!q->buf) {
        free(q);
        return NULL;
    }
    for (size_t i = 0; i < cap; i++) {
        atomic_init(&q->buf[i].seq, i);
        q->buf[i].data = NULL;
    }
    q->mask = cap - 1;
    atomic_init(&q->enq, 0);
    atomic_init(&q->deq, 0);
    return q;
}

void tess__queue_destroy(struct tess__queue *q) {
    if (!q) return;
    free(q->buf);
    free(q);
}

bool tess__queue_push(struct tess__queue *q, void *item) {
    size_t pos = atomic_load_explicit(&q->enq, memory_order_relaxed);
    struct cell *c;
    for (;;) {
        c = &q->buf[pos & q->mask];
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            /* the cell is free for this lap: claim the position */
            if (atomic_compare_exchange_weak_explicit(&q->enq, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
            /* pos was reloaded by the failed CAS */
        } else if (dif < 0) {
            return false; /* the consumer of the previous lap has not freed it: full */
        } else {
            pos = atomic_load_explicit(&q->enq, memory_order_relaxed);
        }
    }
    c->data = item;
    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
    return true;
}

bool tess__queue_pop(struct tess__queue *q, void **item) {
    size_t pos = atomic_load_explicit(&q->deq, memory_order_relaxed);
    struct cell *c;
    for (;;) {
        c = &q->buf[pos & q->mask];
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);
        if (dif == 0) {
            /* the cell holds this lap's item: claim the position */
            if (atomic_compare_exchange_weak_explicit(&q->deq, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return false; /* no producer has published this position yet: empty */
        } else {
            pos = atomic_load_explicit(&q->deq, memory_order_relaxed);
        }
    }
    *item = c->data;
    atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
    return true;
}

/* A snapshot of two positions read at different times: clamped to [0, capacity]. */
size_t tess__queue_size(struct tess__queue *q) {
    size_t deq = atomic_load_explicit(&q->deq, memory_order_relaxed);
    size_t enq = atomic_load_explicit(&q->enq, memory_order_relaxed);
    if (enq <= deq) return 0;
    size_t n = enq - deq;
    return n > q->mask + 1 ? q->mask + 1 : n;
}
