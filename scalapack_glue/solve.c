/* scalapack_glue/solve.c: the ScaLAPACK solvers p?potrf_, p?potrs_, p?posv_, p?getrf_,
 * p?getrs_, p?gesv_ (s, d, c, z; Fortran routines: the hidden CHARACTER lengths are not
 * read, and 1 is passed on to the reference). Where a call goes:
 * - a 1 x 1 BLACS grid: tessera's node runtime (tess_?potrf ... on the local array, which
 *   holds the whole matrix there);
 * - p?potrf_ on a bigger grid: the distributed Cholesky (ppotrf.c);
 * - p?getrf_ on a grid of several processes, the grid's transport the device one on one
 *   node, sub(A) starting a block: the distributed LU (pgetrf.c; on several process rows
 *   moved to one and back, pgetrf_grid.c);
 * - anything else: the reference routine underneath with its own arguments, which checks
 *   and reports them as ScaLAPACK does, counted as a reference call.
 * Tessera takes a call only when it passes checks that are a strict subset of ScaLAPACK's:
 * 9-entry descriptors of the grid's context, LLD_ >= max(1, LOCr(M_)), square blocks (MB_ =
 * NB_), IA - 1 and JA - 1 multiples of the block (B: IB - 1 and JB - 1 multiples of its
 * blocks, MB_B = MB_A), the submatrices inside their matrices, nothing empty, and the
 * routing policy (TESSERA_SCALAPACK_FORCE, or the sizes against MIN_DIM and MIN_VOLUME as
 * for PBLAS). Every check but LLD_'s (and p?getrs_'s pivots, one process) reads global
 * arguments, so the processes of a grid decide alike; the distributed path agrees on the
 * rest before it writes anything. IPIV is ScaLAPACK's: indexed by local row, holding global
 * rows; on 1 x 1 IPIV(IA - 1 + i) = IA - 1 + LAPACK's pivot i. A failure inside tessera
 * after A or B was written stops the job (the input is lost; glue_route_failed).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

/* One call, its arguments as given (Fortran: everything by reference). */
struct sv {
    enum glue_kind kind;
    tess_dtype_t dt;
    const char *uplo, *trans; /* NULL where the routine takes none */
    const f_int *m, *n, *nrhs;
    void *A;
    const f_int *ia, *ja, *da;
    f_int *ipiv;
    void *B;
    const f_int *ib, *jb, *db;
    f_int *info;
};

/* A 9-entry descriptor of context ctxt on a P x Q grid holding rows x cols from (i, j)
 * (1-based), aligned to its blocks; square blocks when square. *lld_ok: LLD_ >= max(1,
 * LOCr(M_)) on process row r, the one entry that differs across the processes. */
static bool desc_ok(const f_int *d, f_int ctxt, f_int P, f_int Q, f_int r, f_int i, f_int j,
                    f_int rows, f_int cols, bool square, bool *lld_ok) {
    if (!d || d[0] != GLUE_BLOCK_CYCLIC_2D || d[1] != ctxt) return false;
    f_int M = d[2], N = d[3], MB = d[4], NB = d[5], RSRC = d[6], CSRC = d[7];
    if (M < 0 || N < 0 || MB < 1 || NB < 1 || RSRC < 0 || RSRC >= P || CSRC < 0 || CSRC >= Q)
        return false;
    if (square && MB != NB) return false;
    struct tess__comm_bc rb = {.n = M, .ib = MB, .nb = MB, .src = RSRC, .np = P};
    *lld_ok = *lld_ok && d[8] >= GLUE_MAX(1, tess__comm_bc_numroc(&rb, r));
    return i >= 1 && j >= 1 && (int64_t)i - 1 + rows <= M && (int64_t)j - 1 + cols <= N &&
           (i - 1) % MB == 0 && (j - 1) % NB == 0;
}

static char *sub(const struct sv *s, void *X, const f_int *d, f_int i, f_int j) {
    size_t es = tess__dtypes[s->dt].size;
    return (char *)X + ((size_t)(i - 1) + (size_t)(j - 1) * (size_t)d[8]) * es;
}

