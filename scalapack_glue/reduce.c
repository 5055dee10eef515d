/* scalapack_glue/reduce.c: p?symm_/p?hemm_, the SYRK family and p?trmm_ as reductions to
 * tessera's distributed GEMM (glue_pgemm) plus ScaLAPACK's own p?tradd_/p?geadd_, one
 * generic path for the four precisions (docs/scalapack.md). Each builds what the GEMM needs
 * in a temporary whose blocks sit where the source operand's blocks sit (dist.c), so the
 * copies move nothing between processes:
 *   SYMM/HEMM  T = the full matrix of sub(A)'s triangle (HEMM: real diagonal), then
 *              sub(C) = alpha T sub(B) + beta sub(C) (or alpha sub(B) T + ...);
 *   SYRK...    W = the full product with beta = 0, then sub(C)'s triangle = beta C + W by
 *              p?tradd (HERK/HER2K: C's diagonal imaginary parts not read, zero on output);
 *   TRMM       T = sub(A)'s triangle, W = sub(B), sub(B) = alpha op(T) W (or W op(T)); a
 *              failed GEMM puts sub(B) back from W and the reference computes the call.
 * Invariants: alpha = 0 (SYRK family: or k = 0) reads neither A nor B, as PBLAS; a NaN in a
 * part PBLAS does not reference never reaches the result.
 */
#include <string.h>

#include "glue.h"

static const void *one(const struct glue_call *c) { return tess__scalar_one(c->dt); }
static const void *zero(void) { return tess__scalar_zero(); }

/* After an agreed "no" (GLUE_REFERENCE; GLUE_REPORTED returns at once) or a failure with
 * the input intact: the reference, counted. */
static void to_reference(const struct glue_call *c, void (*reference)(void *), void *arg) {
    glue_count_reference(c->kind, c->dt, glue_call_flops(c));
    reference(arg);
}

/* Zero the imaginary parts of the diagonal of the n x n submatrix at (i0, j0) this process
 * holds. */
static void zero_imag_diag(const struct glue_call *c, const f_int *d, void *X, f_int i0, f_int j0,
                           f_int n) {
    size_t half = tess__dtypes[c->dt].size / 2;
    for (f_int t = 0; t < n; t++) {
        char *p = glue_elem(c, d, X, i0 + t, j0 + t);
        if (p) memset(p + half, 0, half);
    }
}

/* ---- p?symm_ / p?hemm_ -------------------------------------------------------------------- */

void glue_symm_route(const struct glue_call *c, void (*reference)(void *), void *arg) {
    tess_grid_t *g = glue_route_grid(c);
    bool alpha0 = tess__scalar_is_zero(c->dt, &c->alpha);
    f_int ka = glue_order_a(c);
    struct glue_tmp T = {0};
    bool ok = true;
    if (g && !alpha0) /* the runtime first: no temporary for a call that cannot run */
        ok = glue_devices_ready() && glue_aux(c->dt)->tradd &&
             glue_tmp_aligned(&T, c, c->da, c->ia, c->ja, ka, ka);
    enum glue_way way = g ? glue_route_way(g, c, ok) : GLUE_REFERENCE;
    if (way != GLUE_TESSERA) {
        glue_tmp_free(&T);
        if (way == GLUE_REFERENCE) to_reference(c, reference, arg);
        return;
    }
    int st;
    if (alpha0) {
        /* sub(C) = beta sub(C), beta = 0 writing zeros without reading */
        st = glue_pgemm(g, c, 'N', 'N', c->m, c->n, 0, &c->alpha,
                        GLUE_SUB(c->A, c->ia, c->ja, c->da), GLUE_SUB(c->B, c->ib, c->jb, c->db),
                        &c->beta, GLUE_SUB(c->C, c->ic, c->jc, c->dc));
    } else {
        bool herm = c->kind == GLUE_HEMM;
        char other = c->uplo == 'U' ? 'L' : 'U';
        glue_tradd(c, c->uplo, 'N', ka, ka, one(c), c->A, c->ia, c->ja, c->da, zero(), T.buf, 0, 0,
                   T.desc);
        glue_tradd(c, other, herm ? 'C' : 'T', ka, ka, one(c), c->A, c->ia, c->ja, c->da, zero(),
                   T.buf, 0, 0, T.desc);
        if (herm) {
            /* T(d, d) = Re A(ia + d, ja + d): T's blocks sit where sub(A)'s do */
            size_t half = tess__dtypes[c->dt].size / 2;
            for (f_int d = 0; d < ka; d++) {
                const char *pa = glue_elem(c, c->da, c->A, c->ia + d, c->ja + d);
                if (!pa) continue;
                char *pt = glue_elem(c, T.desc, T.buf, d, d);
                memcpy(pt, pa, half);
                memset(pt + half, 0, half);
            }
        }
        if (c->side == 'L')
            st = glue_pgemm(g, c, 'N', 'N', c->m, c->n, ka, &c->alpha,
                            GLUE_SUB(T.buf, 0, 0, T.desc), GLUE_SUB(c->B, c->ib, c->jb, c->db),
                            &c->beta, GLUE_SUB(c->C, c->ic, c->jc, c->dc));
        else
            st = glue_pgemm(g, c, 'N', 'N', c->m, c->n, ka, &c->alpha,
                            GLUE_SUB(c->B, c->ib, c->jb, c->db), GLUE_SUB(T.buf, 0, 0, T.desc),
                            &c->beta, GLUE_SUB(c->C, c->ic, c->jc, c->dc));
    }
    glue_tmp_free(&T);
    if (st == TESS_OK) {
        glue_count_tessera(c->kind, c->dt, glue_call_flops(c));
        return;
    }
    glue_route_failed(c, st, tess__scalar_is_zero(c->dt, &c->beta), "the GEMM");
    to_reference(c, reference, arg);
}

