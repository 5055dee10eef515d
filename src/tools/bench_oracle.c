/* src/tools/bench_oracle.c: the level-3 probe-vector oracle of tessera-bench (see
 * bench_oracle.h). Everything is built from one masked matrix-vector product in long double,
 * y += op(mask(X)) v, run in chunks of outputs on o.threads threads (rows for 'N', columns
 * for 'T'/'C', so every chunk streams whole column segments and owns its outputs). */
#include "bench_oracle.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef long double LD;

const char *const routine_name[R_N] = {"gemm",  "symm",  "hemm", "syrk", "herk",
                                       "syr2k", "her2k", "trmm", "trsm"};

int routine_complex_only(enum routine r) { return r == R_HEMM || r == R_HERK || r == R_HER2K; }
int routine_rank(enum routine r) { return r >= R_SYRK && r <= R_HER2K; }
static int herm_out(enum routine r) { return r == R_HERK || r == R_HER2K; }
static int rank2(enum routine r) { return r == R_SYR2K || r == R_HER2K; }

/* ---- the masked product ------------------------------------------------------------------ */

/* Which stored entries (i, j) of X take part: all, the triangle with the diagonal, or the
 * strict triangle. */
enum mask { MK_FULL, MK_UP, MK_LO, MK_SUP, MK_SLO };
/* The diagonal: as stored, real part only (Hermitian), or ones and not read (unit). */
enum dmode { DG_ASIS, DG_REAL, DG_UNIT };

struct mvjob {
    char op; /* 'N': y = X v; 'T': y = X^T v; 'C': y = X^H v */
    enum mask mk;
    enum dmode dg;
    int64_t rows, cols, ld;
    const void *X;
    const LD *v, *vabs; /* complex (re, im) pairs; |v| */
    LD *y, *yabs;
    int64_t out;
    int nchunks;
    int vreal; /* every imaginary part of v is zero (the probe vector t): a shorter loop */
};

/* rows [lo, hi) of column j that the mask keeps */
static inline void mask_range(enum mask mk, int64_t j, int64_t rows, int64_t *lo, int64_t *hi) {
    switch (mk) {
    default:
    case MK_FULL: *lo = 0, *hi = rows; break;
    case MK_UP: *lo = 0, *hi = j + 1; break;
    case MK_SUP: *lo = 0, *hi = j; break;
    case MK_LO: *lo = j, *hi = rows; break;
    case MK_SLO: *lo = j + 1, *hi = rows; break;
    }
    if (*hi > rows) *hi = rows;
    if (*lo > rows) *lo = rows;
}

/* One chunk [q0, q1) of the outputs, for element type T (CPX: interleaved complex). The
 * diagonal entry of column j, when the mask holds it and dg is not DG_ASIS, is dj. */
