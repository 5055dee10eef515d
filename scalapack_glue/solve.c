/* scalapack_glue/solve.c: the ScaLAPACK solvers p?potrf_, p?potrs_, p?posv_, p?getrf_,
 * p?getrs_, p?gesv_ (s, d, c, z; Fortran routines: the hidden CHARACTER lengths are not
 * read, and 1 is passed on to the reference). A call on a 1 x 1 BLACS grid whose arguments
 * pass the checks below runs on tessera's node runtime (tess_?potrf ... on the local array,
 * which holds the whole matrix there); every other call goes to the reference routine
 * underneath with its own arguments, which checks and reports them as ScaLAPACK does (the
 * distributed factorizations are the next step of issue 25), counted as a reference call.
 * The checks are a strict subset of ScaLAPACK's own: 9-entry descriptors of the grid's
 * context with source process 0 and LLD >= max(1, M_), square blocks (MB_ = NB_), IA - 1
 * and JA - 1 multiples of the block (B: IB - 1 and JB - 1 multiples of its blocks, MB_B =
 * MB_A), the submatrices inside their matrices, nothing empty, and the routing policy
 * (TESSERA_SCALAPACK_FORCE, or the sizes against MIN_DIM and MIN_VOLUME as for PBLAS).
 * IPIV is ScaLAPACK's: indexed by local row, holding global rows; on 1 x 1 IPIV(IA - 1 + i)
 * = IA - 1 + LAPACK's pivot i. A failure inside tessera may have written A or B: it stops
 * the job (the input is lost; glue_route_failed).
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

static char up(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* A 9-entry descriptor of context ctxt on a 1 x 1 grid holding rows x cols from (i, j)
 * (1-based), aligned to its blocks; square blocks when square. */
