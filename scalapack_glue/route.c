/* scalapack_glue/route.c: where a checked PBLAS level-3 call runs. It owns the routing
 * policy, the tessera grid of each BLACS context, the agreement of every process before
 * tessera computes, the failure policy, and p?gemm_'s path (one tess__pgemm_run); the other
 * routines' paths (reduce.c, trsm.c) use the same three steps.
 *
 * Policy for a call that passed PBLAS's checks and is not a quick return (the knobs must be
 * the same on every process of the context, as mpirun passes them):
 *   - an operand with RSRC_ or CSRC_ = -1 (replicated), or the knobs unreadable
 *                                       -> the reference routine;
 *   - TESSERA_SCALAPACK_FORCE=1         -> tessera, whatever the sizes;
 *   - otherwise                         -> tessera iff min(m, n, k) >= TESSERA_SCALAPACK_MIN_DIM
 *                                          and m n k >= TESSERA_SCALAPACK_MIN_VOLUME, with the
 *                                          sizes of the GEMM the routine amounts to (global
 *                                          sizes, so every process decides alike); the
 *                                          defaults are placeholders until measured on GPUs.
 * Before tessera computes, one MPI_Allreduce over the context's processes agrees that every
 * process can take it (its own preparations done, e.g. temporaries allocated; the runtime
 * started and, unforced, with a device other than the CPU worker; comm/ accepts the
 * descriptors) and that every process passed the same global arguments; if not, every
 * process calls the reference routine instead. tessera's own failures come back the same on
 * every process (tess__pgemm_run agrees on them): when the output's input is intact (or not
 * an input: beta = 0) the call runs again on the reference routine; otherwise the process
 * stops with a message (Cblacs_abort) rather than return a wrong result.
 *
 * The BLACS context: Cblacs_gridinfo gives its shape and this process's coordinates (as
 * PBLAS reads them), blacs_get(ctxt, 10) its communicator (the one the context's processes
 * talk over, not MPI_COMM_WORLD). The tessera grid of a context (tess__comm_grid_from_blacs,
 * collective, once) is cached as an MPI attribute of that communicator: when the program
 * frees the context (blacs_gridexit frees the communicator) MPI hands the grid to our
 * delete callback, which parks it; it is freed at this process's next grid lookup (outside
 * any MPI callback). A context handle reused later names a new communicator without the
 * attribute, so it gets a new grid: a stale grid is never used.
 *
 * Lock order: grave_mu is a leaf.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* ---- sizes and flops ---------------------------------------------------------------------- */

/* The GEMM a call amounts to: m x n output, inner dimension k. */
static void gemm_dims(const struct glue_call *c, double *m, double *n, double *k) {
    switch (c->kind) {
    case GLUE_GEMM: *m = c->m, *n = c->n, *k = c->k; break;
    case GLUE_SYMM: case GLUE_HEMM: case GLUE_TRMM: case GLUE_TRSM:
        *m = c->m, *n = c->n, *k = glue_order_a(c); break;
    default: *m = *n = c->n, *k = c->k; break; /* the SYRK family */
    }
}

double glue_call_flops(const struct glue_call *c) {
    if (tess__scalar_is_zero(c->dt, &c->alpha)) return 0.0;
    double m, n, k, ma;
    gemm_dims(c, &m, &n, &k);
    switch (c->kind) {
    case GLUE_SYRK: case GLUE_HERK: ma = 0.5 * n * (n + 1) * k; break;
    case GLUE_SYR2K: case GLUE_HER2K: ma = n * (n + 1) * k; break;
    case GLUE_TRMM: case GLUE_TRSM: ma = 0.5 * m * n * k; break;
    default: ma = m * n * k; break;
    }
    return ma * tess__dtypes[c->dt].flop_mul;
}

/* Rows and columns of sub(A), sub(B), sub(C) (C: the output) as PBLAS checks them. */
static void operand_shapes(const struct glue_call *c, f_int r[3], f_int q[3]) {
    f_int ka = glue_order_a(c);
    int na = c->ta == 'N';
    r[1] = q[1] = 0;
    switch (c->kind) {
    case GLUE_GEMM:
        r[0] = na ? c->m : c->k, q[0] = na ? c->k : c->m;
        r[1] = c->tb == 'N' ? c->k : c->n, q[1] = c->tb == 'N' ? c->n : c->k;
        r[2] = c->m, q[2] = c->n;
        break;
    case GLUE_SYMM: case GLUE_HEMM:
        r[0] = q[0] = ka, r[1] = r[2] = c->m, q[1] = q[2] = c->n;
        break;
    case GLUE_TRMM: case GLUE_TRSM:
        r[0] = q[0] = ka, r[2] = c->m, q[2] = c->n;
        break;
    default: /* the SYRK family: op(A) (and op(B)) n x k */
        r[0] = r[1] = na ? c->n : c->k, q[0] = q[1] = na ? c->k : c->n;
        r[2] = q[2] = c->n;
        break;
    }
}