#define DEFINE_MV(SUF, T, CPX)                                                                 \
    static void mv_chunk_##SUF(const struct mvjob *jb, int64_t q0, int64_t q1) {               \
        const T *X = (const T *)jb->X;                                                         \
        const size_t ld = (size_t)jb->ld * (CPX ? 2 : 1);                                      \
        const LD *v = jb->v, *vabs = jb->vabs;                                                 \
        LD *y = jb->y, *yabs = jb->yabs;                                                       \
        const int conj = jb->op == 'C', unit = jb->dg == DG_UNIT;                              \
        if (jb->op == 'N') {                                                                   \
            for (int64_t j = 0; j < jb->cols; j++) {                                           \
                int64_t lo, hi;                                                                \
                mask_range(jb->mk, j, jb->rows, &lo, &hi);                                     \
                if (lo < q0) lo = q0;                                                          \
                if (hi > q1) hi = q1;                                                          \
                if (lo >= hi) continue;                                                        \
                const T *col = X + (size_t)j * ld;                                             \
                const LD vr = v[2 * j], vi = v[2 * j + 1], va = vabs[j];                       \
                const int64_t dj = (jb->dg != DG_ASIS && j >= lo && j < hi) ? j : -1;          \
                for (int64_t i = lo; i < hi; i++) {                                            \
                    LD xr, xi;                                                                 \
                    if (i != dj) {                                                             \
                        xr = CPX ? (LD)col[2 * i] : (LD)col[i];                                \
                        xi = CPX ? (LD)col[2 * i + 1] : 0;                                     \
                    } else {                                                                   \
                        xr = unit ? 1 : CPX ? (LD)col[2 * i] : (LD)col[i];                     \
                        xi = 0;                                                                \
                    }                                                                          \
                    if (vi == 0) { /* the same sums, fewer products */                         \
                        y[2 * i] += xr * vr;                                                   \
                        if (CPX) y[2 * i + 1] += xi * vr;                                      \
                    } else {                                                                   \
                        y[2 * i] += xr * vr - xi * vi;                                         \
                        y[2 * i + 1] += xr * vi + xi * vr;                                     \
                    }                                                                          \
                    yabs[i] += (CPX ? fabsl(xr) + fabsl(xi) : fabsl(xr)) * va;                 \
                }                                                                              \
            }                                                                                  \
        } else {                                                                               \
            for (int64_t j = q0; j < q1; j++) {                                                \
                int64_t lo, hi;                                                                \
                mask_range(jb->mk, j, jb->rows, &lo, &hi);                                     \
                const T *col = X + (size_t)j * ld;                                             \
                const int64_t dj = (jb->dg != DG_ASIS && j >= lo && j < hi) ? j : -1;          \
                LD sr = 0, si = 0, sa = 0;                                                     \
                for (int64_t i = lo; i < hi; i++) {                                            \
                    LD xr, xi;                                                                 \
                    if (i != dj) {                                                             \
                        xr = CPX ? (LD)col[2 * i] : (LD)col[i];                                \
                        xi = CPX ? (LD)col[2 * i + 1] : 0;                                     \
                        if (conj) xi = -xi;                                                    \
                    } else {                                                                   \
                        xr = unit ? 1 : CPX ? (LD)col[2 * i] : (LD)col[i];                     \
                        xi = 0;                                                                \
                    }                                                                          \
                    const LD vr = v[2 * i];                                                    \
                    if (jb->vreal) {                                                           \
                        sr += xr * vr;                                                         \
                        if (CPX) si += xi * vr;                                                \
                    } else {                                                                   \
                        const LD vi = v[2 * i + 1];                                            \
                        sr += xr * vr - xi * vi;                                               \
                        si += xr * vi + xi * vr;                                               \
                    }                                                                          \
                    sa += (CPX ? fabsl(xr) + fabsl(xi) : fabsl(xr)) * vabs[i];                 \
                }                                                                              \
                y[2 * j] += sr, y[2 * j + 1] += si, yabs[j] += sa;                             \
            }                                                                                  \
        }                                                                                      \
    }
DEFINE_MV(s, float, 0)
DEFINE_MV(d, double, 0)
DEFINE_MV(c, float, 1)
DEFINE_MV(z, double, 1)

struct mvctx {
    const struct mvjob *jb;
    tess_dtype_t dt;
};

static void mv_chunk(void *c, int q) {
    const struct mvctx *x = c;
    const struct mvjob *jb = x->jb;
    int64_t q0 = jb->out * q / jb->nchunks, q1 = jb->out * (q + 1) / jb->nchunks;
    switch (x->dt) {
    case TESS_S: mv_chunk_s(jb, q0, q1); break;
    case TESS_D: mv_chunk_d(jb, q0, q1); break;
    case TESS_C: mv_chunk_c(jb, q0, q1); break;
    case TESS_Z: mv_chunk_z(jb, q0, q1); break;
    }
}

/* y (+)= op(mask(X)) v; X rows x cols (ld); y has rows ('N') or cols entries. |X| is
 * bounded by |re| + |im| (at most sqrt(2) |x|: the bound only loosens). */