static bool desc_ok(const f_int *d, f_int ctxt, f_int i, f_int j, f_int rows, f_int cols,
                    bool square) {
    if (!d || d[0] != GLUE_BLOCK_CYCLIC_2D || d[1] != ctxt) return false;
    f_int M = d[2], N = d[3], MB = d[4], NB = d[5], RSRC = d[6], CSRC = d[7], LLD = d[8];
    if (M < 0 || N < 0 || MB < 1 || NB < 1 || RSRC != 0 || CSRC != 0 || LLD < GLUE_MAX(1, M))
        return false;
    if (square && MB != NB) return false;
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

/* Whether tessera takes the call: the grid, the arguments, the policy. */
static bool takes(const struct sv *s) {
    if (!glue_knobs()->ok || !s->da) return false;
    f_int ctxt = s->da[1], P = -1, Q = -1, r = -1, c = -1;
    const struct glue_syms *S = glue_syms();
    if (!S->gridinfo) return false;
    S->gridinfo(ctxt, &P, &Q, &r, &c);
    if (P != 1 || Q != 1 || r != 0 || c != 0) return false;
    if (s->uplo && up(*s->uplo) != 'U' && up(*s->uplo) != 'L') return false;
    if (s->trans && up(*s->trans) != 'N' && up(*s->trans) != 'T' && up(*s->trans) != 'C')
        return false;
    f_int m = s->m ? *s->m : *s->n, n = *s->n, nrhs = s->nrhs ? *s->nrhs : 1;
    if (m < 1 || n < 1 || nrhs < 1 || !s->A || !s->info) return false;
    if (!desc_ok(s->da, ctxt, *s->ia, *s->ja, m, n, true)) return false;
    if (s->B && (!desc_ok(s->db, ctxt, *s->ib, *s->jb, n, nrhs, false) || s->db[4] != s->da[4]))
        return false;
    if ((s->kind == GLUE_GETRF || s->kind == GLUE_GETRS || s->kind == GLUE_GESV) && !s->ipiv)
        return false;
    if (s->kind == GLUE_GETRS) /* the pivots name rows of sub(A) */
        for (f_int i = 0; i < n; i++) {
            f_int p = s->ipiv[*s->ia - 1 + i] - (*s->ia - 1);
            if (p < 1 || p > n) return false;
        }
    return worth(s) && glue_devices_ready();
}

/* The call on the node runtime: TESS_OK with *info set, or tessera's status. */
static int run(const struct sv *s) {
    const tess_dtype_t dt = s->dt;
    const f_int n = *s->n, m = s->m ? *s->m : n, nrhs = s->nrhs ? *s->nrhs : 0;
    const int64_t lda = s->da[8], ldb = s->B ? s->db[8] : 1, off = *s->ia - 1;
    char *A = sub(s, s->A, s->da, *s->ia, *s->ja);
    char *B = s->B ? sub(s, s->B, s->db, *s->ib, *s->jb) : NULL;
    tess_uplo_t uplo = s->uplo && up(*s->uplo) == 'U' ? TESS_UPPER : TESS_LOWER;
    tess_trans_t tr = !s->trans || up(*s->trans) == 'N' ? TESS_NO_TRANS
                      : up(*s->trans) == 'T'            ? TESS_TRANS
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
    if (!takes(s)) {
        glue_count_reference(s->kind, s->dt, flops);
        reference(s);
        return;
    }
    int st = run(s);
    if (st == TESS_OK) {
        glue_count_tessera(s->kind, s->dt, flops);
        return;
    }
    struct glue_call c = {.kind = s->kind, .dt = s->dt, .ctxt = s->da[1]};
    glue_route_failed(&c, st, false, "the node runtime's factorization or solve");
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

#define ENTRIES(p, DT)                                                                           \
    GLUE_EXPORT void p##potrf_(const char *uplo, const f_int *n, void *A, const f_int *ia,       \
                               const f_int *ja, const f_int *da, f_int *info) {                  \
        struct sv s = {.kind = GLUE_POTRF,                                                       \
                       .dt = DT,                                                                 \
                       .uplo = uplo,                                                             \
                       .n = n,                                                                   \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }                                                                                            \
    GLUE_EXPORT void p##potrs_(const char *uplo, const f_int *n, const f_int *nrhs, void *A,     \
                               const f_int *ia, const f_int *ja, const f_int *da, void *B,       \
                               const f_int *ib, const f_int *jb, const f_int *db, f_int *info) { \
        struct sv s = {.kind = GLUE_POTRS,                                                       \
                       .dt = DT,                                                                 \
                       .uplo = uplo,                                                             \
                       .n = n,                                                                   \
                       .nrhs = nrhs,                                                             \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .B = B,                                                                   \
                       .ib = ib,                                                                 \
                       .jb = jb,                                                                 \
                       .db = db,                                                                 \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }                                                                                            \
    GLUE_EXPORT void p##posv_(const char *uplo, const f_int *n, const f_int *nrhs, void *A,      \
                              const f_int *ia, const f_int *ja, const f_int *da, void *B,        \
                              const f_int *ib, const f_int *jb, const f_int *db, f_int *info) {  \
        struct sv s = {.kind = GLUE_POSV,                                                        \
                       .dt = DT,                                                                 \
                       .uplo = uplo,                                                             \
                       .n = n,                                                                   \
                       .nrhs = nrhs,                                                             \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .B = B,                                                                   \
                       .ib = ib,                                                                 \
                       .jb = jb,                                                                 \
                       .db = db,                                                                 \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }                                                                                            \
    GLUE_EXPORT void p##getrf_(const f_int *m, const f_int *n, void *A, const f_int *ia,         \
                               const f_int *ja, const f_int *da, f_int *ipiv, f_int *info) {     \
        struct sv s = {.kind = GLUE_GETRF,                                                       \
                       .dt = DT,                                                                 \
                       .m = m,                                                                   \
                       .n = n,                                                                   \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .ipiv = ipiv,                                                             \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }                                                                                            \
    GLUE_EXPORT void p##getrs_(const char *trans, const f_int *n, const f_int *nrhs, void *A,    \
                               const f_int *ia, const f_int *ja, const f_int *da, f_int *ipiv,   \
                               void *B, const f_int *ib, const f_int *jb, const f_int *db,       \
                               f_int *info) {                                                    \
        struct sv s = {.kind = GLUE_GETRS,                                                       \
                       .dt = DT,                                                                 \
                       .trans = trans,                                                           \
                       .n = n,                                                                   \
                       .nrhs = nrhs,                                                             \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .ipiv = ipiv,                                                             \
                       .B = B,                                                                   \
                       .ib = ib,                                                                 \
                       .jb = jb,                                                                 \
                       .db = db,                                                                 \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }                                                                                            \
    GLUE_EXPORT void p##gesv_(const f_int *n, const f_int *nrhs, void *A, const f_int *ia,       \
                              const f_int *ja, const f_int *da, f_int *ipiv, void *B,            \
                              const f_int *ib, const f_int *jb, const f_int *db, f_int *info) {  \
        struct sv s = {.kind = GLUE_GESV,                                                        \
                       .dt = DT,                                                                 \
                       .n = n,                                                                   \
                       .nrhs = nrhs,                                                             \
                       .A = A,                                                                   \
                       .ia = ia,                                                                 \
                       .ja = ja,                                                                 \
                       .da = da,                                                                 \
                       .ipiv = ipiv,                                                             \
                       .B = B,                                                                   \
                       .ib = ib,                                                                 \
                       .jb = jb,                                                                 \
                       .db = db,                                                                 \
                       .info = info};                                                            \
        route(&s, reference);                                                                    \
    }
ENTRIES(ps, TESS_S)
ENTRIES(pd, TESS_D)
ENTRIES(pc, TESS_C)
ENTRIES(pz, TESS_Z)