/* ---- p?syrk_ / p?herk_ / p?syr2k_ / p?her2k_ --------------------------------------------- */

void glue_syrk_route(const struct glue_call *c, void (*reference)(void *), void *arg) {
    tess_grid_t *g = glue_route_grid(c);
    bool herm = c->kind == GLUE_HERK || c->kind == GLUE_HER2K;
    bool two = c->kind == GLUE_SYR2K || c->kind == GLUE_HER2K;
    bool nowork = c->k == 0 || tess__scalar_is_zero(c->dt, &c->alpha);
    struct glue_tmp W = {0};
    bool ok = true;
    if (g)
        ok = glue_devices_ready() && glue_aux(c->dt)->tradd &&
             (nowork || glue_tmp_aligned(&W, c, c->dc, c->ic, c->jc, c->n, c->n));
    enum glue_way way = g ? glue_route_way(g, c, ok) : GLUE_REFERENCE;
    if (way != GLUE_TESSERA) {
        glue_tmp_free(&W);
        if (way == GLUE_REFERENCE) to_reference(c, reference, arg);
        return;
    }
    if (!nowork) {
        /* op(X) op(Y)^T is ('N', 'T') for TRANS = 'N', ('T', 'N') otherwise (^H: 'C') */
        char g1 = c->ta == 'N' ? 'N' : c->ta, g2 = c->ta == 'N' ? (herm ? 'C' : 'T') : 'N';
        const void *Y = two ? c->B : c->A;
        f_int iy = two ? c->ib : c->ia, jy = two ? c->jb : c->ja;
        const f_int *dy = two ? c->db : c->da;
        if (two) glue_tmp_hold(&W, c); /* W stays on the devices between its two GEMMs */
        int st = glue_pgemm(g, c, g1, g2, c->n, c->n, c->k, &c->alpha,
                            GLUE_SUB(c->A, c->ia, c->ja, c->da), GLUE_SUB(Y, iy, jy, dy), zero(),
                            GLUE_SUB(W.buf, 0, 0, W.desc));
        if (st == TESS_OK && two) {
            tess__scalar_t a2 = c->alpha; /* HER2K: conj(alpha) op(B) op(A)^H */
            if (herm && c->dt == TESS_C) a2.c[1] = -a2.c[1];
            if (herm && c->dt == TESS_Z) a2.z[1] = -a2.z[1];
            st = glue_pgemm(
                g, c, g1, g2, c->n, c->n, c->k, &a2, GLUE_SUB(c->B, c->ib, c->jb, c->db),
                GLUE_SUB(c->A, c->ia, c->ja, c->da), one(c), GLUE_SUB(W.buf, 0, 0, W.desc));
        }
        int ust = two ? glue_tmp_unhold(&W, g) : TESS_OK;
        if (st == TESS_OK) st = ust;
        if (st != TESS_OK) {
            /* C not touched yet */
            glue_tmp_free(&W);
            glue_route_failed(c, st, true, "the GEMM into the temporary");
            to_reference(c, reference, arg);
            return;
        }
    }
    if (herm && !tess__scalar_is_zero(c->dt, &c->beta))
        zero_imag_diag(c, c->dc, c->C, c->ic, c->jc, c->n);
    if (nowork) /* the triangle scaled by beta (zeroed, not read, for beta = 0); A not read */
        glue_tradd(c, c->uplo, 'N', c->n, c->n, zero(), c->C, c->ic, c->jc, c->dc, &c->beta, c->C,
                   c->ic, c->jc, c->dc);
    else
        glue_tradd(c, c->uplo, 'N', c->n, c->n, one(c), W.buf, 0, 0, W.desc, &c->beta, c->C, c->ic,
                   c->jc, c->dc);
    if (herm) zero_imag_diag(c, c->dc, c->C, c->ic, c->jc, c->n);
    glue_tmp_free(&W);
    glue_count_tessera(c->kind, c->dt, glue_call_flops(c));
}