static void mv(tess_dtype_t dt, int zero, char op, enum mask mk, enum dmode dg, int64_t rows,
               int64_t cols, const void *X, int64_t ld, const LD *v, const LD *vabs, LD *y,
               LD *yabs) {
    struct mvjob jb = {.op = op == 'N' ? 'N' : op == 'T' ? 'T' : 'C', .mk = mk, .dg = dg,
                       .rows = rows, .cols = cols, .ld = ld, .X = X, .v = v, .vabs = vabs,
                       .y = y, .yabs = yabs};
    if (!is_complex(dt) && jb.op == 'C') jb.op = 'T';
    jb.out = op == 'N' ? rows : cols;
    jb.vreal = 1;
    for (int64_t i = 0, nv = op == 'N' ? cols : rows; i < nv && jb.vreal; i++)
        jb.vreal = v[2 * i + 1] == 0;
    if (zero) {
        memset(y, 0, sizeof(LD) * 2 * (size_t)jb.out);
        memset(yabs, 0, sizeof(LD) * (size_t)jb.out);
    }
    if (jb.out < 1) return;
    int64_t nch = (int64_t)o.threads * 8;
    if (nch > jb.out) nch = jb.out;
    if (nch > 1 && (double)rows * (double)cols < 65536.0) nch = 1;
    jb.nchunks = (int)nch;
    struct mvctx c = {&jb, dt};
    par_for(jb.nchunks, mv_chunk, &c);
}

/* y = Xh v, Xh the symmetric (herm: Hermitian, real diagonal) matrix of X's triangle uplo:
 * the triangle with the diagonal, then the strict triangle transposed. */
static void symv(tess_dtype_t dt, char uplo, int herm, int64_t n, const void *X, int64_t ld,
                 const LD *v, const LD *vabs, LD *y, LD *yabs) {
    mv(dt, 1, 'N', uplo == 'U' ? MK_UP : MK_LO, herm ? DG_REAL : DG_ASIS, n, n, X, ld, v, vabs, y,
       yabs);
    mv(dt, 0, herm ? 'C' : 'T', uplo == 'U' ? MK_SUP : MK_SLO, DG_ASIS, n, n, X, ld, v, vabs, y,
       yabs);
}

/* y = op(T) v, T the triangle uplo of X (diag 'U': unit, not read) */
static void trmv(tess_dtype_t dt, char uplo, char trans, char diag, int64_t n, const void *X,
                 int64_t ld, const LD *v, const LD *vabs, LD *y, LD *yabs) {
    mv(dt, 1, trans, uplo == 'U' ? MK_UP : MK_LO, diag == 'U' ? DG_UNIT : DG_ASIS, n, n, X, ld, v,
       vabs, y, yabs);
}

/* y += s x, yabs += |s| xabs (m complex entries) */
static void axpy(LD *y, LD *yabs, LD sr, LD si, const LD *x, const LD *xabs, int64_t m) {
    LD sa = sqrtl(sr * sr + si * si);
    for (int64_t i = 0; i < m; i++) {
        LD xr = x[2 * i], xi = x[2 * i + 1];
        y[2 * i] += sr * xr - si * xi;
        y[2 * i + 1] += sr * xi + si * xr;
        yabs[i] += sa * xabs[i];
    }
}

/* ---- the strict other triangle of a SYRK-like C: a hash, column by column -------------------- */

struct hashctx {
    const unsigned char *X;
    size_t es;
    int64_t n, ld;
    char uplo; /* the triangle written; the hash covers the strict other one */
    int nchunks;
    uint64_t *part;
};

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33, h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static void hash_chunk(void *c, int q) {
    struct hashctx *x = c;
    int64_t j0 = x->n * q / x->nchunks, j1 = x->n * (q + 1) / x->nchunks;
    uint64_t sum = 0;
    for (int64_t j = j0; j < j1; j++) {
        int64_t lo, hi; /* uplo L writes i >= j: the hash takes i < j, and the other way */
        mask_range(x->uplo == 'L' ? MK_SUP : MK_SLO, j, x->n, &lo, &hi);
        const unsigned char *p = x->X + ((size_t)j * (size_t)x->ld + (size_t)lo) * x->es;
        size_t len = hi > lo ? (size_t)(hi - lo) * x->es : 0, at = 0;
        uint64_t h = mix64((uint64_t)j + 0x9E3779B97F4A7C15ull);
        for (; at + 8 <= len; at += 8) {
            uint64_t w;
            memcpy(&w, p + at, 8);
            h = (h ^ w) * 0x100000001b3ull;
            h ^= h >> 29;
        }
        for (; at < len; at++) h = (h ^ p[at]) * 0x100000001b3ull;
        sum += mix64(h);
    }
    x->part[q] = sum;
}

