/* scalapack_glue/dist.c: what the reductions (reduce.c, trsm.c) work with: distributed
 * temporaries of the call's BLACS context (descriptors and local arrays), the local address
 * of a global element, and the calls they make: tessera's distributed GEMM
 * (tess__pgemm_exec) and ScaLAPACK's p?tradd_, p?geadd_ and p?trtri_ of the call's
 * precision. One generic path for the four precisions: sizes come from tess__dtypes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* A 9- or 11-entry descriptor in the 11-entry form (only the forms we build or PBLAS's
 * checks accepted reach here). */
static void to11(const f_int *d, f_int e[GLUE_DLEN_]) {
    if (d[GLUE_DTYPE_] == GLUE_BLOCK_CYCLIC_2D) {
        /* DTYPE CTXT M N MB NB RSRC CSRC LLD */
        e[GLUE_DTYPE_] = GLUE_BLOCK_CYCLIC_2D_INB;
        e[GLUE_CTXT_] = d[1], e[GLUE_M_] = d[2], e[GLUE_N_] = d[3];
        e[GLUE_IMB_] = e[GLUE_MB_] = d[4];
        e[GLUE_INB_] = e[GLUE_NB_] = d[5];
        e[GLUE_RSRC_] = d[6], e[GLUE_CSRC_] = d[7], e[GLUE_LLD_] = d[8];
    } else {
        memcpy(e, d, sizeof(f_int) * GLUE_DLEN_);
    }
}

static struct tess__comm_bc rows_of(const f_int *e, int nprow) {
    return (struct tess__comm_bc){.n = e[GLUE_M_],
                                  .ib = e[GLUE_IMB_],
                                  .nb = e[GLUE_MB_],
                                  .src = nprow > 1 ? e[GLUE_RSRC_] : 0,
                                  .np = nprow};
}
static struct tess__comm_bc cols_of(const f_int *e, int npcol) {
    return (struct tess__comm_bc){.n = e[GLUE_N_],
                                  .ib = e[GLUE_INB_],
                                  .nb = e[GLUE_NB_],
                                  .src = npcol > 1 ? e[GLUE_CSRC_] : 0,
                                  .np = npcol};
}

/* lld x max(1, lc) elements of es bytes, without overflow */
static bool local_bytes(int64_t lld, int64_t lc, size_t es, size_t *bytes) {
    uint64_t cols = (uint64_t)(lc > 0 ? lc : 1);
    if (lld <= 0 || (uint64_t)lld > SIZE_MAX / es / cols) return false;
    *bytes = (size_t)lld * (size_t)cols * es;
    return true;
}

bool glue_tmp_plan_aligned(const struct glue_call *c, const f_int *d, f_int i0, f_int j0,
                           f_int rows, f_int cols, f_int out[GLUE_DLEN_], size_t *bytes) {
    f_int e[GLUE_DLEN_];
    to11(d, e);
    struct tess__comm_bc r = rows_of(e, c->nprow), q = cols_of(e, c->npcol);
    struct tess__comm_bc rs = tess__comm_bc_sub(&r, i0, rows), qs = tess__comm_bc_sub(&q, j0, cols);
    int64_t lr = tess__comm_bc_numroc(&rs, c->myrow), lc = tess__comm_bc_numroc(&qs, c->mycol);
    int64_t lld = lr > 1 ? lr : 1;
    out[GLUE_DTYPE_] = GLUE_BLOCK_CYCLIC_2D_INB;
    out[GLUE_CTXT_] = c->ctxt;
    out[GLUE_M_] = rows, out[GLUE_N_] = cols;
    out[GLUE_IMB_] = (f_int)rs.ib, out[GLUE_INB_] = (f_int)qs.ib;
    out[GLUE_MB_] = e[GLUE_MB_], out[GLUE_NB_] = e[GLUE_NB_];
    out[GLUE_RSRC_] = rs.src, out[GLUE_CSRC_] = qs.src;
    out[GLUE_LLD_] = (f_int)lld;
    return local_bytes(lld, lc, tess__dtypes[c->dt].size, bytes);
}

bool glue_tmp_plan_square(const struct glue_call *c, f_int n, f_int nb, f_int out[GLUE_DLEN_],
                          size_t *bytes) {
    struct tess__comm_bc r = {.n = n, .ib = nb, .nb = nb, .src = 0, .np = c->nprow};
    struct tess__comm_bc q = {.n = n, .ib = nb, .nb = nb, .src = 0, .np = c->npcol};
    int64_t lr = tess__comm_bc_numroc(&r, c->myrow), lc = tess__comm_bc_numroc(&q, c->mycol);
    int64_t lld = lr > 1 ? lr : 1;
    /* the 9-entry form: DTYPE CTXT M N MB NB RSRC CSRC LLD */
    f_int d9[9] = {GLUE_BLOCK_CYCLIC_2D, c->ctxt, n, n, nb, nb, 0, 0, (f_int)lld};
    memset(out, 0, sizeof(f_int) * GLUE_DLEN_);
    memcpy(out, d9, sizeof d9);
    return local_bytes(lld, lc, tess__dtypes[c->dt].size, bytes);
}