/* Multiply-adds of the call (the counters' flops are these times flop_mul). */
static double madds(const struct sv *s) {
    double m = s->m ? *s->m : *s->n, n = *s->n, r = s->nrhs ? *s->nrhs : 0;
    double lu = m >= n ? (m * n * n - n * n * n / 3) / 2 : (n * m * m - m * m * m / 3) / 2;
    switch (s->kind) {
    case GLUE_POTRF: return n * n * n / 6;
    case GLUE_POSV: return n * n * n / 6 + n * n * r;
    case GLUE_GETRF: return lu;
    case GLUE_GESV: return lu + n * n * r;
    default: return n * n * r; /* the two triangular solves of POTRS, GETRS */
    }
}

static bool worth(const struct sv *s) {
    const struct glue_knobs *k = glue_knobs();
    if (k->force) return true;
    /* a factorization's sizes (posv, gesv: the factorization's), or a solve's */
    bool solve = s->kind == GLUE_POTRS || s->kind == GLUE_GETRS;
    double m = s->m ? *s->m : *s->n, n = *s->n, r = solve ? *s->nrhs : n;
    double d = GLUE_MIN(GLUE_MIN(m, n), r);
    return d >= (double)k->min_dim && m * n * r >= k->min_volume;
}

/* The global checks, the same on every process of the grid (P x Q, this process in row r):
 * letters, sizes, the descriptors but for LLD_, which *local_ok says. */
static bool args_ok(const struct sv *s, f_int P, f_int Q, f_int r, bool *local_ok) {
    *local_ok = true;
    if (!glue_knobs()->ok || !s->da) return false;
    if (s->uplo && glue_upcase(*s->uplo) != 'U' && glue_upcase(*s->uplo) != 'L') return false;
    if (s->trans && glue_upcase(*s->trans) != 'N' && glue_upcase(*s->trans) != 'T' &&
        glue_upcase(*s->trans) != 'C')
        return false;
    f_int m = s->m ? *s->m : *s->n, n = *s->n, nrhs = s->nrhs ? *s->nrhs : 1;
    if (m < 1 || n < 1 || nrhs < 1) return false;
    f_int ctxt = s->da[1];
    if (!desc_ok(s->da, ctxt, P, Q, r, *s->ia, *s->ja, m, n, true, local_ok)) return false;
    /* p?getrf_'s quick return for M_A = 1 sets IPIV(1) = 1 and INFO = 0 whatever A(1, 1)
     * is (p?gesv_ goes through it): the reference keeps that */
    if ((s->kind == GLUE_GETRF || s->kind == GLUE_GESV) && s->da[2] == 1) return false;
    if (s->B && (!desc_ok(s->db, ctxt, P, Q, r, *s->ib, *s->jb, n, nrhs, false, local_ok) ||
                 s->db[4] != s->da[4]))
        return false;
    *local_ok = *local_ok && s->A && s->info &&
                (s->kind != GLUE_GETRF && s->kind != GLUE_GETRS && s->kind != GLUE_GESV
                     ? true
                     : !!s->ipiv);
    return worth(s);
}

/* Whether this process's pivots (p?getrs_) name rows of sub(A). */
static bool pivots_ok(const struct sv *s) {
    if (s->kind != GLUE_GETRS) return true;
    for (f_int i = 0, n = *s->n; i < n; i++) {
        f_int p = s->ipiv[*s->ia - 1 + i] - (*s->ia - 1);
        if (p < 1 || p > n) return false;
    }
    return true;
}