/* ---- one tessera grid per BLACS context --------------------------------------------------- */

static int keyval = MPI_KEYVAL_INVALID;
static char unusable;  /* attribute value: building a grid failed on this context */
struct parked {
    tess_grid_t *g;
    struct parked *next;
};
static pthread_mutex_t grave_mu = PTHREAD_MUTEX_INITIALIZER;
static struct parked *graveyard;

/* MPI calls this while the context's communicator is freed (blacs_gridexit): park the grid,
 * no MPI call here. */
static int grid_attr_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)extra;
    if (val == &unusable) return MPI_SUCCESS;
    struct parked *p = malloc(sizeof *p);
    if (!p) return MPI_SUCCESS; /* leak the grid rather than fail the program's free */
    p->g = val;
    pthread_mutex_lock(&grave_mu);
    p->next = graveyard;
    graveyard = p;
    pthread_mutex_unlock(&grave_mu);
    return MPI_SUCCESS;
}

static void reap(void) {
    pthread_mutex_lock(&grave_mu);
    struct parked *p = graveyard;
    graveyard = NULL;
    pthread_mutex_unlock(&grave_mu);
    while (p) {
        struct parked *next = p->next;
        tess__log(TESS__LOG_INFO, "scalapack glue: rank %d: freeing the %d x %d grid of a freed "
                  "BLACS context", glue_world_rank(), p->g->at.nprow, p->g->at.npcol);
        tess_grid_free(p->g);
        free(p);
        p = next;
    }
}

/* The context's communicator, MPI_COMM_NULL if BLACS does not tell. */
static MPI_Comm context_comm(f_int ctxt) {
    const struct glue_syms *S = glue_syms();
    if (!S->blacs_get) return MPI_COMM_NULL;
    /* SGET_BLACSCONTXT: the context's communicator, as a Fortran handle (any int: MPICH's
     * are negative) */
    f_int what = 10, fcomm = (f_int)MPI_Comm_c2f(MPI_COMM_NULL);
    S->blacs_get(&ctxt, &what, &fcomm);
    return MPI_Comm_f2c((MPI_Fint)fcomm);
}

/* The grid of the call's context, built on first use (collective over the context's
 * processes); NULL when it cannot be had (the same answer on every process). */
static tess_grid_t *grid_for(const struct glue_call *c) {
    reap();
    MPI_Comm comm = context_comm(c->ctxt);
    if (comm == MPI_COMM_NULL) return NULL;
    if (keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, grid_attr_delete, &keyval, NULL) != MPI_SUCCESS) {
        keyval = MPI_KEYVAL_INVALID;
        return NULL;
    }
    void *val = NULL;
    int flag = 0;
    if (MPI_Comm_get_attr(comm, keyval, &val, &flag) != MPI_SUCCESS) return NULL;
    if (flag) return val == &unusable ? NULL : val;

    tess_grid_t *g = calloc(1, sizeof *g);
    int st = g ? TESS_OK : tess__fail(TESS_ENOMEM, "tessera-scalapack: grid: out of host memory");
    int built = 0;
    if (!st) {
        /* collective over comm; a description problem makes every process fail alike */
        st = tess__comm_grid_from_blacs(comm, c->nprow, c->npcol, c->myrow, c->mycol, g);
        built = !st;
    }
    /* every process keeps a grid, or none does */
    st = tess__comm_agree_on(comm, st);
    if (st) {
        if (glue_knobs()->verbose)
            fprintf(stderr, "tessera-scalapack: rank %d: no tessera grid for BLACS context %d "
                    "(%s); its calls go to the reference ScaLAPACK\n", glue_world_rank(),
                    c->ctxt, tess_last_error());
        if (built) tess_grid_free(g);
        else free(g);
        g = NULL;
    }
    else
        tess__log(TESS__LOG_INFO, "scalapack glue: rank %d: %d x %d grid built for BLACS "
                  "context %d", glue_world_rank(), c->nprow, c->npcol, c->ctxt);
    MPI_Comm_set_attr(comm, keyval, g ? (void *)g : (void *)&unusable);
    return g;
}

/* ---- the three steps -------------------------------------------------------------------- */

static int replicated(const f_int *d) { return d && (d[GLUE_RSRC_] < 0 || d[GLUE_CSRC_] < 0); }