static uint64_t other_triangle_hash(tess_dtype_t dt, char uplo, int64_t n, const void *X,
                                    int64_t ld) {
    uint64_t part[MAX_THREADS * 4];
    struct hashctx c = {X, esize(dt), n, ld, uplo, 0, part};
    c.nchunks = o.threads * 4 < n ? o.threads * 4 : (int)(n > 0 ? n : 1);
    par_for(c.nchunks, hash_chunk, &c);
    uint64_t h = 0;
    for (int q = 0; q < c.nchunks; q++) h += part[q];
    return h;
}

/* ---- problems --------------------------------------------------------------------------------- */

/* Store (re, im) as the type the libraries take (real: re only), and read back what was
 * stored, so the oracle uses the rounded value. */
static void put_scalar(unsigned char *buf, tess_dtype_t dt, int real_type, LD re, LD im, LD *gr,
                       LD *gi) {
    memset(buf, 0, 16);
    int single = dt == TESS_S || dt == TESS_C, cpx = is_complex(dt) && !real_type;
    if (single) {
        float f[2] = {(float)re, cpx ? (float)im : 0.0f};
        memcpy(buf, f, sizeof f);
        *gr = f[0], *gi = f[1];
    } else {
        double d[2] = {(double)re, cpx ? (double)im : 0.0};
        memcpy(buf, d, sizeof d);
        *gr = d[0], *gi = d[1];
    }
}

const char *prob_opts(const struct prob *p, char *buf, size_t len) {
    switch (p->r) {
    case R_GEMM: snprintf(buf, len, "NN"); break;
    case R_SYMM:
    case R_HEMM: snprintf(buf, len, "side %c uplo %c", p->side, p->uplo); break;
    case R_SYRK:
    case R_HERK:
    case R_SYR2K:
    case R_HER2K: snprintf(buf, len, "uplo %c trans %c", p->uplo, p->trans); break;
    case R_TRMM:
    case R_TRSM:
        snprintf(buf, len, "side %c uplo %c trans %c diag %c", p->side, p->uplo, p->trans, p->diag);
        break;
    default: snprintf(buf, len, "?");
    }
    return buf;
}

void prob_init(struct prob *p, enum routine r, tess_dtype_t dt, char side, char uplo,
               char trans, char diag, int64_t m, int64_t n, int64_t k, const void *A,
               int64_t lda, const void *B, int64_t ldb) {
    memset(p, 0, sizeof *p);
    int cpx = is_complex(dt);
    p->r = r, p->dt = dt, p->side = side, p->uplo = uplo, p->diag = diag;
    if (r == R_GEMM) trans = 'N';
    else if (trans != 'N' && (r == R_HERK || r == R_HER2K)) trans = 'C';
    else if (trans != 'N' && (r == R_SYRK || r == R_SYR2K) && cpx) trans = 'T';
    p->trans = trans;
    p->m = m, p->n = n, p->k = k;
    p->A = A, p->B = B, p->lda = lda, p->ldb = ldb;
    /* real: alpha 1, beta 0.5 (as the GEMM comparison); complex: alpha 0.8 + 0.6i (not real,
     * so a lost conjugate shows), beta 0.5 + 0.25i; HERK alpha 1, HERK/HER2K beta 0.5 real */
    put_scalar(p->alpha, dt, r == R_HERK, cpx && r != R_HERK ? 0.8L : 1.0L, 0.6L, &p->ar, &p->ai);
    put_scalar(p->beta, dt, r == R_HERK || r == R_HER2K, 0.5L, 0.25L, &p->br, &p->bi);
    p->a2r = p->ar, p->a2i = r == R_HER2K ? -p->ai : p->ai;
    double f = 0, M = (double)m, N = (double)n, K = (double)k;
    switch (r) {
    case R_GEMM: f = 2 * M * N * K; break;
    case R_SYMM:
    case R_HEMM: f = side == 'L' ? 2 * M * M * N : 2 * M * N * N; break;
    case R_SYRK:
    case R_HERK: f = N * N * K; break;
    case R_SYR2K:
    case R_HER2K: f = 2 * N * N * K; break;
    case R_TRMM:
    case R_TRSM: f = side == 'L' ? M * M * N : M * N * N; break;
    default: break;
    }
    p->flops = cpx ? 4 * f : f;
}