/* The call on the node runtime: TESS_OK with *info set, or tessera's status. */
static int run(const struct sv *s) {
    const tess_dtype_t dt = s->dt;
    const f_int n = *s->n, m = s->m ? *s->m : n, nrhs = s->nrhs ? *s->nrhs : 0;
    const int64_t lda = s->da[8], ldb = s->B ? s->db[8] : 1, off = *s->ia - 1;
    char *A = sub(s, s->A, s->da, *s->ia, *s->ja);
    char *B = s->B ? sub(s, s->B, s->db, *s->ib, *s->jb) : NULL;
    tess_uplo_t uplo = s->uplo && glue_upcase(*s->uplo) == 'U' ? TESS_UPPER : TESS_LOWER;
    tess_trans_t tr = !s->trans || glue_upcase(*s->trans) == 'N' ? TESS_NO_TRANS
                      : glue_upcase(*s->trans) == 'T'            ? TESS_TRANS
                                                                 : TESS_CONJ_TRANS;
    int64_t info = 0, k = GLUE_MIN(m, n);
    int64_t *piv = NULL;
    if (s->ipiv && !(piv = malloc(sizeof *piv * (size_t)k)))
        return tess__fail(TESS_ENOMEM, "p?%s_: pivots: out of host memory",
                          glue_kind_name[s->kind]);
    if (s->kind == GLUE_GETRS)
        for (int64_t i = 0; i < k; i++) piv[i] = s->ipiv[off + i] - off;
    int st;
    tess__autostart_enter();
    switch (s->kind) {
    case GLUE_POTRF: st = tess_potrf(dt, TESS_COL_MAJOR, uplo, n, A, lda, &info); break;
    case GLUE_POTRS:
        st = tess_potrs(dt, TESS_COL_MAJOR, uplo, n, nrhs, A, lda, B, ldb, &info);
        break;
    case GLUE_POSV: st = tess_posv(dt, TESS_COL_MAJOR, uplo, n, nrhs, A, lda, B, ldb, &info); break;
    case GLUE_GETRF: st = tess_getrf(dt, TESS_COL_MAJOR, m, n, A, lda, piv, &info); break;
    case GLUE_GETRS:
        st = tess_getrs(dt, TESS_COL_MAJOR, tr, n, nrhs, A, lda, piv, B, ldb, &info);
        break;
    default: st = tess_gesv(dt, TESS_COL_MAJOR, n, nrhs, A, lda, piv, B, ldb, &info); break;
    }
    tess__autostart_leave();
    if (!st && (s->kind == GLUE_GETRF || s->kind == GLUE_GESV))
        for (int64_t i = 0; i < k; i++) s->ipiv[off + i] = (f_int)(off + piv[i]);
    free(piv);
    if (!st) *s->info = (f_int)info;
    return st;
}

/* Route call s; reference(s) runs the reference routine with the call's own arguments. */
static void route(const struct sv *s, void (*reference)(const struct sv *)) {
    double flops = madds(s) * tess__dtypes[s->dt].flop_mul;
    const struct glue_syms *S = glue_syms();
    f_int P = -1, Q = -1, r = -1, c = -1;
    if (s->da && S->gridinfo) S->gridinfo(s->da[1], &P, &Q, &r, &c);
    bool local_ok, ok = P >= 1 && Q >= 1 && args_ok(s, P, Q, r, &local_ok);
    struct glue_call gc = {.kind = s->kind, .dt = s->dt, .ctxt = s->da ? s->da[1] : -1};
    if (ok && P == 1 && Q == 1) {
        /* one process: the node runtime on the local array, the whole matrix */
        if (local_ok && pivots_ok(s) && glue_devices_ready()) {
            int st = run(s);
            if (st == TESS_OK) {
                glue_count_tessera(s->kind, s->dt, flops);
                return;
            }
            glue_route_failed(&gc, st, false, "the node runtime's factorization or solve");
        }
    } else if (ok && s->kind == GLUE_POTRF) {
        /* several: the distributed Cholesky, every process or none (ppotrf.c) */
        tess_grid_t *g = glue_context_grid(s->da[1]);
        if (g) {
            int64_t info = 0;
            bool wrote = false;
            int st = glue_ppotrf(g, s->dt, glue_upcase(*s->uplo), *s->n, s->A, *s->ia - 1,
                                 *s->ja - 1, s->da, local_ok && glue_devices_ready(), &info,
                                 &wrote);
            if (st == TESS_OK) {
                *s->info = (f_int)info;
                glue_count_tessera(s->kind, s->dt, flops);
                return;
            }
            if (wrote) glue_route_failed(&gc, st, false, "the distributed Cholesky");
        }
    } else if (ok && s->kind == GLUE_GETRF) {
        /* the distributed LU where the grid's transport allows: on one process row
         * (pgetrf.c), or moved to one and back (pgetrf_grid.c) */
        tess_grid_t *g = glue_context_grid(s->da[1]);
        if (g) {
            int64_t info = 0;
            bool wrote = false, lok = local_ok && glue_devices_ready();
            int st = (P == 1 ? glue_pgetrf : glue_pgetrf_grid)(g, s->dt, *s->m, *s->n, s->A,
                                                               *s->ia - 1, *s->ja - 1, s->da, lok,
                                                               s->ipiv, &info, &wrote);
            if (st == TESS_OK) {
                *s->info = (f_int)info;
                glue_count_tessera(s->kind, s->dt, flops);
                return;
            }
            if (lok && st != TESS_ENOSYS) /* (not written: the input as it was) */
                glue_route_failed(&gc, st, !wrote, "the distributed LU");
        }
    }
    glue_count_reference(s->kind, s->dt, flops);
    reference(s);
}

