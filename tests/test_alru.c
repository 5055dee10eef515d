/* tests/test_alru.c: the ALRU list (cache/alru.c): recency order, victim choice (readers,
 * unfinished fills, the is_done callback), removal anywhere in the list.
 */
#include "harness.h"
#include "../cache/cache.h"

/* n idle blocks with finished fills, pushed 0 first (so block n-1 is at the front). */
static void push_all(struct tess__alru *a, struct tess__blk *b, int n) {
    tess__alru_init(a);
    memset(b, 0, (size_t)n * sizeof *b);
    for (int i = 0; i < n; i++) {
        b[i].ready_done = 1;
        tess__alru_push_front(a, &b[i]);
    }
}

/* Checks the list front to back against want[] (block indices) and back to front too. */
static int order_is(struct tess__alru *a, struct tess__blk *b, const int *want, int n) {
    if (a->count != (size_t)n) return 0;
    struct tess__blk *x = a->head;
    for (int i = 0; i < n; i++, x = x->next)
        if (x != &b[want[i]] || !x->in_alru) return 0;
    if (x != NULL) return 0;
    x = a->tail;
    for (int i = n - 1; i >= 0; i--, x = x->prev)
        if (x != &b[want[i]]) return 0;
    return x == NULL;
}

/* Pushing puts a block at the front, touch moves a used block to the front, and the
 * victim is the least recently used block. */
TEST(alru_lru_order_touch) {
    struct tess__alru a;
    struct tess__blk b[4];
    push_all(&a, b, 4);
    ASSERT(order_is(&a, b, (int[]){3, 2, 1, 0}, 4));
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[0]);
    tess__alru_touch(&a, &b[0]);
    ASSERT(order_is(&a, b, (int[]){0, 3, 2, 1}, 4));
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[1]);
    tess__alru_touch(&a, &b[2]);
    ASSERT(order_is(&a, b, (int[]){2, 0, 3, 1}, 4));
    tess__alru_touch(&a, &b[2]); /* already at the front */
    ASSERT(order_is(&a, b, (int[]){2, 0, 3, 1}, 4));
    tess__alru_touch(&a, &b[1]); /* from the tail */
    ASSERT(order_is(&a, b, (int[]){1, 2, 0, 3}, 4));
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[3]);
    /* victim does not unlink */
    ASSERT(order_is(&a, b, (int[]){1, 2, 0, 3}, 4));
}

/* A block with readers or with an unfinished fill is never the victim; NULL when all are
 * busy. */
TEST(alru_victim_skips_busy) {
    struct tess__alru a;
    struct tess__blk b[3];
    push_all(&a, b, 3); /* LRU end: b0, then b1, then b2 */
    b[0].readers = 1;
    b[1].ready_done = 0;
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[2]);
    b[2].readers = 2;
    ASSERT(tess__alru_victim(&a, NULL, NULL) == NULL);
    b[0].readers = 0;
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[0]);
    b[0].readers = 1;
    b[1].ready_done = 1;
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[1]);
    /* stale plays no part */
    b[1].stale = 1;
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[1]);
}

struct probe {
    struct tess__blk *done;   /* the block whose fill the "event" reports complete */
    struct tess__blk *refuse; /* a block refused though ready_done */
    int calls;
    struct tess__blk *asked[8];
};

static bool probe_done(struct tess__blk *b, void *arg) {
    struct probe *p = arg;
    if (p->calls < 8) p->asked[p->calls] = b;
    p->calls++;
    return b == p->done || (b->ready_done && b != p->refuse);
}

/* is_done is asked about every idle block and its answer decides (the cache refuses the
 * last copy of a dirty held tile even with its fill complete); it is not asked about
 * blocks with readers. */
TEST(alru_is_done_consulted) {
    struct tess__alru a;
    struct tess__blk b[4];
    push_all(&a, b, 4); /* LRU end: b0, b1, b2, b3 */
    b[0].readers = 1;
    b[0].ready_done = 0;
    b[1].ready_done = 0;
    b[2].ready_done = 0;
    struct probe p = {.done = &b[2]};
    ASSERT(tess__alru_victim(&a, probe_done, &p) == &b[2]);
    ASSERT_EQ(p.calls, 2); /* b1 (no), b2 (yes); never b0 */
    ASSERT(p.asked[0] == &b[1] && p.asked[1] == &b[2]);
    p = (struct probe){.done = NULL};
    ASSERT(tess__alru_victim(&a, probe_done, &p) == &b[3]); /* ready_done: yes */
    ASSERT_EQ(p.calls, 3);
    p = (struct probe){.done = NULL, .refuse = &b[3]};
    ASSERT(tess__alru_victim(&a, probe_done, &p) == NULL); /* refused though ready_done */
    ASSERT_EQ(p.calls, 3);
    b[3].readers = 1;
    p = (struct probe){.done = NULL};
    ASSERT(tess__alru_victim(&a, probe_done, &p) == NULL);
    ASSERT_EQ(p.calls, 2);
    p = (struct probe){.done = &b[1]};
    ASSERT(tess__alru_victim(&a, probe_done, &p) == &b[1]);
    ASSERT_EQ(p.calls, 1);
}

/* Removing from the middle, head and tail keeps the links and count right; removing an
 * unlinked block and touching it change nothing. */
TEST(alru_remove_anywhere) {
    struct tess__alru a;
    struct tess__blk b[5];
    push_all(&a, b, 5); /* front: 4 3 2 1 0 */
    tess__alru_remove(&a, &b[2]);
    ASSERT(order_is(&a, b, (int[]){4, 3, 1, 0}, 4));
    ASSERT_EQ(b[2].in_alru, 0);
    ASSERT(b[2].prev == NULL && b[2].next == NULL);
    tess__alru_remove(&a, &b[4]); /* head */
    ASSERT(order_is(&a, b, (int[]){3, 1, 0}, 3));
    tess__alru_remove(&a, &b[0]); /* tail */
    ASSERT(order_is(&a, b, (int[]){3, 1}, 2));
    tess__alru_remove(&a, &b[0]); /* not linked: no-op */
    tess__alru_touch(&a, &b[0]);  /* not linked: not re-linked */
    ASSERT(order_is(&a, b, (int[]){3, 1}, 2));
    ASSERT(tess__alru_victim(&a, NULL, NULL) == &b[1]);
    tess__alru_remove(&a, &b[1]);
    tess__alru_remove(&a, &b[3]);
    ASSERT_EQ(a.count, 0);
    ASSERT(a.head == NULL && a.tail == NULL);
    ASSERT(tess__alru_victim(&a, NULL, NULL) == NULL);
    tess__alru_push_front(&a, &b[2]); /* re-linking a removed block works */
    ASSERT(order_is(&a, b, (int[]){2}, 1));
}

TEST_MAIN()
