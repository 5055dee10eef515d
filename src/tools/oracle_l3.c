/* src/tools/oracle_l3.c: the level-3 problems of oracle_l3.h, built from oracle.c's masked
 * product (oracle_mv) and row verdict (oracle_rows); SYRK-like results also get a hash of the
 * strict other triangle of C, column by column, on the problem's threads. */
#include "oracle_l3.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"

typedef long double LD;

const char *const routine_name[R_N] = {"gemm",  "symm",  "hemm", "syrk", "herk",
                                       "syr2k", "her2k", "trmm", "trsm"};

int routine_complex_only(enum routine r) { return r == R_HEMM || r == R_HERK || r == R_HER2K; }
int routine_rank(enum routine r) { return r >= R_SYRK && r <= R_HER2K; }
static int herm_out(enum routine r) { return r == R_HERK || r == R_HER2K; }
static int rank2(enum routine r) { return r == R_SYR2K || r == R_HER2K; }
static int is_complex(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }
static size_t esize(tess_dtype_t dt) { return dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8; }

/* y (+)= op(mask(X)) v on the problem's threads */
static void mv(const struct prob *p, int zero, char op, enum oracle_mask mk, enum oracle_diag dg,
               int64_t rows, int64_t cols, const void *X, int64_t ld, const LD *v, const LD *vabs,
               LD *y, LD *yabs) {
    oracle_mv(p->dt, p->threads, zero, op, mk, dg, rows, cols, X, ld, v, vabs, y, yabs);
}

/* y = Xh v, Xh the symmetric (herm: Hermitian, real diagonal) matrix of X's triangle uplo:
 * the triangle with the diagonal, then the strict triangle transposed. */
static void symv(const struct prob *p, int herm, int64_t n, const void *X, int64_t ld, const LD *v,
                 const LD *vabs, LD *y, LD *yabs) {
    char uplo = p->uplo;
    mv(p, 1, 'N', uplo == 'U' ? OM_UP : OM_LO, herm ? OD_REAL : OD_ASIS, n, n, X, ld, v, vabs, y,
       yabs);
    mv(p, 0, herm ? 'C' : 'T', uplo == 'U' ? OM_SUP : OM_SLO, OD_ASIS, n, n, X, ld, v, vabs, y,
       yabs);
}