bool glue_tmp_aligned(struct glue_tmp *t, const struct glue_call *c, const f_int *d, f_int i0,
                      f_int j0, f_int rows, f_int cols) {
    memset(t, 0, sizeof *t);
    if (!glue_tmp_plan_aligned(c, d, i0, j0, rows, cols, t->desc, &t->bytes)) return false;
    t->buf = calloc(1, t->bytes);
    return t->buf != NULL;
}

void glue_tmp_free(struct glue_tmp *t) {
    if (t->held) (void)tess_release(t->buf);
    t->held = false;
    free(t->buf);
    t->buf = NULL;
}

void glue_tmp_hold(struct glue_tmp *t, const struct glue_call *c) {
    struct tess__comm_bc r = rows_of(t->desc, c->nprow), q = cols_of(t->desc, c->npcol);
    int64_t lr = tess__comm_bc_numroc(&r, c->myrow), lc = tess__comm_bc_numroc(&q, c->mycol);
    if (t->held || !t->buf || lr < 1 || lc < 1) return;
    tess__autostart_enter();
    t->held = tess_hold(c->dt, t->buf, t->desc[GLUE_LLD_], lr, lc, 0) == TESS_OK;
    tess__autostart_leave();
}

int glue_tmp_unhold(struct glue_tmp *t, tess_grid_t *g) {
    int st = t->held ? tess_release(t->buf) : TESS_OK;
    t->held = false;
    return tess__comm_agree(g, st);
}

void *glue_elem(const struct glue_call *c, const f_int *d, const void *base, f_int gi, f_int gj) {
    f_int e[GLUE_DLEN_];
    to11(d, e);
    struct tess__comm_bc r = rows_of(e, c->nprow), q = cols_of(e, c->npcol);
    if (tess__comm_bc_g2p(&r, gi) != c->myrow || tess__comm_bc_g2p(&q, gj) != c->mycol) return NULL;
    size_t li = (size_t)tess__comm_bc_g2l(&r, gi), lj = (size_t)tess__comm_bc_g2l(&q, gj);
    return (char *)base + (li + lj * (size_t)e[GLUE_LLD_]) * tess__dtypes[c->dt].size;
}

int glue_pgemm(tess_grid_t *g, const struct glue_call *c, char ta, char tb, f_int m, f_int n,
               f_int k, const void *alpha, struct glue_sub A, struct glue_sub B, const void *beta,
               struct glue_sub C) {
    if (m == 0 || n == 0) return TESS_OK;
    struct tess__pgemm_call p = {.dt = c->dt, .ta = ta, .tb = tb, .m = m, .n = n, .k = k};
    if (tess__comm_desc_from_scalapack(A.d, "A", &p.da) ||
        tess__comm_desc_from_scalapack(B.d, "B", &p.db) ||
        tess__comm_desc_from_scalapack(C.d, "C", &p.dc))
        return TESS_EINVAL;                  /* global entries only: the same on every process */
    p.A = A.a, p.B = B.a, p.C = (void *)C.a; /* C: the one written */
    p.ia = A.i, p.ja = A.j, p.ib = B.i, p.jb = B.j, p.ic = C.i, p.jc = C.j;
    tess__scalar_load(c->dt, &p.alpha, alpha);
    tess__scalar_load(c->dt, &p.beta, beta);
    tess__autostart_enter();
    int st = tess__pgemm_exec(g, &p);
    tess__autostart_leave();
    return st;
}

void glue_tradd(const struct glue_call *c, char uplo, char trans, f_int m, f_int n,
                const void *alpha, const void *A, f_int ia, f_int ja, const f_int *da,
                const void *beta, void *C, f_int ic, f_int jc, const f_int *dc) {
    char u[2] = {uplo, 0}, t[2] = {trans, 0};
    f_int IA = ia + 1, JA = ja + 1, IC = ic + 1, JC = jc + 1;
    glue_aux(c->dt)->tradd(u, t, &m, &n, alpha, A, &IA, &JA, da, beta, C, &IC, &JC, dc);
}

void glue_geadd(const struct glue_call *c, f_int m, f_int n, const void *alpha, const void *A,
                f_int ia, f_int ja, const f_int *da, const void *beta, void *C, f_int ic, f_int jc,
                const f_int *dc) {
    f_int IA = ia + 1, JA = ja + 1, IC = ic + 1, JC = jc + 1;
    glue_aux(c->dt)->geadd("N", &m, &n, alpha, A, &IA, &JA, da, beta, C, &IC, &JC, dc);
}

f_int glue_trtri(const struct glue_call *c, char uplo, char diag, f_int n, void *A, f_int ia,
                 f_int ja, const f_int *da) {
    char u[2] = {uplo, 0}, t[2] = {diag, 0};
    f_int IA = ia + 1, JA = ja + 1, info = 0;
    glue_aux(c->dt)->trtri(u, t, &n, A, &IA, &JA, da, &info, 1, 1);
    return info;
}

int glue_release(const void *A, int st) {
    char msg[512];
    if (st) snprintf(msg, sizeof msg, "%s", tess_last_error());
    int r = tess_release(A);
    return st ? tess__fail(st, "%s", msg) : r;
}
