/* cache/alru.c: the Approximate LRU list of one device (BLASX Alg. 2).
 * Owns the order of the device's cached tile copies: an intrusive doubly linked list
 * through struct tess__blk (prev/next/in_alru), front = most recently used. It does not
 * own the blocks (cache/cache.c allocates, fills and frees them), their memory (heap.c) or
 * their directory state (mesix.c), and it never queries the backend itself: whether an
 * unfinished fill has completed is asked of the caller's is_done callback.
 * Not locked: every call is made with the cache lock held (cache/cache.h).
 */
#include <stddef.h>

#include "cache.h"

void tess__alru_init(struct tess__alru *a) {
    a->head = a->tail = NULL;
    a->count = 0;
}

static void link_front(struct tess__alru *a, struct tess__blk *b) {
    b->prev = NULL;
    b->next = a->head;
    if (a->head)
        a->head->prev = b;
    else
        a->tail = b;
    a->head = b;
}

static void unlink_blk(struct tess__alru *a, struct tess__blk *b) {
    if (b->prev)
        b->prev->next = b->next;
    else
        a->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        a->tail = b->prev;
    b->prev = b->next = NULL;
}

/* Link b at the front. b must not be linked already (then it is only moved, as touch). */
void tess__alru_push_front(struct tess__alru *a, struct tess__blk *b) {
    if (b->in_alru) {
        tess__alru_touch(a, b);
        return;
    }
    link_front(a, b);
    b->in_alru = 1;
    a->count++;
}

/* Move b to the front. A block that is not linked (removed, stale or a working block) is
 * left alone: a use never re-links what the cache took out on purpose. */
void tess__alru_touch(struct tess__alru *a, struct tess__blk *b) {
    if (!b->in_alru || a->head == b) return;
    unlink_blk(a, b);
    link_front(a, b);
}

/* Unlink b; a block that is not linked is left alone. */
void tess__alru_remove(struct tess__alru *a, struct tess__blk *b) {
    if (!b->in_alru) return;
    unlink_blk(a, b);
    b->in_alru = 0;
    a->count--;
}

/* From the least recently used end: the first block without readers whose fill is known
 * complete (ready_done) or reported complete by is_done. is_done is asked only about
 * blocks without readers whose ready_done is 0; NULL means only ready_done counts. The
 * stale flag plays no part (a stale block without readers is as good a victim). The list
 * and the block are not modified; recording ready_done is the caller's business. */
struct tess__blk *tess__alru_victim(struct tess__alru *a,
                                    bool (*is_done)(struct tess__blk *b, void *arg), void *arg) {
    for (struct tess__blk *b = a->tail; b; b = b->prev) {
        if (b->readers > 0) continue;
        if (is_done ? is_done(b, arg) : b->ready_done) return b;
    }
    return NULL;
}