/* y = op(T) v, T the triangle uplo of X (diag U: ones, not read) */
static void trmv(const struct prob *p, int64_t n, const LD *v, const LD *vabs, LD *y, LD *yabs) {
    mv(p, 1, p->trans, p->uplo == 'U' ? OM_UP : OM_LO, p->diag == 'U' ? OD_UNIT : OD_ASIS, n, n,
       p->A, p->lda, v, vabs, y, yabs);
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
        /* uplo L writes i >= j: the hash takes i < j, and the other way */
        int64_t lo = x->uplo == 'L' ? 0 : j + 1, hi = x->uplo == 'L' ? j : x->n;
        if (hi > x->n) hi = x->n;
        if (lo > x->n) lo = x->n;
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

static uint64_t other_triangle_hash(const struct prob *p, int64_t n, const void *X, int64_t ld) {
    uint64_t part[TESS__PAR_MAX * 4];
    int threads = p->threads < 1 ? 1 : p->threads > TESS__PAR_MAX ? TESS__PAR_MAX : p->threads;
    struct hashctx c = {X, esize(p->dt), n, ld, p->uplo, 0, part};
    c.nchunks = threads * 4 < n ? threads * 4 : (int)(n > 0 ? n : 1);
    tess__par_run(threads, c.nchunks, hash_chunk, &c);
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

void prob_init(struct prob *p, enum routine r, tess_dtype_t dt, char side, char uplo, char trans,
               char diag, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
               const void *B, int64_t ldb) {
    memset(p, 0, sizeof *p);
    int cpx = is_complex(dt);
    p->r = r, p->dt = dt, p->side = side, p->uplo = uplo, p->diag = diag, p->threads = 1;
    if (r == R_GEMM)
        trans = 'N';
    else if (trans != 'N' && (r == R_HERK || r == R_HER2K))
        trans = 'C';
    else if (trans != 'N' && (r == R_SYRK || r == R_SYR2K) && cpx)
        trans = 'T';
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
    if (!p->t || !p->tabs || !p->e || !p->eabs || !p->w || !p->wabs || !p->y || !p->yabs || !p->z ||
        !p->zabs) {
        prob_end(p);
        return -1;
    }
    LD tsum = oracle_probe(n, 0, 0, p->t, p->tabs);
    int64_t K = r == R_GEMM ? k : routine_rank(r) ? (rank2(r) ? 2 * k : k) : p->side == 'L' ? m : n;
    oracle_bound_init(&p->bound, dt, K, n, tsum);
    const LD *t = p->t, *ta = p->tabs;
    LD *y = p->y, *ya = p->yabs, *z = p->z, *za = p->zabs, *w = p->w, *wa = p->wabs;
    int herm = r == R_HEMM || herm_out(r);
    char star = herm ? 'C' : 'T';
    switch (r) {
    case R_GEMM: /* alpha A (B t) + beta C0 t */
        mv(p, 1, 'N', OM_FULL, OD_ASIS, k, n, p->B, p->ldb, t, ta, z, za);
        mv(p, 1, 'N', OM_FULL, OD_ASIS, m, k, p->A, p->lda, z, za, y, ya);
        oracle_axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_SYMM:
    case R_HEMM:
        if (p->side == 'L') { /* alpha Ah (B t) */
            mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, p->B, p->ldb, t, ta, z, za);
            symv(p, herm, m, p->A, p->lda, z, za, y, ya);
        } else { /* alpha B (Ah t) */
            symv(p, herm, n, p->A, p->lda, t, ta, z, za);
            mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, p->B, p->ldb, z, za, y, ya);
        }
        oracle_axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_SYRK:
    case R_HERK:
    case R_SYR2K:
    case R_HER2K: {
        /* X^* t for X = op(M) (n x k): M^* t ('N': M n x k) or M t (M k x n); then X v */
        const char *P = p->A, *Q = rank2(r) ? p->B : p->A;
        int64_t ldp = p->lda, ldq = rank2(r) ? p->ldb : p->lda;
        int nt = p->trans == 'N';
        if (nt)
            mv(p, 1, star, OM_FULL, OD_ASIS, n, k, Q, ldq, t, ta, z, za); /* Q^* t */
        else
            mv(p, 1, 'N', OM_FULL, OD_ASIS, k, n, Q, ldq, t, ta, z, za);
        if (nt)
            mv(p, 1, 'N', OM_FULL, OD_ASIS, n, k, P, ldp, z, za, y, ya); /* P (Q^* t) */
        else
            mv(p, 1, p->trans, OM_FULL, OD_ASIS, k, n, P, ldp, z, za, y, ya);
        oracle_axpy(p->e, p->eabs, p->ar, p->ai, y, ya, n);
        if (rank2(r)) { /* + alpha' Q (P^* t) */
            if (nt)
                mv(p, 1, star, OM_FULL, OD_ASIS, n, k, P, ldp, t, ta, z, za);
            else
                mv(p, 1, 'N', OM_FULL, OD_ASIS, k, n, P, ldp, t, ta, z, za);
            if (nt)
                mv(p, 1, 'N', OM_FULL, OD_ASIS, n, k, Q, ldq, z, za, y, ya);
            else
                mv(p, 1, p->trans, OM_FULL, OD_ASIS, k, n, Q, ldq, z, za, y, ya);
            oracle_axpy(p->e, p->eabs, p->a2r, p->a2i, y, ya, n);
        }
        break;
    }
    case R_TRMM:
        if (p->side == 'L') { /* alpha op(T) (B0 t) */
            mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, p->B, p->ldb, t, ta, z, za);
            trmv(p, m, z, za, y, ya);
        } else { /* alpha B0 (op(T) t) */
            trmv(p, n, t, ta, z, za);
            mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, p->B, p->ldb, z, za, y, ya);
        }
        oracle_axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        break;
    case R_TRSM: /* alpha B0 t; side R also op(T) t for the check */
        mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, p->B, p->ldb, t, ta, y, ya);
        oracle_axpy(p->e, p->eabs, p->ar, p->ai, y, ya, m);
        if (p->side == 'R') trmv(p, n, t, ta, w, wa);
        break;
    default: break;
    }
    if (C0 && r != R_TRMM && r != R_TRSM) { /* + beta C0 t (SYRK-like: C0h t) */
        if (routine_rank(r))
            symv(p, herm_out(r), n, C0, ldc, t, ta, y, ya);
        else
            mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, C0, ldc, t, ta, y, ya);
        oracle_axpy(p->e, p->eabs, p->br, p->bi, y, ya, m);
        if (routine_rank(r)) p->other_hash = other_triangle_hash(p, n, C0, ldc);
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
        mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, R, ldr, p->t, p->tabs, z, za);
        trmv(p, m, z, za, y, ya);
    } else if (trsm) { /* X (op(T) t) */
        mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, R, ldr, p->w, p->wabs, y, ya);
    } else if (routine_rank(r)) {
        symv(p, herm_out(r), n, R, ldr, p->t, p->tabs, y, ya);
        f->other_changed = other_triangle_hash(p, n, R, ldr) != p->other_hash;
        if (herm_out(r))
            for (int64_t i = 0; i < n; i++) {
                size_t at = 2 * ((size_t)i * (size_t)ldr + (size_t)i) + 1;
                LD im = dt == TESS_C ? (LD)((const float *)R)[at] : (LD)((const double *)R)[at];
                if (im != 0) f->diag_imag++;
            }
    } else {
        mv(p, 1, 'N', OM_FULL, OD_ASIS, m, n, R, ldr, p->t, p->tabs, y, ya);
    }
    /* TRSM: the residual, against |op(T)| |X| |t| + |alpha| |B0| |t| */
    return oracle_rows(&p->bound, m, y, ya, p->e, p->eabs, trsm, NULL);
}
