/* src/tools/par.c: the parallel for of par.h. */
#include "par.h"

#include <pthread.h>
#include <stdatomic.h>

struct par {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
};

static void *par_worker(void *arg) {
    struct par *p = arg;
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->fn(p->ctx, i);
    return NULL;
}

void par_run(int threads, int n, void (*fn)(void *ctx, int i), void *ctx) {
    struct par p = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&p.next, 0);
    pthread_t th[PAR_MAX_THREADS];
    int nt = threads < n ? threads : n, started = 0;
    if (nt > PAR_MAX_THREADS) nt = PAR_MAX_THREADS;
    for (int i = 1; i < nt; i++)
        if (pthread_create(&th[started], NULL, par_worker, &p) == 0) started++;
    par_worker(&p);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}