tess_grid_t *glue_route_grid(const struct glue_call *c) {
    const struct glue_knobs *K = glue_knobs();
    /* global arguments and knobs: every process of the context decides alike */
    int want = K->ok && !replicated(c->da) && !replicated(c->db) && !replicated(c->dc);
    if (want && !K->force) {
        double m, n, k;
        gemm_dims(c, &m, &n, &k);
        want = GLUE_MIN(GLUE_MIN(m, n), k) >= (double)K->min_dim && m * n * k >= K->min_volume;
    }
    return want ? grid_for(c) : NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* What every process must pass alike: letters, sizes, scalars, offsets, descriptors but
 * CTXT_ (a local handle) and LLD_ (a local size). */
static uint64_t args_hash(const struct glue_call *c) {
    uint64_t h = 1469598103934665603ull;
    int v[10] = {(int)c->kind, (int)c->dt, c->side, c->uplo, c->ta, c->tb, c->diag,
                 c->m, c->n, c->k};
    h = fnv(h, v, sizeof v);
    size_t es = tess__dtypes[c->dt].size;
    h = fnv(h, c->alpha.bytes, es);
    h = fnv(h, c->beta.bytes, es);
    const f_int *d[3] = {c->da, c->db, c->dc};
    const f_int off[3][2] = {{c->ia, c->ja}, {c->ib, c->jb}, {c->ic, c->jc}};
    for (int i = 0; i < 3; i++) {
        if (!d[i]) continue;
        h = fnv(h, off[i], sizeof off[i]);
        for (int e = 0; e < GLUE_DLEN_; e++)
            if (e != GLUE_CTXT_ && e != GLUE_LLD_) h = fnv(h, &d[i][e], sizeof d[i][e]);
    }
    return h;
}

/* comm/ takes this descriptor and submatrix as PBLAS does (it should, once PBLAS's checks
 * passed and no source is replicated). */
static int comm_takes(const f_int *d, const char *name, const struct tess__comm_coords *at,
                      f_int i, f_int j, f_int rows, f_int cols) {
    struct tess__comm_desc out;
    return tess__comm_desc_from_scalapack(d, name, &out) == TESS_OK &&
           tess__comm_desc_check(&out, name, at, i, j, rows, cols, NULL, NULL) == TESS_OK;
}

bool glue_route_agree(tess_grid_t *g, const struct glue_call *c, bool local_ok) {
    f_int r[3], q[3];
    operand_shapes(c, r, q);
    int ok = local_ok &&
             comm_takes(c->dc, "C", &g->at, c->ic, c->jc, r[2], q[2]) &&
             comm_takes(c->da, "A", &g->at, c->ia, c->ja, r[0], q[0]) &&
             (!c->db || comm_takes(c->db, "B", &g->at, c->ib, c->jb, r[1], q[1])) &&
             glue_devices_ready();
    uint64_t h = args_hash(c);
    unsigned long long mine[3] = {!ok, h, ~h}, all[3];
    if (MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, g->comm) != MPI_SUCCESS)
        return false;
    if (all[0] || all[1] != ~all[2]) {
        if (glue_knobs()->verbose && ok && all[1] != ~all[2])
            fprintf(stderr, "tessera-scalapack: rank %d: p%c%s_: the processes passed different "
                    "arguments; the call goes to the reference ScaLAPACK\n", glue_world_rank(),
                    "sdcz"[c->dt], glue_kind_name[c->kind]);
        return false;
    }
    return true;
}

void glue_route_failed(const struct glue_call *c, int st, bool intact, const char *where) {
    if (st == TESS_ENODEV) glue_devices_off(); /* no device left */
    if (intact) {
        if (glue_knobs()->verbose)
            fprintf(stderr, "tessera-scalapack: rank %d: p%c%s_ failed in tessera (%s, %s: %s); "
                    "its output still holds its input, so it runs again on the reference "
                    "ScaLAPACK\n", glue_world_rank(), "sdcz"[c->dt], glue_kind_name[c->kind],
                    where, tess_strerror(st), tess_last_error());
        glue_count_fallback(c->kind, c->dt);
        return;
    }
    fprintf(stderr, "tessera-scalapack: rank %d: p%c%s_ failed in tessera (%s, %s: %s) after "
            "writing part of its output; its input is lost, stopping\n", glue_world_rank(),
            "sdcz"[c->dt], glue_kind_name[c->kind], where, tess_strerror(st), tess_last_error());
    const struct glue_syms *S = glue_syms();
    if (S->blacs_abort) S->blacs_abort(c->ctxt, -1);
    abort();
}

/* ---- p?gemm_ ------------------------------------------------------------------------------ */

void glue_gemm_route(const struct glue_call *c, void (*reference)(void *arg), void *arg) {
    double flops = glue_call_flops(c);
    tess_grid_t *g = glue_route_grid(c);
    if (!g || !glue_route_agree(g, c, true)) {
        glue_count_reference(c->kind, c->dt, flops);
        reference(arg);
        return;
    }
    int st = glue_pgemm(g, c, c->ta, c->tb, c->m, c->n, c->k, &c->alpha, c->A, c->ia, c->ja,
                        c->da, c->B, c->ib, c->jb, c->db, &c->beta, c->C, c->ic, c->jc, c->dc);
    if (st == TESS_OK) {
        glue_count_tessera(c->kind, c->dt, flops);
        return;
    }
    /* beta = 0: C was not an input, the reference computes it again (every process: the
     * status is the same everywhere) */
    glue_route_failed(c, st, tess__scalar_is_zero(c->dt, &c->beta), "the GEMM");
    glue_count_reference(c->kind, c->dt, flops);
    reference(arg);
}