/* ---- the entry points: p?potrf_, p?potrs_, p?posv_ (UPLO), p?getrf_, p?getrs_ (TRANS),
 *      p?gesv_ ------------------------------------------------------------------------------ */

typedef void potrf_fn(const char *, const f_int *, void *, const f_int *, const f_int *,
                      const f_int *, f_int *, size_t);
typedef void potrs_fn(const char *, const f_int *, const f_int *, void *, const f_int *,
                      const f_int *, const f_int *, void *, const f_int *, const f_int *,
                      const f_int *, f_int *, size_t);
typedef void getrf_fn(const f_int *, const f_int *, void *, const f_int *, const f_int *,
                      const f_int *, f_int *, f_int *);
typedef void getrs_fn(const char *, const f_int *, const f_int *, void *, const f_int *,
                      const f_int *, const f_int *, f_int *, void *, const f_int *, const f_int *,
                      const f_int *, f_int *, size_t);
typedef void gesv_fn(const f_int *, const f_int *, void *, const f_int *, const f_int *,
                     const f_int *, f_int *, void *, const f_int *, const f_int *, const f_int *,
                     f_int *);

/* the reference routine of each kind and precision, looked up at its first use */
static const char *const ref_name[6][4] = {{"pspotrf_", "pdpotrf_", "pcpotrf_", "pzpotrf_"},
                                           {"pspotrs_", "pdpotrs_", "pcpotrs_", "pzpotrs_"},
                                           {"psposv_", "pdposv_", "pcposv_", "pzposv_"},
                                           {"psgetrf_", "pdgetrf_", "pcgetrf_", "pzgetrf_"},
                                           {"psgetrs_", "pdgetrs_", "pcgetrs_", "pzgetrs_"},
                                           {"psgesv_", "pdgesv_", "pcgesv_", "pzgesv_"}};

static void *ref_of(const struct sv *s) {
    static _Atomic(void *) refs[6][4];
    int k = s->kind - GLUE_POTRF;
    void *r = atomic_load_explicit(&refs[k][s->dt], memory_order_acquire);
    if (!r) {
        r = glue_reference(ref_name[k][s->dt]);
        atomic_store_explicit(&refs[k][s->dt], r, memory_order_release);
    }
    return r;
}

static void reference(const struct sv *s) {
    void *f = ref_of(s);
    switch (s->kind) {
    case GLUE_POTRF: ((potrf_fn *)f)(s->uplo, s->n, s->A, s->ia, s->ja, s->da, s->info, 1); break;
    case GLUE_POTRS:
    case GLUE_POSV:
        ((potrs_fn *)f)(s->uplo, s->n, s->nrhs, s->A, s->ia, s->ja, s->da, s->B, s->ib, s->jb,
                        s->db, s->info, 1);
        break;
    case GLUE_GETRF:
        ((getrf_fn *)f)(s->m, s->n, s->A, s->ia, s->ja, s->da, s->ipiv, s->info);
        break;
    case GLUE_GETRS:
        ((getrs_fn *)f)(s->trans, s->n, s->nrhs, s->A, s->ia, s->ja, s->da, s->ipiv, s->B, s->ib,
                        s->jb, s->db, s->info, 1);
        break;
    default:
        ((gesv_fn *)f)(s->n, s->nrhs, s->A, s->ia, s->ja, s->da, s->ipiv, s->B, s->ib, s->jb, s->db,
                       s->info);
        break;
    }
}

