/* src/base/par.h: a parallel for, header only (the runtime's faces and the tools share it
 * but no objects): fn(ctx, i) for every i in [0, n) on up to `threads` threads (the
 * caller's among them), items handed out in order by one atomic counter. A thread that
 * cannot start leaves its share to the others; every item has run when it returns. */
#ifndef TESS_BASE_PAR_H
#define TESS_BASE_PAR_H

#include <pthread.h>
#include <stdatomic.h>

#define TESS__PAR_MAX 256 /* threads at most */

struct tess__par {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
};

static inline void *tess__par_worker(void *arg) {
    struct tess__par *p = arg;
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i);
    return NULL;
}

static inline void tess__par_run(int threads, int n, void (*fn)(void *ctx, int i), void *ctx) {
    struct tess__par p = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&p.next, 0);
    pthread_t th[TESS__PAR_MAX];
    int nt = threads < n ? threads : n, started = 0;
    if (nt > TESS__PAR_MAX) nt = TESS__PAR_MAX;
    for (int i = 1; i < nt; i++)
        if (pthread_create(&th[started], NULL, tess__par_worker, &p) == 0) started++;
    tess__par_worker(&p);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

#endif
