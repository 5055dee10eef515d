/* comm/xport.c: the grid's transport (g->xport): which one a grid takes, when it is opened
 * again, and when it is closed. The choice: the device transport (xport_dev.c) where every
 * rank of the grid can take it, else MPI through host memory (xport_mpi.c); made at the
 * grid's first exchange, the same on every rank (every step here is collective over
 * g->comm and every rank holds the same kind). A device transport pins the runtime it was
 * opened on; a call on another runtime (tess_finalize and a new start since) has every
 * rank close it and choose again, as does a device lost during an exchange.
 */
#include <stdlib.h>

#include "xport.h"

int tess__xport_base_init(struct tess__xport *x, struct tess__comm_grid *g) {
    x->g = g;
    x->dev = -1;
    MPI_Comm_size(g->comm, &x->size);
    x->prow = calloc((size_t)x->size, sizeof(int));
    x->pcol = calloc((size_t)x->size, sizeof(int));
    if (!x->prow || !x->pcol) return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    for (int r = 0; r < g->at.nprow; r++)
        for (int c = 0; c < g->at.npcol; c++) {
            int k = tess__comm_grid_rank(g, r, c);
            x->prow[k] = r, x->pcol[k] = c;
        }
    return TESS_OK;
}

void tess__xport_base_free(struct tess__xport *x) {
    free(x->prow), free(x->pcol);
    x->prow = x->pcol = NULL;
}

void tess__xport_close(struct tess__xport *x) {
    if (x) x->ops->close(x);
}

int tess__xport_get(struct tess__comm_grid *g, struct tess__xport **out) {
    *out = NULL;
    struct tess__xport *x = g->xport;
    if (x && x->ops->stale) {
        /* its runtime may be gone: the answer of every rank (each holds the same kind) */
        int stale = x->ops->stale(x), any = 0;
        int st = TESS__MPI(MPI_Allreduce(&stale, &any, 1, MPI_INT, MPI_MAX, g->comm));
        if (st) return tess__comm_agree(g, st);
        if (any) {
            tess__xport_close(x);
            g->xport = x = NULL;
        }
    }
    if (x) {
        *out = x;
        return TESS_OK;
    }
    int st = tess__xport_open_dev(g, &g->xport); /* agreed */
    if (st) {
        /* no device transport on this grid, or it failed to open (that error stands for
         * this call): MPI carries the grid's calls from now on */
        int mst = tess__xport_open_mpi(g, &g->xport);
        if (st == TESS_ENOSYS) st = mst;
    }
    if (!st) *out = g->xport;
    return st;
}

int tess__xport_after_failure(struct tess__comm_grid *g) {
    struct tess__xport *x = g->xport;
    int dead = x && x->dead, any = 0;
    int st = TESS__MPI(MPI_Allreduce(&dead, &any, 1, MPI_INT, MPI_MAX, g->comm));
    if (!st && any && x) {
        x->dead = true;
        tess__xport_close(x);
        g->xport = NULL;
    }
    return st;
}

void tess__xport_drop(struct tess__comm_grid *g) {
    tess__xport_close(g->xport);
    g->xport = NULL;
}
