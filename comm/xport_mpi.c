/* comm/xport_mpi.c: the MPI transport (xport.h): panels in host memory (the grid's work
 * buffer, tess__pgemm_ws: the Open MPI here is not CUDA-aware), one MPI_Ialltoallw over
 * g->comm per unit, two units in flight (two slots). For every (owner, destination) pair a
 * datatype of redist.c (tess__redist_types) lists the elements the owner holds and the
 * destination needs, at their place in the owner's local arrays and in the destination's
 * panel: MPI moves them directly, no packing by us; the operands share the one call
 * through absolute addresses (MPI_BOTTOM).
 * Owns, per call (begin to end), the element type, the per-rank counts and the types of
 * the units in flight; the panels belong to the grid.
 */
#include <stdlib.h>
#include <string.h>

#include "pgemm.h"
#include "xport.h"

struct xmpi {
    struct tess__xport base; /* first */
    struct tess__redist_op *ops;
    int nops;
    MPI_Datatype elem;
    int *cnt_s, *cnt_r, *dsp; /* per rank: count (0/1) out and in, displacements (0) */
    MPI_Datatype *ty_s[2], *ty_r[2];
    MPI_Request req[2];
};

static int mpi_alloc(struct tess__xport *x, size_t bytes, void **ptr, void **handle) {
    *handle = NULL;
    int st = tess__pgemm_ws(x->g, bytes);
    *ptr = x->g->pgemm.ws.ptr;
    return st;
}

static void mpi_free(struct tess__xport *x, void *handle) { (void)x, (void)handle; }

static void mpi_end(struct tess__xport *x) {
    struct xmpi *m = (struct xmpi *)x;
    free(m->cnt_s), free(m->cnt_r), free(m->dsp);
    for (int s = 0; s < 2; s++) free(m->ty_s[s]), free(m->ty_r[s]);
    if (m->elem != MPI_DATATYPE_NULL) MPI_Type_free(&m->elem);
    m->cnt_s = m->cnt_r = m->dsp = NULL;
    m->ty_s[0] = m->ty_s[1] = m->ty_r[0] = m->ty_r[1] = NULL;
}

static int mpi_begin(struct tess__xport *x, struct tess__redist_op *ops, int nops) {
    struct xmpi *m = (struct xmpi *)x;
    m->ops = ops;
    m->nops = nops;
    m->req[0] = m->req[1] = MPI_REQUEST_NULL;
    size_t n = (size_t)x->size;
    m->cnt_s = calloc(n, sizeof(int)), m->cnt_r = calloc(n, sizeof(int));
    m->dsp = calloc(n, sizeof(int));
    for (int s = 0; s < 2; s++)
        m->ty_s[s] = calloc(n, sizeof(MPI_Datatype)), m->ty_r[s] = calloc(n, sizeof(MPI_Datatype));
    if (!m->cnt_s || !m->cnt_r || !m->dsp || !m->ty_s[0] || !m->ty_s[1] || !m->ty_r[0] ||
        !m->ty_r[1]) {
        mpi_end(x);
        return tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    }
    int st = TESS__MPI(MPI_Type_contiguous((int)ops[0].es, MPI_BYTE, &m->elem));
    if (!st) st = TESS__MPI(MPI_Type_commit(&m->elem));
    if (st) mpi_end(x);
    return st;
}

static int mpi_post(struct tess__xport *x, const struct tess__xport_unit *u, int prior) {
    if (prior) return prior;
    struct xmpi *m = (struct xmpi *)x;
    const struct tess__comm_grid *g = x->g;
    int me_r = g->at.myrow, me_c = g->at.mycol, st = TESS_OK, slot = u->slot % 2;
    for (int j = 0; j < x->size && !st; j++) {
        MPI_Datatype ts = MPI_DATATYPE_NULL, tr = MPI_DATATYPE_NULL;
        st = tess__redist_types(m->ops, m->nops, me_r, me_c, x->prow[j], x->pcol[j], u->k0, u->k1,
                                u->kbase, u->s0, u->s1, true, m->elem, &ts);
        if (!st)
            st = tess__redist_types(m->ops, m->nops, x->prow[j], x->pcol[j], me_r, me_c, u->k0,
                                    u->k1, u->kbase, u->s0, u->s1, false, m->elem, &tr);
        m->ty_s[slot][j] = ts != MPI_DATATYPE_NULL ? ts : m->elem;
        m->ty_r[slot][j] = tr != MPI_DATATYPE_NULL ? tr : m->elem;
        m->cnt_s[j] = ts != MPI_DATATYPE_NULL;
        m->cnt_r[j] = tr != MPI_DATATYPE_NULL;
        MPI_Count sz;
        if (ts != MPI_DATATYPE_NULL && j != g->rank && MPI_Type_size_x(ts, &sz) == MPI_SUCCESS)
            x->sent += (uint64_t)sz;
        if (tr != MPI_DATATYPE_NULL && j != g->rank && MPI_Type_size_x(tr, &sz) == MPI_SUCCESS)
            x->recvd += (uint64_t)sz;
    }
    if (!st)
        st = TESS__MPI(MPI_Ialltoallw(MPI_BOTTOM, m->cnt_s, m->dsp, m->ty_s[slot], MPI_BOTTOM,
                                      m->cnt_r, m->dsp, m->ty_r[slot], g->comm, &m->req[slot]));
    /* the call holds what it needs: the types can go now (MPI frees them when done) */
    for (int j = 0; j < x->size; j++) {
        if (m->ty_s[slot][j] != m->elem && m->ty_s[slot][j] != MPI_DATATYPE_NULL)
            MPI_Type_free(&m->ty_s[slot][j]);
        if (m->ty_r[slot][j] != m->elem && m->ty_r[slot][j] != MPI_DATATYPE_NULL)
            MPI_Type_free(&m->ty_r[slot][j]);
        m->ty_s[slot][j] = m->ty_r[slot][j] = MPI_DATATYPE_NULL;
    }
    return st;
}

static int mpi_wait(struct tess__xport *x, int slot) {
    return tess__mpi_wait(&((struct xmpi *)x)->req[slot % 2]);
}

static void mpi_close(struct tess__xport *x) {
    mpi_end(x);
    tess__xport_base_free(x);
    free(x);
}

static const struct tess__xport_ops mpi_ops = {
    .name = "mpi",
    .alloc = mpi_alloc,
    .free = mpi_free,
    .begin = mpi_begin,
    .post = mpi_post,
    .wait = mpi_wait,
    .end = mpi_end,
    .close = mpi_close,
};

int tess__xport_open_mpi(struct tess__comm_grid *g, struct tess__xport **out) {
    *out = NULL;
    struct xmpi *m = calloc(1, sizeof *m);
    int st = m ? tess__xport_base_init(&m->base, g)
               : tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (m) {
        m->base.ops = &mpi_ops;
        m->base.in_flight = 2;
        m->elem = MPI_DATATYPE_NULL;
    }
    st = tess__comm_agree(g, st);
    if (st) {
        if (m) mpi_close(&m->base);
        return st;
    }
    *out = &m->base;
    return TESS_OK;
}
