/* scalapack_glue/trsm.c: p?trsm_ through tessera's distributed GEMM: a blocked solve whose
 * diagonal blocks of order TESSERA_SCALAPACK_TRSM_BLOCK are inverted (ScaLAPACK's p?trtri),
 * so all of its O(n^3) work but the inversions is GEMMs (docs/scalapack.md, "TRSM"). One
 * generic path for the four precisions. Step k: Tinv = the inverted triangle of A_kk,
 * W = B_k (an exact copy), B_k = s op(Tinv) W (or s W op(Tinv)), then one GEMM updates the
 * blocks still to solve; s = alpha at the first step, 1 after, so every block of B is
 * scaled once. alpha = 0 sets sub(B) = 0 without reading A.
 * Invariants: every process checks before computing that the temporaries can be had and
 * (DIAG = 'N') that no diagonal entry of sub(A) it holds is 0; any "no" sends the call to the
 * reference on every process. A failure in the first GEMM puts B_0 back from W and the
 * reference computes the call; a later one has lost B's input and stops the job.
 * Numerics: the error of X_k grows with cond(A_kk) where a substitution is backward stable;
 * a smaller block (down to 1: plain blocked substitution) narrows the gap.
 */
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "level3.h"

static const void *one(const struct glue_call *c) { return tess__scalar_one(c->dt); }
static const void *zero(void) { return tess__scalar_zero(); }

static void to_reference(const struct glue_call *c, void (*reference)(void *), void *arg) {
    glue_count_reference(c->kind, c->dt, glue_call_flops(c));
    reference(arg);
}

/* The steps' geometry. */
struct plan {
    f_int ka, bs, nblk;
    bool forward;
    f_int nbt; /* Tinv's block size */
};

static void step_block(const struct plan *p, f_int step, f_int *k0, f_int *bk) {
    f_int b = p->forward ? step : p->nblk - 1 - step;
    *k0 = b * p->bs;
    *bk = GLUE_MIN(p->bs, p->ka - *k0);
}

/* W's placement for step k: B_k's rows (SIDE = 'L') or columns (SIDE = 'R'). */
static bool plan_w(const struct glue_call *c, f_int k0, f_int bk, f_int d[GLUE_DLEN_],
                   size_t *bytes) {
    if (c->side == 'L')
        return glue_tmp_plan_aligned(c, c->dc, c->ic + k0, c->jc, bk, c->n, d, bytes);
    return glue_tmp_plan_aligned(c, c->dc, c->ic, c->jc + k0, c->m, bk, d, bytes);
}

/* No diagonal entry of sub(A) held here is exactly 0. */
static bool diag_nonzero(const struct glue_call *c, f_int ka) {
    for (f_int d = 0; d < ka; d++) {
        const void *p = glue_elem(c, c->da, c->A, c->ia + d, c->ja + d);
        if (!p) continue;
        tess__scalar_t v;
        tess__scalar_load(c->dt, &v, p);
        if (tess__scalar_is_zero(c->dt, &v)) return false;
    }
    return true;
}

/* One step; TESS_OK or tessera's status. *wrote: B was written (its input is lost unless
 * put back). */