/* One call of each argument list (p?potrs_ and p?posv_ share one), routed. */
static void potrf_call(tess_dtype_t dt, const char *uplo, const f_int *n, void *A, const f_int *ia,
                       const f_int *ja, const f_int *da, f_int *info) {
    struct sv s = {.kind = GLUE_POTRF, .dt = dt, .uplo = uplo, .n = n, .A = A, .ia = ia};
    s.ja = ja, s.da = da, s.info = info;
    route(&s, reference);
}
static void potrs_call(enum glue_kind kind, tess_dtype_t dt, const char *uplo, const f_int *n,
                       const f_int *nrhs, void *A, const f_int *ia, const f_int *ja,
                       const f_int *da, void *B, const f_int *ib, const f_int *jb, const f_int *db,
                       f_int *info) {
    struct sv s = {.kind = kind, .dt = dt, .uplo = uplo, .n = n, .nrhs = nrhs, .A = A};
    s.ia = ia, s.ja = ja, s.da = da, s.B = B, s.ib = ib, s.jb = jb, s.db = db, s.info = info;
    route(&s, reference);
}
static void getrf_call(tess_dtype_t dt, const f_int *m, const f_int *n, void *A, const f_int *ia,
                       const f_int *ja, const f_int *da, f_int *ipiv, f_int *info) {
    struct sv s = {.kind = GLUE_GETRF, .dt = dt, .m = m, .n = n, .A = A, .ia = ia, .ja = ja};
    s.da = da, s.ipiv = ipiv, s.info = info;
    route(&s, reference);
}
/* p?getrs_ (trans) and p?gesv_ (trans NULL) */
static void getrs_call(enum glue_kind kind, tess_dtype_t dt, const char *trans, const f_int *n,
                       const f_int *nrhs, void *A, const f_int *ia, const f_int *ja,
                       const f_int *da, f_int *ipiv, void *B, const f_int *ib, const f_int *jb,
                       const f_int *db, f_int *info) {
    struct sv s = {.kind = kind, .dt = dt, .trans = trans, .n = n, .nrhs = nrhs, .A = A};
    s.ia = ia, s.ja = ja, s.da = da, s.ipiv = ipiv, s.B = B, s.ib = ib, s.jb = jb, s.db = db;
    s.info = info;
    route(&s, reference);
}

#define ENTRIES(p, DT)                                                                           \
    GLUE_EXPORT void p##potrf_(const char *uplo, const f_int *n, void *A, const f_int *ia,       \
                               const f_int *ja, const f_int *da, f_int *info) {                  \
        potrf_call(DT, uplo, n, A, ia, ja, da, info);                                            \
    }                                                                                            \
    GLUE_EXPORT void p##potrs_(const char *uplo, const f_int *n, const f_int *nrhs, void *A,     \
                               const f_int *ia, const f_int *ja, const f_int *da, void *B,       \
                               const f_int *ib, const f_int *jb, const f_int *db, f_int *info) { \
        potrs_call(GLUE_POTRS, DT, uplo, n, nrhs, A, ia, ja, da, B, ib, jb, db, info);           \
    }                                                                                            \
    GLUE_EXPORT void p##posv_(const char *uplo, const f_int *n, const f_int *nrhs, void *A,      \
                              const f_int *ia, const f_int *ja, const f_int *da, void *B,        \
                              const f_int *ib, const f_int *jb, const f_int *db, f_int *info) {  \
        potrs_call(GLUE_POSV, DT, uplo, n, nrhs, A, ia, ja, da, B, ib, jb, db, info);            \
    }                                                                                            \
    GLUE_EXPORT void p##getrf_(const f_int *m, const f_int *n, void *A, const f_int *ia,         \
                               const f_int *ja, const f_int *da, f_int *ipiv, f_int *info) {     \
        getrf_call(DT, m, n, A, ia, ja, da, ipiv, info);                                         \
    }                                                                                            \
    GLUE_EXPORT void p##getrs_(const char *trans, const f_int *n, const f_int *nrhs, void *A,    \
                               const f_int *ia, const f_int *ja, const f_int *da, f_int *ipiv,   \
                               void *B, const f_int *ib, const f_int *jb, const f_int *db,       \
                               f_int *info) {                                                    \
        getrs_call(GLUE_GETRS, DT, trans, n, nrhs, A, ia, ja, da, ipiv, B, ib, jb, db, info);    \
    }                                                                                            \
    GLUE_EXPORT void p##gesv_(const f_int *n, const f_int *nrhs, void *A, const f_int *ia,       \
                              const f_int *ja, const f_int *da, f_int *ipiv, void *B,            \
                              const f_int *ib, const f_int *jb, const f_int *db, f_int *info) {  \
        getrs_call(GLUE_GESV, DT, NULL, n, nrhs, A, ia, ja, da, ipiv, B, ib, jb, db, info);      \
    }
ENTRIES(ps, TESS_S)
ENTRIES(pd, TESS_D)
ENTRIES(pc, TESS_C)
ENTRIES(pz, TESS_Z)