/* ---- p?trmm_ ------------------------------------------------------------------------------ */

void glue_trmm_route(const struct glue_call *c, void (*reference)(void *), void *arg) {
    tess_grid_t *g = glue_route_grid(c);
    bool alpha0 = tess__scalar_is_zero(c->dt, &c->alpha);
    f_int ka = glue_order_a(c);
    struct glue_tmp T = {0}, W = {0};
    bool ok = true;
    if (g && !alpha0) {
        const struct glue_aux *X = glue_aux(c->dt);
        ok = glue_devices_ready() && X->tradd && X->geadd &&
             glue_tmp_aligned(&T, c, c->da, c->ia, c->ja, ka, ka) &&
             glue_tmp_aligned(&W, c, c->dc, c->ic, c->jc, c->m, c->n);
    }
    enum glue_way way = g ? glue_route_way(g, c, ok) : GLUE_REFERENCE;
    if (way != GLUE_TESSERA) {
        glue_tmp_free(&T);
        glue_tmp_free(&W);
        if (way == GLUE_REFERENCE) to_reference(c, reference, arg);
        return;
    }
    int st;
    if (alpha0) {
        /* sub(B) = 0 without reading A or B (PBLAS: PB_Cplapad) */
        st = glue_pgemm(g, c, 'N', 'N', c->m, c->n, 0, zero(), GLUE_SUB(c->A, c->ia, c->ja, c->da),
                        GLUE_SUB(c->C, c->ic, c->jc, c->dc), zero(),
                        GLUE_SUB(c->C, c->ic, c->jc, c->dc));
    } else {
        glue_tradd(c, c->uplo, 'N', ka, ka, one(c), c->A, c->ia, c->ja, c->da, zero(), T.buf, 0, 0,
                   T.desc);
        if (c->diag == 'U') {
            size_t es = tess__dtypes[c->dt].size;
            for (f_int d = 0; d < ka; d++) {
                void *pt = glue_elem(c, T.desc, T.buf, d, d);
                if (pt) memcpy(pt, one(c), es);
            }
        }
        glue_geadd(c, c->m, c->n, one(c), c->C, c->ic, c->jc, c->dc, zero(), W.buf, 0, 0, W.desc);
        if (c->side == 'L')
            st = glue_pgemm(g, c, c->ta, 'N', c->m, c->n, ka, &c->alpha,
                            GLUE_SUB(T.buf, 0, 0, T.desc), GLUE_SUB(W.buf, 0, 0, W.desc), zero(),
                            GLUE_SUB(c->C, c->ic, c->jc, c->dc));
        else
            st = glue_pgemm(g, c, 'N', c->ta, c->m, c->n, ka, &c->alpha,
                            GLUE_SUB(W.buf, 0, 0, W.desc), GLUE_SUB(T.buf, 0, 0, T.desc), zero(),
                            GLUE_SUB(c->C, c->ic, c->jc, c->dc));
        if (st != TESS_OK) /* put sub(B) back: its input is intact in W */
            glue_geadd(c, c->m, c->n, one(c), W.buf, 0, 0, W.desc, zero(), c->C, c->ic, c->jc,
                       c->dc);
    }
    glue_tmp_free(&T);
    glue_tmp_free(&W);
    if (st == TESS_OK) {
        glue_count_tessera(c->kind, c->dt, glue_call_flops(c));
        return;
    }
    glue_route_failed(c, st, true, alpha0 ? "zeroing sub(B)" : "the GEMM");
    to_reference(c, reference, arg);
}