static LD *lalloc(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(LD)); }

void prob_end(struct prob *p) {
    free(p->t), free(p->tabs), free(p->e), free(p->eabs), free(p->w), free(p->wabs);
    free(p->y), free(p->yabs), free(p->z), free(p->zabs);
    p->t = p->tabs = p->e = p->eabs = p->w = p->wabs = p->y = p->yabs = p->z = p->zabs = NULL;
}

int prob_begin(struct prob *p, const void *C0, int64_t ldc) {
    tess_dtype_t dt = p->dt;
    enum routine r = p->r;
    int64_t m = p->m, n = p->n, k = p->k;
    int64_t mx = (m > n ? m : n) > k ? (m > n ? m : n) : k;
    p->t = lalloc(2 * n), p->tabs = lalloc(n), p->e = lalloc(2 * m), p->eabs = lalloc(m);
    p->w = lalloc(2 * mx), p->wabs = lalloc(mx), p->y = lalloc(2 * mx), p->yabs = lalloc(mx);
    p->z = lalloc(2 * mx), p->zabs = lalloc(mx);
    if (!p->t || !p->tabs || !p->e || !p->eabs || !p->w || !p->wabs || !p->y || !p->yabs ||
        !p->z || !p->zabs) {
        prob_end(p);
        return -1;
    }
    for (int64_t j = 0; j < n; j++) {
        p->t[2 * j] = 1.0L + (LD)((j * 7919) % 1000) / 1000.0L;
        p->tabs[j] = p->t[2 * j];
    }
    p->u = (dt == TESS_S || dt == TESS_C) ? FLT_EPSILON / 2.0L : DBL_EPSILON / 2.0L;
    int64_t K = r == R_GEMM ? k : routine_rank(r) ? (rank2(r) ? 2 * k : k) : p->side == 'L' ? m : n;
    p->gamma = (LD)(K + 4) * p->u * (is_complex(dt) ? 4 : 1);
    const LD *t = p->t, *ta = p->tabs;
    LD *y = p->y, *ya = p->yabs, *z = p->z, *za = p->zabs, *w = p->w, *wa = p->wabs;
    int herm = r == R_HEMM || herm_out(r);
    char star = herm ? 'C' : 'T';
    switch (r) {
    case R_GEMM: /* alpha A (B t) + beta C0 t */
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, k, n, p->B, p->ldb, t, ta, z, za);
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, k, p->A, p->lda, z, za, y, ya);
        axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_SYMM:
    case R_HEMM:
        if (p->side == 'L') { /* alpha Ah (B t) */
            mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, p->B, p->ldb, t, ta, z, za);
            symv(dt, p->uplo, herm, m, p->A, p->lda, z, za, y, ya);
        } else { /* alpha B (Ah t) */
            symv(dt, p->uplo, herm, n, p->A, p->lda, t, ta, z, za);
            mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, p->B, p->ldb, z, za, y, ya);
        }
        axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_SYRK:
    case R_HERK:
    case R_SYR2K:
    case R_HER2K: {
        /* X^* t for X = op(M) (n x k): M^* t ('N': M n x k) or M t (M k x n); then X v */
        const char *P = p->A, *Q = rank2(r) ? p->B : p->A;
        int64_t ldp = p->lda, ldq = rank2(r) ? p->ldb : p->lda;
        int nt = p->trans == 'N';
        if (nt) mv(dt, 1, star, MK_FULL, DG_ASIS, n, k, Q, ldq, t, ta, z, za); /* Q^* t */
        else mv(dt, 1, 'N', MK_FULL, DG_ASIS, k, n, Q, ldq, t, ta, z, za);
        if (nt) mv(dt, 1, 'N', MK_FULL, DG_ASIS, n, k, P, ldp, z, za, y, ya); /* P (Q^* t) */
        else mv(dt, 1, p->trans, MK_FULL, DG_ASIS, k, n, P, ldp, z, za, y, ya);
        axpy(p->e, p->eabs, p->ar, p->ai, y, ya, n);
        if (rank2(r)) { /* + alpha' Q (P^* t) */
            if (nt) mv(dt, 1, star, MK_FULL, DG_ASIS, n, k, P, ldp, t, ta, z, za);
            else mv(dt, 1, 'N', MK_FULL, DG_ASIS, k, n, P, ldp, t, ta, z, za);
            if (nt) mv(dt, 1, 'N', MK_FULL, DG_ASIS, n, k, Q, ldq, z, za, y, ya);
            else mv(dt, 1, p->trans, MK_FULL, DG_ASIS, k, n, Q, ldq, z, za, y, ya);
            axpy(p->e, p->eabs, p->a2r, p->a2i, y, ya, n);
        }
        break;
    }
    case R_TRMM:
        if (p->side == 'L') { /* alpha op(T) (B0 t) */
            mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, p->B, p->ldb, t, ta, z, za);
            trmv(dt, p->uplo, p->trans, p->diag, m, p->A, p->lda, z, za, y, ya);
        } else { /* alpha B0 (op(T) t) */
            trmv(dt, p->uplo, p->trans, p->diag, n, p->A, p->lda, t, ta, z, za);
            mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, p->B, p->ldb, z, za, y, ya);
        }
        axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_TRSM: /* alpha B0 t; side R also op(T) t for the check */
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, p->B, p->ldb, t, ta, y, ya);
        axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        if (p->side == 'R') trmv(dt, p->uplo, p->trans, p->diag, n, p->A, p->lda, t, ta, w, wa);
        break;
    default: break;
    }
    if (C0 && r != R_TRMM && r != R_TRSM) { /* + beta C0 t (SYRK-like: C0h t) */
        if (routine_rank(r)) symv(dt, p->uplo, herm_out(r), n, C0, ldc, t, ta, y, ya);
        else mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, C0, ldc, t, ta, y, ya);
        axpy(p->e, p->eabs, p->br, p->bi, y, ya, m);
        if (routine_rank(r)) p->other_hash = other_triangle_hash(dt, p->uplo, n, C0, ldc);
    }
    return 0;
}