static int step_run(tess_grid_t *g, const struct glue_call *c, const struct plan *p, f_int step,
                    void *tbuf, size_t tcap, void *wbuf, size_t wcap, bool *wrote) {
    f_int k0, bk;
    step_block(p, step, &k0, &bk);
    const void *s = step == 0 ? (const void *)&c->alpha : one(c);
    size_t es = tess__dtypes[c->dt].size;

    /* 1. Tinv = inv(triangle of A_kk) */
    f_int td[GLUE_DLEN_], wd[GLUE_DLEN_];
    size_t tb, wb;
    glue_tmp_plan_square(c, bk, p->nbt, td, &tb);
    memset(tbuf, 0, GLUE_MIN(tb, tcap));
    glue_tradd(c, c->uplo, 'N', bk, bk, one(c), c->A, c->ia + k0, c->ja + k0, c->da, zero(), tbuf,
               0, 0, td);
    if (glue_trtri(c, c->uplo, c->diag, bk, tbuf, 0, 0, td) != 0)
        return tess__fail(TESS_EINVAL, "p?trtri: a diagonal block of A is singular");
    if (c->diag == 'U')
        for (f_int d = 0; d < bk; d++) {
            void *pt = glue_elem(c, td, tbuf, d, d);
            if (pt) memcpy(pt, one(c), es);
        }

    /* 2. W = B_k */
    plan_w(c, k0, bk, wd, &wb);
    memset(wbuf, 0, GLUE_MIN(wb, wcap));
    bool left = c->side == 'L';
    f_int bi = left ? c->ic + k0 : c->ic, bj = left ? c->jc : c->jc + k0;
    f_int bm = left ? bk : c->m, bn = left ? c->n : bk;
    glue_geadd(c, bm, bn, one(c), c->C, bi, bj, c->dc, zero(), wbuf, 0, 0, wd);

    /* 3. X_k = s op(Tinv) W  or  s W op(Tinv) */
    *wrote = true;
    int st = left ? glue_pgemm(g, c, c->ta, 'N', bk, c->n, bk, s, GLUE_SUB(tbuf, 0, 0, td),
                               GLUE_SUB(wbuf, 0, 0, wd), zero(), GLUE_SUB(c->C, bi, bj, c->dc))
                  : glue_pgemm(g, c, 'N', c->ta, c->m, bk, bk, s, GLUE_SUB(wbuf, 0, 0, wd),
                               GLUE_SUB(tbuf, 0, 0, td), zero(), GLUE_SUB(c->C, bi, bj, c->dc));
    if (st != TESS_OK) {
        if (step == 0) { /* only B_0 was written: put it back */
            glue_geadd(c, bm, bn, one(c), wbuf, 0, 0, wd, zero(), c->C, bi, bj, c->dc);
            *wrote = false;
        }
        return st;
    }

    /* 4. the rest of B: rows/columns [r0, r0 + nr) */
    f_int r0 = p->forward ? k0 + bk : 0, nr = p->forward ? p->ka - (k0 + bk) : k0;
    if (nr == 0) return TESS_OK;
    tess__scalar_t m1 = tess__l3_minus_one(c->dt);
    if (left) {
        /* op(A)(r0 : r0 + nr, k0 : k0 + bk) */
        f_int ai = c->ta == 'N' ? c->ia + r0 : c->ia + k0;
        f_int aj = c->ta == 'N' ? c->ja + k0 : c->ja + r0;
        return glue_pgemm(g, c, c->ta, 'N', nr, c->n, bk, &m1, GLUE_SUB(c->A, ai, aj, c->da),
                          GLUE_SUB(c->C, bi, bj, c->dc), s,
                          GLUE_SUB(c->C, c->ic + r0, c->jc, c->dc));
    }
    /* op(A)(k0 : k0 + bk, r0 : r0 + nr) */
    f_int ai = c->ta == 'N' ? c->ia + k0 : c->ia + r0;
    f_int aj = c->ta == 'N' ? c->ja + r0 : c->ja + k0;
    return glue_pgemm(g, c, 'N', c->ta, c->m, nr, bk, &m1, GLUE_SUB(c->C, bi, bj, c->dc),
                      GLUE_SUB(c->A, ai, aj, c->da), s, GLUE_SUB(c->C, c->ic, c->jc + r0, c->dc));
}

void glue_trsm_route(const struct glue_call *c, void (*reference)(void *), void *arg) {
    tess_grid_t *g = glue_route_grid(c);
    bool alpha0 = tess__scalar_is_zero(c->dt, &c->alpha);
    struct plan p = {.ka = glue_order_a(c)};
    p.bs = (f_int)GLUE_MAX(1, GLUE_MIN((int64_t)p.ka, glue_knobs()->trsm_block)); /* 0: knobs bad */
    p.nblk = p.ka > 0 ? (p.ka + p.bs - 1) / p.bs : 0;
    bool lower = (c->uplo == 'L') == (c->ta == 'N');
    p.forward = c->side == 'L' ? lower : !lower;
    p.nbt = GLUE_MAX(1, GLUE_MIN(c->da[GLUE_MB_], c->da[GLUE_NB_]));

    void *tbuf = NULL, *wbuf = NULL;
    size_t tcap = 0, wcap = 0;
    bool ok = true;
    if (g && !alpha0) {
        const struct glue_aux *X = glue_aux(c->dt);
        f_int d[GLUE_DLEN_];
        ok = glue_devices_ready() && X->tradd && X->geadd && X->trtri &&
             glue_tmp_plan_square(c, p.bs, p.nbt, d, &tcap);
        for (f_int s = 0; ok && s < p.nblk; s++) {
            f_int k0, bk;
            size_t b;
            step_block(&p, s, &k0, &bk);
            ok = plan_w(c, k0, bk, d, &b);
            wcap = GLUE_MAX(wcap, b);
        }
        ok = ok && (tbuf = malloc(tcap)) && (wbuf = malloc(wcap)) &&
             (c->diag == 'U' || diag_nonzero(c, p.ka));
    }
    enum glue_way way = g ? glue_route_way(g, c, ok) : GLUE_REFERENCE;
    if (way != GLUE_TESSERA) {
        free(tbuf);
        free(wbuf);
        if (way == GLUE_REFERENCE) to_reference(c, reference, arg);
        return;
    }
    int st = TESS_OK;
    bool wrote = false;
    if (alpha0) {
        /* sub(B) = 0, neither A nor B read; if it fails, the reference zeroes it again */
        st = glue_pgemm(g, c, 'N', 'N', c->m, c->n, 0, zero(), GLUE_SUB(c->A, c->ia, c->ja, c->da),
                        GLUE_SUB(c->C, c->ic, c->jc, c->dc), zero(),
                        GLUE_SUB(c->C, c->ic, c->jc, c->dc));
    } else {
        for (f_int s = 0; st == TESS_OK && s < p.nblk; s++) {
            bool w = false;
            st = step_run(g, c, &p, s, tbuf, tcap, wbuf, wcap, &w);
            wrote = wrote || w;
        }
    }
    free(tbuf);
    free(wbuf);
    if (st == TESS_OK) {
        glue_count_tessera(c->kind, c->dt, glue_call_flops(c));
        return;
    }
    glue_route_failed(c, st, !wrote, alpha0 ? "zeroing sub(B)" : "the blocked solve");
    to_reference(c, reference, arg);
}