double prob_check(struct prob *p, const void *R, int64_t ldr, struct check_flags *f) {
    tess_dtype_t dt = p->dt;
    enum routine r = p->r;
    int64_t m = p->m, n = p->n;
    LD *y = p->y, *ya = p->yabs, *z = p->z, *za = p->zabs;
    int trsm = r == R_TRSM;
    memset(f, 0, sizeof *f);
    if (trsm && p->side == 'L') { /* op(T) (X t) */
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, R, ldr, p->t, p->tabs, z, za);
        trmv(dt, p->uplo, p->trans, p->diag, m, p->A, p->lda, z, za, y, ya);
    } else if (trsm) { /* X (op(T) t) */
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, R, ldr, p->w, p->wabs, y, ya);
    } else if (routine_rank(r)) {
        symv(dt, p->uplo, herm_out(r), n, R, ldr, p->t, p->tabs, y, ya);
        f->other_changed = other_triangle_hash(dt, p->uplo, n, R, ldr) != p->other_hash;
        if (herm_out(r))
            for (int64_t i = 0; i < n; i++) {
                size_t at = 2 * ((size_t)i * (size_t)ldr + (size_t)i) + 1;
                LD im = dt == TESS_C ? (LD)((const float *)R)[at] : (LD)((const double *)R)[at];
                if (im != 0) f->diag_imag++;
            }
    } else {
        mv(dt, 1, 'N', MK_FULL, DG_ASIS, m, n, R, ldr, p->t, p->tabs, y, ya);
    }
    double worst = 0;
    for (int64_t i = 0; i < m; i++) {
        LD er = y[2 * i] - p->e[2 * i], ei = y[2 * i + 1] - p->e[2 * i + 1];
        LD err = sqrtl(er * er + ei * ei);
        /* TRSM: the residual against |op(T)| |X| |t| + |alpha| |B0| |t|; else the terms and
         * the rounding of the result itself */
        LD bound = trsm ? p->gamma * (ya[i] + p->eabs[i])
                        : p->gamma * p->eabs[i] + 2 * p->u * ya[i];
        double q = (double)(err / (bound + LDBL_MIN));
        if (isnan(q)) return NAN;
        if (q > worst) worst = q;
    }
    return worst;
}
