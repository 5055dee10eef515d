/* tests/test_hold.c: held data (tess_hold, tess_sync, tess_invalidate, tess_release; issue 23
 * point 1; the contract is the comment in tessera.h) on emulated devices. Every test mirrors
 * what it asks of tessera on plain host copies with the OpenBLAS reference and compares
 * after tess_sync (the host range is current only then) and after tess_release:
 * - sequence: random sequences of 50 level-3 calls (GEMM in s, d, z with every transpose,
 *   both layouts, beta = 0 and alpha = 0 or k = 0 at times; operands at any offset inside held
 *   matrices, trailing updates whose A, B and C are element-disjoint parts of one held
 *   matrix; DTRSM, DTRMM, DSYRK, DSYMM on held ranges; views of a held matrix with another
 *   leading dimension; tess_invalidate followed by host writes) under four setups;
 * - crossing_once: a held working set that fits crosses the host link once in and once out;
 * - out_of_core: a held C three times the device memory, written back under pressure;
 * - unheld_range: a call served stateless on part of a held matrix writes back (and drops)
 *   only the tiles that part meets;
 * - checker: TESSERA_HOLD_CHECK=1 catches a planted host write and raises no false alarm;
 * - faults: device 1 of 3 fails at each of its operations in turn: every call and sync ends
 *   right or in TESS_EDEVICE, and then each tile holds a value it had after some call
 *   (never a stale or torn tile reported TESS_OK);
 * - trxm_held_a: DTRSM and DTRMM read a held A where it is held, every side, layout, uplo
 *   and transpose;
 * - bad_input and finalize: argument checks; tess_finalize writes held results back.
 * Sizes are never multiples of the tile. TESS_HOLD_SEED=n replaces the sequences' seed.
 */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_start.h"
#include "harness.h"
#include "ref.h"
#include "tessera.h"

/* emu_start (ndev at least 1 here) with write-behind on; the streams as the environment says */
static void start(int ndev, const char *tile, const char *mem) {
    emu_start(ndev, tile, mem, NULL, "1");
}

/* ---- matrices and their mirrors -------------------------------------------------------- */

struct mat {
    const char *name;
    tess_dtype_t dt;
    int64_t rows, cols, ld, tile;
    int held, ro; /* held by tess_hold; ro: never written (the triangles of TRSM/TRMM) */
    char *x, *r;  /* what tessera sees; the mirror the reference updates */
};

static size_t es_of(const struct mat *m) { return ref_esize(m->dt); }
static size_t nel(const struct mat *m) { return (size_t)(m->ld * m->cols); }
static char *at(const struct mat *m, char *base, int64_t r, int64_t c) {
    return base + (size_t)(r + c * m->ld) * es_of(m);
}

static void mat_init(struct mat *m, const char *name, tess_dtype_t dt, int64_t rows, int64_t cols,
                     int64_t ld, uint64_t *rng) {
    memset(m, 0, sizeof *m);
    m->name = name, m->dt = dt, m->rows = rows, m->cols = cols, m->ld = ld;
    m->x = ref_malloc(nel(m) * es_of(m));
    m->r = ref_malloc(nel(m) * es_of(m));
    ref_fill_random(dt, m->x, nel(m), rng);
    memcpy(m->r, m->x, nel(m) * es_of(m));
}

static void mat_free(struct mat *m) { free(m->x), free(m->r); }

/* A triangle source for TRSM/TRMM: off-diagonal entries below 0.5 / rows, |diagonal| in
 * [1, 2], so every leading square block at (o, o) is well conditioned either way. */
static void mat_triangle(struct mat *m, uint64_t *rng) {
    for (int64_t c = 0; c < m->cols; c++)
        for (int64_t r = 0; r < m->rows; r++) {
            double v = ref_rand_unit(rng);
            v = r == c ? (v < 0 ? -1.5 + 0.5 * v : 1.5 + 0.5 * v) : v * 0.5 / (double)m->rows;
            *(double *)at(m, m->x, r, c) = v;
        }
    memcpy(m->r, m->x, nel(m) * es_of(m));
}

static double part(tess_dtype_t dt, const char *base, size_t i) {
    return (dt == TESS_S || dt == TESS_C) ? (double)((const float *)base)[i]
                                          : ((const double *)base)[i];
}
static int parts(tess_dtype_t dt) { return ref_is_complex(dt) ? 2 : 1; }

/* max |x - r| / max(1, max |r|) over rows r0.. and columns c0.. of m (every stored element,
 * padding rows included, when the block is the whole ld x cols array); infinity on NaN. */
static double block_err(const struct mat *m, const char *X, const char *R, int64_t r0, int64_t c0,
                        int64_t rows, int64_t cols) {
    double d = 0, mx = 1;
    int f = parts(m->dt);
    for (int64_t c = c0; c < c0 + cols; c++)
        for (int64_t i = r0 * f; i < (r0 + rows) * f; i++) {
            size_t k = (size_t)(c * m->ld * f + i);
            double x = part(m->dt, X, k), r = part(m->dt, R, k);
            if (!isfinite(x)) return INFINITY;
            d = fmax(d, fabs(x - r)), mx = fmax(mx, fabs(r));
        }
    return d / mx;
}

static double mat_err(const struct mat *m) {
    return block_err(m, m->x, m->r, 0, 0, m->ld, m->cols);
}

static double tol_of(tess_dtype_t dt) { return (dt == TESS_S || dt == TESS_C) ? 2e-3 : 1e-9; }

/* max |element| (|re| + |im|) of a stored block of the mirror */
static double block_max(const struct mat *m, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
    double mx = 0;
    int f = parts(m->dt);
    for (int64_t c = c0; c < c0 + cols; c++)
        for (int64_t r = r0; r < r0 + rows; r++) {
            size_t k = (size_t)((r + c * m->ld) * f);
            double v = fabs(part(m->dt, m->r, k));
            if (f == 2) v += fabs(part(m->dt, m->r, k + 1));
            mx = fmax(mx, v);
        }
    return mx > 0 ? mx : 1;
}

/* ---- the random sequence ----------------------------------------------------------------- */

enum { NMAT = 8, NLOG = 96 };

struct seq {
    struct mat m[NMAT];
    int nm;
    uint64_t rng, seed;
    const char *setup;
    int calls;
    char log[NLOG][224];
    int nlog;
    int n[8]; /* gemm, trailing, trsm, trmm, syrk, symm, strided, invalidate + write */
    int checkpoints;
};

/* A stored block of matrix mi (column-major coordinates). */
struct reg {
    int mi;
    int64_t r0, c0, rows, cols;
};

static int overlaps(struct reg a, struct reg b) {
    if (a.mi != b.mi || !a.rows || !a.cols || !b.rows || !b.cols) return 0;
    return a.r0 < b.r0 + b.rows && b.r0 < a.r0 + a.rows && a.c0 < b.c0 + b.cols &&
           b.c0 < a.c0 + a.cols;
}

static void logf_(struct seq *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct seq *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->log[s->nlog % NLOG], sizeof s->log[0], fmt, ap);
    va_end(ap);
    s->nlog++;
}

static void dump_log(const struct seq *s) {
    int first = s->nlog > NLOG ? s->nlog - NLOG : 0;
    fprintf(stderr, "  setup %s, seed %llu; the calls so far:\n", s->setup,
            (unsigned long long)s->seed);
    for (int i = first; i < s->nlog; i++) fprintf(stderr, "    %3d %s\n", i, s->log[i % NLOG]);
}

/* ASSERT_MSG that first prints the setup, the seed and the calls so far. */
#define SEQ_ASSERT(s, cond, ...)     \
    do {                             \
        if (!(cond)) {               \
            dump_log(s);             \
            TEST_FAIL_(__VA_ARGS__); \
        }                            \
    } while (0)

/* The storage dimensions of a rows x cols operand of a call in layout L. */
static void stored(tess_layout_t L, int64_t rows, int64_t cols, int64_t *sr, int64_t *sc) {
    *sr = L == TESS_COL_MAJOR ? rows : cols;
    *sc = L == TESS_COL_MAJOR ? cols : rows;
}

/* A random block of rows x cols in a matrix of precision dt (writable: not ro), overlapping
 * none of avoid[0..navoid); 0 if none was found. */
static int pick(struct seq *s, tess_dtype_t dt, int64_t rows, int64_t cols, int writable,
                const struct reg *avoid, int navoid, struct reg *out) {
    for (int t = 0; t < 64; t++) {
        int mi = (int)ref_rand_int(&s->rng, 0, s->nm - 1);
        const struct mat *m = &s->m[mi];
        if (m->dt != dt || (writable && m->ro) || rows > m->rows || cols > m->cols) continue;
        struct reg g = {mi, ref_rand_int(&s->rng, 0, m->rows - (rows ? rows : 1)),
                        ref_rand_int(&s->rng, 0, m->cols - (cols ? cols : 1)), rows, cols};
        int ok = 1;
        for (int i = 0; i < navoid; i++) ok &= !overlaps(g, avoid[i]);
        if (ok) {
            *out = g;
            return 1;
        }
    }
    return 0;
}

static char *px(struct seq *s, struct reg g) { return at(&s->m[g.mi], s->m[g.mi].x, g.r0, g.c0); }
static char *pr(struct seq *s, struct reg g) { return at(&s->m[g.mi], s->m[g.mi].r, g.r0, g.c0); }
static int64_t ldof(struct seq *s, struct reg g) { return s->m[g.mi].ld; }
static double regmax(struct seq *s, struct reg g) {
    return block_max(&s->m[g.mi], g.r0, g.c0, g.rows, g.cols);
}

/* A random scalar of magnitude mag (a random phase for complex precisions). */
static void scalar(struct seq *s, tess_dtype_t dt, double mag, unsigned char out[16], double *re,
                   double *im) {
    double sgn = ref_rand_unit(&s->rng) < 0 ? -1 : 1;
    *re = sgn * mag, *im = 0;
    if (ref_is_complex(dt)) {
        double th = 3.14159265358979 * ref_rand_unit(&s->rng);
        *re = mag * cos(th), *im = mag * sin(th);
    }
    ref_scalar(dt, out, *re, *im);
}

static const char *regname(struct seq *s, struct reg g, char *buf, size_t len) {
    snprintf(buf, len, "%s[%lld:+%lld, %lld:+%lld]", s->m[g.mi].name, (long long)g.r0,
             (long long)g.rows, (long long)g.c0, (long long)g.cols);
    return buf;
}

/* One GEMM through tessera (typed or tess_gemm) and the reference; the status. */
static int gemm2(struct seq *s, tess_dtype_t dt, tess_layout_t L, tess_trans_t ta, tess_trans_t tb,
                 int64_t m, int64_t n, int64_t k, const unsigned char al[16], struct reg a,
                 struct reg b, const unsigned char be[16], struct reg c, int generic) {
    char ba[64], bb[64], bc[64];
    double are = dt == TESS_S ? *(const float *)al : ((const double *)al)[0];
    double bre = dt == TESS_S ? *(const float *)be : ((const double *)be)[0];
    logf_(s, "%sgemm%s %s %s%s m=%lld n=%lld k=%lld alpha=%.3g beta=%.3g A=%s B=%s C=%s",
          ref_dtype_name(dt), generic ? "(generic)" : "", ref_layout_name(L), ref_trans_name(ta),
          ref_trans_name(tb), (long long)m, (long long)n, (long long)k, are, bre,
          regname(s, a, ba, sizeof ba), regname(s, b, bb, sizeof bb), regname(s, c, bc, sizeof bc));
    int rc;
    if (generic)
        rc = tess_gemm(dt, L, ta, tb, m, n, k, al, px(s, a), ldof(s, a), px(s, b), ldof(s, b), be,
                       px(s, c), ldof(s, c));
    else if (dt == TESS_D)
        rc = tess_dgemm(L, ta, tb, m, n, k, *(const double *)al, (const double *)px(s, a),
                        ldof(s, a), (const double *)px(s, b), ldof(s, b), *(const double *)be,
                        (double *)px(s, c), ldof(s, c));
    else if (dt == TESS_S)
        rc = tess_sgemm(L, ta, tb, m, n, k, *(const float *)al, (const float *)px(s, a), ldof(s, a),
                        (const float *)px(s, b), ldof(s, b), *(const float *)be, (float *)px(s, c),
                        ldof(s, c));
    else
        rc = tess_zgemm(L, ta, tb, m, n, k, al, px(s, a), ldof(s, a), px(s, b), ldof(s, b), be,
                        px(s, c), ldof(s, c));
    ref_gemm(dt, L, ta, tb, m, n, k, al, pr(s, a), ldof(s, a), pr(s, b), ldof(s, b), be, pr(s, c),
             ldof(s, c));
    return rc;
}

static tess_trans_t rand_trans(struct seq *s, tess_dtype_t dt) {
    int64_t t = ref_rand_int(&s->rng, 0, ref_is_complex(dt) ? 2 : 1);
    return t == 0 ? TESS_NO_TRANS : t == 1 ? TESS_TRANS : TESS_CONJ_TRANS;
}

/* A random GEMM of precision dt; C overlaps neither A nor B (A may be B). */
static void op_gemm(struct seq *s, tess_dtype_t dt) {
    for (int tries = 0; tries < 200; tries++) {
        tess_layout_t L = ref_rand_unit(&s->rng) < -0.4 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        tess_trans_t ta = rand_trans(s, dt), tb = rand_trans(s, dt);
        int64_t m = ref_rand_int(&s->rng, 1, 72), n = ref_rand_int(&s->rng, 1, 72);
        int64_t k = ref_rand_int(&s->rng, 1, 72);
        int same = ref_rand_unit(&s->rng) < -0.8; /* B is A: C = op(A) A */
        if (same)
            L = TESS_COL_MAJOR, ta = ref_is_complex(dt) ? TESS_CONJ_TRANS : TESS_TRANS,
            tb = TESS_NO_TRANS, n = m;
        if (ref_rand_unit(&s->rng) < -0.94) k = 0;
        int64_t cr, cc, ar, ac, br, bc;
        stored(L, m, n, &cr, &cc);
        stored(L, ta == TESS_NO_TRANS ? m : k, ta == TESS_NO_TRANS ? k : m, &ar, &ac);
        stored(L, tb == TESS_NO_TRANS ? k : n, tb == TESS_NO_TRANS ? n : k, &br, &bc);
        struct reg c, a, b;
        if (!pick(s, dt, cr, cc, 1, NULL, 0, &c) || !pick(s, dt, ar, ac, 0, &c, 1, &a)) continue;
        if (same)
            b = a;
        else if (!pick(s, dt, br, bc, 0, &c, 1, &b))
            continue;
        unsigned char al[16], be[16];
        double re, im;
        double mag = (0.5 + 0.5 * fabs(ref_rand_unit(&s->rng))) /
                     ((double)(k ? k : 1) * regmax(s, a) * regmax(s, b));
        if (ref_rand_unit(&s->rng) < -0.92) mag = 0;
        scalar(s, dt, mag, al, &re, &im);
        double bmag = ref_rand_unit(&s->rng) < -0.6 ? 0 : 0.3 + 0.6 * fabs(ref_rand_unit(&s->rng));
        scalar(s, dt, bmag, be, &re, &im);
        int generic = ref_rand_unit(&s->rng) < -0.6;
        int rc = gemm2(s, dt, L, ta, tb, m, n, k, al, a, b, be, c, generic);
        SEQ_ASSERT(s, rc == TESS_OK, "call %d returned %d: %s", s->calls, rc, tess_last_error());
        return;
    }
    logf_(s, "(no %sgemm fits)", ref_dtype_name(dt));
}

/* The trailing update of a blocked factorization on held matrix mi:
 * M[j:, j:] -= M[j:, j-nb:j] M[j-nb:j, j:]. */
static void op_trailing(struct seq *s) {
    int cand[NMAT], nc = 0;
    for (int i = 0; i < s->nm; i++)
        if (s->m[i].held && !s->m[i].ro && s->m[i].dt != TESS_S) cand[nc++] = i;
    if (!nc) return;
    int mi = cand[ref_rand_int(&s->rng, 0, nc - 1)];
    const struct mat *M = &s->m[mi];
    int64_t mn = M->rows < M->cols ? M->rows : M->cols;
    int64_t nb = ref_rand_int(&s->rng, 4, 40), j = ref_rand_int(&s->rng, nb, mn - 1);
    struct reg c = {mi, j, j, M->rows - j, M->cols - j}, a = {mi, j, j - nb, M->rows - j, nb};
    struct reg b = {mi, j - nb, j, nb, M->cols - j};
    unsigned char al[16], be[16];
    double mag = 0.9 / ((double)nb * regmax(s, a) * regmax(s, b));
    ref_scalar(M->dt, al, -mag, 0);
    ref_scalar(M->dt, be, 1, 0);
    int rc = gemm2(s, M->dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, c.rows, c.cols, nb, al,
                   a, b, be, c, 0);
    SEQ_ASSERT(s, rc == TESS_OK, "call %d (trailing update) returned %d: %s", s->calls, rc,
               tess_last_error());
}

static int find(struct seq *s, const char *name) {
    for (int i = 0; i < s->nm; i++)
        if (!strcmp(s->m[i].name, name)) return i;
    return -1;
}

/* DTRSM or DTRMM: B a block of a d matrix, A a leading block of the triangle source T. */
static void op_trxm(struct seq *s, int solve) {
    int ti = find(s, "T");
    const struct mat *T = &s->m[ti];
    tess_layout_t L = ref_rand_unit(&s->rng) < -0.4 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
    tess_side_t sd = ref_rand_unit(&s->rng) < 0 ? TESS_LEFT : TESS_RIGHT;
    tess_uplo_t ul = ref_rand_unit(&s->rng) < 0 ? TESS_UPPER : TESS_LOWER;
    tess_trans_t ta = ref_rand_unit(&s->rng) < 0 ? TESS_NO_TRANS : TESS_TRANS;
    tess_diag_t dg = ref_rand_unit(&s->rng) < -0.5 ? TESS_UNIT : TESS_NON_UNIT;
    int64_t m = ref_rand_int(&s->rng, 1, 70), n = ref_rand_int(&s->rng, 1, 70);
    int64_t ka = sd == TESS_LEFT ? m : n, o = ref_rand_int(&s->rng, 0, T->rows - ka);
    int64_t br, bc;
    stored(L, m, n, &br, &bc);
    struct reg b, a = {ti, o, o, ka, ka};
    if (!pick(s, TESS_D, br, bc, 1, NULL, 0, &b)) return;
    double alpha = (solve ? 0.45 : 0.35) * (ref_rand_unit(&s->rng) < 0 ? -1 : 1);
    char ba[64], bb[64];
    logf_(s, "d%s %s side=%c uplo=%c trans=%s diag=%c m=%lld n=%lld alpha=%.2f A=%s B=%s",
          solve ? "trsm" : "trmm", ref_layout_name(L), sd == TESS_LEFT ? 'L' : 'R',
          ul == TESS_UPPER ? 'U' : 'L', ref_trans_name(ta), dg == TESS_UNIT ? 'U' : 'N',
          (long long)m, (long long)n, alpha, regname(s, a, ba, sizeof ba),
          regname(s, b, bb, sizeof bb));
    int rc = solve ? tess_dtrsm(L, sd, ul, ta, dg, m, n, alpha, (const double *)px(s, a), T->ld,
                                (double *)px(s, b), ldof(s, b))
                   : tess_dtrmm(L, sd, ul, ta, dg, m, n, alpha, (const double *)px(s, a), T->ld,
                                (double *)px(s, b), ldof(s, b));
    (solve ? cblas_dtrsm : cblas_dtrmm)(
        (enum CBLAS_ORDER)L, (enum CBLAS_SIDE)sd, (enum CBLAS_UPLO)ul, (enum CBLAS_TRANSPOSE)ta,
        (enum CBLAS_DIAG)dg, (int)m, (int)n, alpha, (const double *)pr(s, a), (int)T->ld,
        (double *)pr(s, b), (int)ldof(s, b));
    SEQ_ASSERT(s, rc == TESS_OK, "call %d returned %d: %s", s->calls, rc, tess_last_error());
}

/* DSYRK on a square block C of a d matrix. */
static void op_syrk(struct seq *s) {
    for (int tries = 0; tries < 100; tries++) {
        tess_layout_t L = ref_rand_unit(&s->rng) < -0.4 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        tess_uplo_t ul = ref_rand_unit(&s->rng) < 0 ? TESS_UPPER : TESS_LOWER;
        tess_trans_t tr = ref_rand_unit(&s->rng) < 0 ? TESS_NO_TRANS : TESS_TRANS;
        int64_t n = ref_rand_int(&s->rng, 1, 72), k = ref_rand_int(&s->rng, 1, 72), ar, ac;
        stored(L, tr == TESS_NO_TRANS ? n : k, tr == TESS_NO_TRANS ? k : n, &ar, &ac);
        struct reg c, a;
        if (!pick(s, TESS_D, n, n, 1, NULL, 0, &c) || !pick(s, TESS_D, ar, ac, 0, &c, 1, &a))
            continue;
        double ra = regmax(s, a);
        double alpha = (ref_rand_unit(&s->rng) < 0 ? -0.8 : 0.8) / ((double)k * ra * ra);
        double beta = ref_rand_unit(&s->rng) < -0.6 ? 0 : 0.7;
        char ba[64], bc[64];
        logf_(s, "dsyrk %s uplo=%c trans=%s n=%lld k=%lld alpha=%.3g beta=%.2f A=%s C=%s",
              ref_layout_name(L), ul == TESS_UPPER ? 'U' : 'L', ref_trans_name(tr), (long long)n,
              (long long)k, alpha, beta, regname(s, a, ba, sizeof ba),
              regname(s, c, bc, sizeof bc));
        int rc = tess_dsyrk(L, ul, tr, n, k, alpha, (const double *)px(s, a), ldof(s, a), beta,
                            (double *)px(s, c), ldof(s, c));
        cblas_dsyrk((enum CBLAS_ORDER)L, (enum CBLAS_UPLO)ul, (enum CBLAS_TRANSPOSE)tr, (int)n,
                    (int)k, alpha, (const double *)pr(s, a), (int)ldof(s, a), beta,
                    (double *)pr(s, c), (int)ldof(s, c));
        SEQ_ASSERT(s, rc == TESS_OK, "call %d returned %d: %s", s->calls, rc, tess_last_error());
        return;
    }
}

/* DSYMM: A a square block of any d matrix, B and C blocks, C overlapping neither. */
static void op_symm(struct seq *s) {
    for (int tries = 0; tries < 100; tries++) {
        tess_layout_t L = ref_rand_unit(&s->rng) < -0.4 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        tess_side_t sd = ref_rand_unit(&s->rng) < 0 ? TESS_LEFT : TESS_RIGHT;
        tess_uplo_t ul = ref_rand_unit(&s->rng) < 0 ? TESS_UPPER : TESS_LOWER;
        int64_t m = ref_rand_int(&s->rng, 1, 72), n = ref_rand_int(&s->rng, 1, 72);
        int64_t ka = sd == TESS_LEFT ? m : n, cr, cc;
        stored(L, m, n, &cr, &cc);
        struct reg c, a, b;
        if (!pick(s, TESS_D, cr, cc, 1, NULL, 0, &c) || !pick(s, TESS_D, ka, ka, 0, &c, 1, &a) ||
            !pick(s, TESS_D, cr, cc, 0, &c, 1, &b))
            continue;
        double alpha = (ref_rand_unit(&s->rng) < 0 ? -0.8 : 0.8) /
                       ((double)ka * regmax(s, a) * regmax(s, b));
        double beta = ref_rand_unit(&s->rng) < -0.6 ? 0 : -0.6;
        char ba[64], bb[64], bc[64];
        logf_(s, "dsymm %s side=%c uplo=%c m=%lld n=%lld alpha=%.3g beta=%.2f A=%s B=%s C=%s",
              ref_layout_name(L), sd == TESS_LEFT ? 'L' : 'R', ul == TESS_UPPER ? 'U' : 'L',
              (long long)m, (long long)n, alpha, beta, regname(s, a, ba, sizeof ba),
              regname(s, b, bb, sizeof bb), regname(s, c, bc, sizeof bc));
        int rc = tess_dsymm(L, sd, ul, m, n, alpha, (const double *)px(s, a), ldof(s, a),
                            (const double *)px(s, b), ldof(s, b), beta, (double *)px(s, c),
                            ldof(s, c));
        cblas_dsymm((enum CBLAS_ORDER)L, (enum CBLAS_SIDE)sd, (enum CBLAS_UPLO)ul, (int)m, (int)n,
                    alpha, (const double *)pr(s, a), (int)ldof(s, a), (const double *)pr(s, b),
                    (int)ldof(s, b), beta, (double *)pr(s, c), (int)ldof(s, c));
        SEQ_ASSERT(s, rc == TESS_OK, "call %d returned %d: %s", s->calls, rc, tess_last_error());
        return;
    }
}

/* A DGEMM whose A is a view of a held d matrix H with leading dimension 2 ld (every other
 * column: touches H without lying inside it as held); B and C outside H. */
static void op_strided(struct seq *s) {
    int cand[NMAT], nc = 0;
    for (int i = 0; i < s->nm; i++)
        if (s->m[i].held && s->m[i].dt == TESS_D) cand[nc++] = i;
    if (!nc) return;
    int hi = cand[ref_rand_int(&s->rng, 0, nc - 1)];
    const struct mat *H = &s->m[hi];
    struct reg whole = {hi, 0, 0, H->rows, H->cols};
    for (int tries = 0; tries < 100; tries++) {
        tess_trans_t ta = ref_rand_unit(&s->rng) < 0 ? TESS_NO_TRANS : TESS_TRANS;
        int64_t ar = ref_rand_int(&s->rng, 1, 72), ac = ref_rand_int(&s->rng, 1, H->cols / 2);
        if (ar > H->rows) continue;
        int64_t r0 = ref_rand_int(&s->rng, 0, H->rows - ar);
        int64_t c0 = ref_rand_int(&s->rng, 0, H->cols - 1 - 2 * (ac - 1));
        int64_t m = ta == TESS_NO_TRANS ? ar : ac, k = ta == TESS_NO_TRANS ? ac : ar;
        int64_t n = ref_rand_int(&s->rng, 1, 72);
        struct reg c, b;
        if (!pick(s, TESS_D, m, n, 1, &whole, 1, &c)) continue;
        struct reg av[2] = {whole, c};
        if (!pick(s, TESS_D, k, n, 0, av, 2, &b)) continue;
        double alpha = 0.8 / ((double)k * block_max(H, r0, c0, ar, 2 * ac - 1) * regmax(s, b));
        double beta = 0.5;
        int64_t lda = 2 * H->ld;
        char bb[64], bc[64];
        logf_(s,
              "dgemm col %sN m=%lld n=%lld k=%lld alpha=%.3g beta=%.2f A=%s[%lld, %lld] lda=2ld "
              "(%lld x %lld) B=%s C=%s",
              ref_trans_name(ta), (long long)m, (long long)n, (long long)k, alpha, beta, H->name,
              (long long)r0, (long long)c0, (long long)ar, (long long)ac,
              regname(s, b, bb, sizeof bb), regname(s, c, bc, sizeof bc));
        int rc = tess_dgemm(TESS_COL_MAJOR, ta, TESS_NO_TRANS, m, n, k, alpha,
                            (const double *)at(H, H->x, r0, c0), lda, (const double *)px(s, b),
                            ldof(s, b), beta, (double *)px(s, c), ldof(s, c));
        cblas_dgemm(CblasColMajor, (enum CBLAS_TRANSPOSE)ta, CblasNoTrans, (int)m, (int)n, (int)k,
                    alpha, (const double *)at(H, H->r, r0, c0), (int)lda, (const double *)pr(s, b),
                    (int)ldof(s, b), beta, (double *)pr(s, c), (int)ldof(s, c));
        SEQ_ASSERT(s, rc == TESS_OK, "call %d returned %d: %s", s->calls, rc, tess_last_error());
        return;
    }
}

/* tess_invalidate a held matrix, then write a block of it on the host (and the mirror). */
static void op_host_write(struct seq *s) {
    int cand[NMAT], nc = 0;
    for (int i = 0; i < s->nm; i++)
        if (s->m[i].held && !s->m[i].ro) cand[nc++] = i;
    if (!nc) return;
    struct mat *M = &s->m[cand[ref_rand_int(&s->rng, 0, nc - 1)]];
    int rc = tess_invalidate(M->x);
    logf_(s, "tess_invalidate(%s) then host writes", M->name);
    SEQ_ASSERT(s, rc == TESS_OK, "tess_invalidate(%s) returned %d: %s", M->name, rc,
               tess_last_error());
    double err = mat_err(M);
    SEQ_ASSERT(s, err <= tol_of(M->dt), "%s after tess_invalidate: rel err %.3g", M->name, err);
    int64_t r0 = ref_rand_int(&s->rng, 0, M->rows - 1), c0 = ref_rand_int(&s->rng, 0, M->cols - 1);
    for (int64_t c = c0; c < M->cols && c < c0 + 9; c++)
        for (int64_t r = r0; r < M->rows && r < r0 + 7; r++) {
            double re = ref_rand_unit(&s->rng), im = ref_rand_unit(&s->rng);
            ref_set(M->dt, M->x, (size_t)(r + c * M->ld), re, im);
            ref_set(M->dt, M->r, (size_t)(r + c * M->ld), re, im);
        }
}

/* tess_sync every held matrix (if sync), then compare every matrix with its mirror. */
static void checkpoint(struct seq *s, int sync, const char *when) {
    if (sync && ref_rand_unit(&s->rng) < 0) {
        int rc = tess_wait();
        SEQ_ASSERT(s, rc == TESS_OK, "tess_wait %s returned %d: %s", when, rc, tess_last_error());
    }
    for (int i = 0; i < s->nm; i++) {
        struct mat *M = &s->m[i];
        if (M->held && sync) {
            int rc = tess_sync(M->x);
            SEQ_ASSERT(s, rc == TESS_OK, "tess_sync(%s) %s returned %d: %s", M->name, when, rc,
                       tess_last_error());
        }
    }
    for (int i = 0; i < s->nm; i++) {
        struct mat *M = &s->m[i];
        if (M->held && !sync) continue;
        double err = mat_err(M);
        SEQ_ASSERT(s, err <= tol_of(M->dt), "%s %s (after %d calls): rel err %.3g > %.1g", M->name,
                   when, s->calls, err, tol_of(M->dt));
    }
}

struct seq_setup {
    const char *name;
    int ndev;
    const char *tile, *mem, *jitter;
    int64_t tiles[4]; /* hold tiles of H1, H2 and T, HZ, HS */
};

static void run_sequence(const struct seq_setup *su, uint64_t seed) {
    static struct seq S;
    struct seq *s = &S;
    memset(s, 0, sizeof *s);
    s->seed = seed, s->rng = seed, s->setup = su->name;
    start(su->ndev, su->tile, su->mem);
    setenv("TESSERA_EMULATE_JITTER", su->jitter, 1);
    ASSERT_OK(tess_init());
    struct mat *m = s->m;
    mat_init(&m[0], "H1", TESS_D, 150, 130, 157, &s->rng);
    mat_init(&m[1], "H2", TESS_D, 140, 145, 140, &s->rng);
    mat_init(&m[2], "PD", TESS_D, 130, 150, 133, &s->rng);
    mat_init(&m[3], "T", TESS_D, 80, 80, 83, &s->rng);
    mat_init(&m[4], "HZ", TESS_Z, 100, 90, 101, &s->rng);
    mat_init(&m[5], "PZ", TESS_Z, 90, 100, 90, &s->rng);
    mat_init(&m[6], "HS", TESS_S, 120, 110, 121, &s->rng);
    mat_init(&m[7], "PS", TESS_S, 110, 120, 113, &s->rng);
    s->nm = 8;
    mat_triangle(&m[3], &s->rng);
    m[3].ro = 1;
    const int held[4] = {0, 1, 4, 6};
    for (int i = 0; i < 4; i++) m[held[i]].held = 1, m[held[i]].tile = su->tiles[i];
    m[3].held = 1, m[3].tile = su->tiles[1];
    for (int i = 0; i < s->nm; i++)
        if (m[i].held) {
            int rc = tess_hold(m[i].dt, m[i].x, m[i].ld, m[i].rows, m[i].cols, m[i].tile);
            SEQ_ASSERT(s, rc == TESS_OK, "tess_hold(%s, tile %lld) returned %d: %s", m[i].name,
                       (long long)m[i].tile, rc, tess_last_error());
        }
    /* two checkpoints at random points besides the random ones */
    int cp1 = (int)ref_rand_int(&s->rng, 5, 25), cp2 = (int)ref_rand_int(&s->rng, 26, 45);
    while (s->calls < 50) {
        double u = 0.5 * (ref_rand_unit(&s->rng) + 1);
        if (u < 0.03) {
            s->checkpoints++;
            logf_(s, "checkpoint");
            checkpoint(s, 1, "at a random checkpoint");
            continue;
        }
        if (u < 0.06) {
            s->n[7]++;
            op_host_write(s);
            continue;
        }
        s->calls++;
        int kind = u < 0.09   ? 6
                   : u < 0.18 ? 1
                   : u < 0.25 ? 2
                   : u < 0.32 ? 3
                   : u < 0.39 ? 4
                   : u < 0.46 ? 5
                              : 0;
        s->n[kind]++;
        if (kind == 6)
            op_strided(s);
        else if (kind == 1)
            op_trailing(s);
        else if (kind == 2 || kind == 3)
            op_trxm(s, kind == 2);
        else if (kind == 4)
            op_syrk(s);
        else if (kind == 5)
            op_symm(s);
        else {
            double v = ref_rand_unit(&s->rng);
            op_gemm(s, v < 0 ? TESS_D : v < 0.5 ? TESS_Z : TESS_S);
        }
        if (s->calls == cp1 || s->calls == cp2) {
            s->checkpoints++;
            logf_(s, "checkpoint");
            checkpoint(s, 1, "at a checkpoint");
        }
    }
    checkpoint(s, 1, "at the end (tess_sync)");
    for (int i = 0; i < s->nm; i++)
        if (m[i].held) {
            int rc = tess_release(m[i].x);
            SEQ_ASSERT(s, rc == TESS_OK, "tess_release(%s) returned %d: %s", m[i].name, rc,
                       tess_last_error());
            m[i].held = 0;
        }
    logf_(s, "released everything");
    checkpoint(s, 0, "after tess_release");
    /* the same matrices, no longer held: plain calls */
    for (int i = 0; i < 4; i++, s->calls++) op_gemm(s, TESS_D);
    checkpoint(s, 0, "after plain calls on released matrices");
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  %s (seed %llu): %d GEMMs, %d trailing updates, %d DTRSM, %d DTRMM, %d DSYRK, %d "
            "DSYMM, %d strided views, %d invalidate + host writes, %d checkpoints: right\n",
            su->name, (unsigned long long)seed, s->n[0], s->n[1], s->n[2], s->n[3], s->n[4],
            s->n[5], s->n[6], s->n[7], s->checkpoints);
    for (int i = 0; i < s->nm; i++) mat_free(&m[i]);
}

static uint64_t base_seed(void) { return (uint64_t)ref_env_long("TESS_HOLD_SEED", 20261127); }

/* Random sequences of 50 calls (s, d, z GEMMs at any offset inside held matrices or plain
 * ones, trailing updates within one held matrix, DTRSM/DTRMM/DSYRK/DSYMM on held ranges,
 * views with another leading dimension, invalidate + host writes), each compared with
 * OpenBLAS on mirrors at random checkpoints (tess_sync), at the end and after tess_release:
 * 3 devices; 2 devices with runtime tile 16 against hold tile 32 and shuffled streams; mixed
 * hold tiles (32, the runtime's choice, 48, 24); 1 device whose memory is smaller than the
 * held working set (write-backs under pressure within the sequence). */
TEST(sequence) {
    static const struct seq_setup su[] = {
        {"3dev", 3, "32", "16M", "0", {32, 32, 32, 32}},
        {"2dev_tile16_jitter", 2, "16", "16M", "30", {32, 32, 32, 32}},
        {"3dev_mixed_tiles", 3, "32", "16M", "0", {32, 0, 48, 24}},
        {"1dev_384K", 1, "32", "384K", "0", {32, 32, 32, 32}},
    };
    uint64_t seed = base_seed();
    for (size_t i = 0; i < sizeof su / sizeof su[0]; i++) run_sequence(&su[i], seed + i);
}

/* ---- counters ------------------------------------------------------------------------- */

struct sums {
    uint64_t h2d, d2h, p2p, evict, wb;
};

static struct sums sum_stats(void) {
    struct sums t = {0, 0, 0, 0, 0};
    for (int d = 0; d < tess_device_count(); d++) {
        tess_dev_stats_t st;
        if (tess_device_stats(d, &st)) continue;
        t.h2d += st.bytes_h2d, t.d2h += st.bytes_d2h, t.p2p += st.bytes_p2p;
        t.evict += st.evictions, t.wb += st.writebacks;
    }
    return t;
}

static void dgemm_both(struct mat *C, int64_t cr0, int64_t cc0, struct mat *A, int64_t ar0,
                       int64_t ac0, struct mat *B, int64_t br0, int64_t bc0, int64_t m, int64_t n,
                       int64_t k, double alpha, double beta) {
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha,
                         (double *)at(A, A->x, ar0, ac0), A->ld, (double *)at(B, B->x, br0, bc0),
                         B->ld, beta, (double *)at(C, C->x, cr0, cc0), C->ld));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                (double *)at(A, A->r, ar0, ac0), (int)A->ld, (double *)at(B, B->r, br0, bc0),
                (int)B->ld, beta, (double *)at(C, C->r, cr0, cc0), (int)C->ld);
}

static void crossing(int ndev, int write_behind) {
    uint64_t rng = 11;
    struct mat C, A, B;
    mat_init(&C, "C", TESS_D, 150, 130, 153, &rng);
    mat_init(&A, "A", TESS_D, 150, 40, 150, &rng);
    mat_init(&B, "B", TESS_D, 40, 130, 45, &rng);
    start(ndev, "32", "16M");
    setenv("TESSERA_WRITE_BEHIND", write_behind ? "1" : "0", 1);
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_hold(TESS_D, C.x, C.ld, C.rows, C.cols, 32));
    ASSERT_OK(tess_hold(TESS_D, A.x, A.ld, A.rows, A.cols, 32));
    ASSERT_OK(tess_hold(TESS_D, B.x, B.ld, B.rows, B.cols, 32));
    tess_reset_stats();
    const uint64_t cb = 150 * 130 * 8, ab = 150 * 40 * 8, bb = 40 * 130 * 8, ctiles = 5 * 5;
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.01, 1.0);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, -0.02, 0.7);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 32, 0.03, 1.0);
    dgemm_both(&C, 32, 0, &A, 32, 0, &B, 0, 0, 118, 64, 40, 0.01, -1.0);
    struct sums s0 = sum_stats();
    ASSERT_OK(tess_sync(C.x));
    struct sums s1 = sum_stats();
    fprintf(
        stderr,
        "  %d device(s), write-behind %d, 4 GEMMs and a sync: h2d %llu (A+B+C %llu), d2h %llu (C %llu), "
        "p2p %llu, write-backs %llu, evictions %llu\n",
        ndev, write_behind, (unsigned long long)s1.h2d, (unsigned long long)(ab + bb + cb),
        (unsigned long long)s1.d2h, (unsigned long long)cb, (unsigned long long)s1.p2p,
        (unsigned long long)s1.wb, (unsigned long long)s1.evict);
    ASSERT_MSG(mat_err(&C) <= 1e-12, "C after tess_sync: rel err %.3g", mat_err(&C));
    ASSERT_EQ(s1.h2d, ab + bb + cb);
    ASSERT_EQ(s1.evict, 0);
    if (!write_behind) {
        ASSERT_EQ(s0.d2h, 0); /* nothing written back before the sync */
        ASSERT_EQ(s1.d2h, cb);
        ASSERT_EQ(s1.wb, ctiles);
    } else { /* each tile at least once; a tile written again meanwhile goes again */
        ASSERT_MSG(s1.d2h >= cb && s1.wb >= ctiles, "d2h %llu, write-backs %llu",
                   (unsigned long long)s1.d2h, (unsigned long long)s1.wb);
    }
    ASSERT_OK(tess_sync(C.x)); /* nothing changed since: nothing moves */
    ASSERT_OK(tess_sync(A.x));
    struct sums s2 = sum_stats();
    ASSERT_EQ(s2.d2h, s1.d2h);
    ASSERT_EQ(s2.h2d, s1.h2d);
    /* the tiles stayed on the devices: another GEMM reads nothing from the host */
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.02, 0.5);
    ASSERT_OK(tess_sync(C.x));
    struct sums s3 = sum_stats();
    ASSERT_MSG(mat_err(&C) <= 1e-12, "C after the second tess_sync: rel err %.3g", mat_err(&C));
    ASSERT_EQ(s3.h2d, s1.h2d);
    if (!write_behind) ASSERT_EQ(s3.d2h, s1.d2h + cb);
    ASSERT_OK(tess_release(C.x));
    ASSERT_OK(tess_release(A.x));
    ASSERT_OK(tess_release(B.x));
    struct sums s4 = sum_stats();
    ASSERT_EQ(s4.d2h, s3.d2h); /* clean: release writes nothing back */
    ASSERT_MSG(mat_err(&C) <= 1e-12, "C after tess_release: rel err %.3g", mat_err(&C));
    ASSERT_MSG(mat_err(&A) == 0 && mat_err(&B) == 0, "A or B changed");
    ASSERT_OK(tess_finalize());
    mat_free(&C), mat_free(&A), mat_free(&B);
}

/* Held A, B and C that fit: after GEMMs on them and a tess_sync each byte crossed the host
 * link once in (h2d = A + B + C) and, with TESSERA_WRITE_BEHIND=0, C once out (d2h = C,
 * one write-back per C tile, none before the sync); a second sync moves nothing; a GEMM
 * after the sync reads nothing from the host; release of clean ranges writes nothing. On 1
 * and on 3 devices (TESSERA_RECOVER=0); with write-behind on, the same but d2h >= C. */
TEST(crossing_once) {
    crossing(1, 0);
    crossing(3, 0);
    crossing(3, 1);
}

/* A call served stateless on part of a held matrix (DSYRK on a 40 x 40 block at (20, 36)
 * of a 100 x 90 held C in tiles of 16; write-behind off) writes back and drops only the
 * tiles that block meets (3 x 4 of them), not all 7 x 6: the rest stay dirty on the devices
 * (d2h counted), and everything is right after the sync. Both layouts of the block's
 * corner: on and off the tile grid. */
TEST(unheld_range) {
    for (int off = 0; off < 2; off++) {
        uint64_t rng = 31 + (uint64_t)off;
        struct mat C, A, B;
        mat_init(&C, "C", TESS_D, 100, 90, 101, &rng);
        mat_init(&A, "A", TESS_D, 100, 24, 100, &rng);
        mat_init(&B, "B", TESS_D, 24, 90, 24, &rng);
        emu_start(2, "16", "16M", NULL, "0");
        ASSERT_OK(tess_init());
        ASSERT_OK(tess_hold(TESS_D, C.x, C.ld, C.rows, C.cols, 16));
        dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 100, 90, 24, 0.5, 1.0); /* every tile dirty */
        tess_reset_stats();
        int64_t r0 = off ? 20 : 16, c0 = off ? 36 : 32, n = off ? 40 : 48;
        ASSERT_OK(tess_dsyrk(TESS_COL_MAJOR, TESS_LOWER, TESS_NO_TRANS, n, 24, -0.25,
                             (double *)at(&A, A.x, 0, 0), A.ld, 0.5, (double *)at(&C, C.x, r0, c0),
                             C.ld));
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)n, 24, -0.25,
                    (double *)at(&A, A.r, 0, 0), (int)A.ld, 0.5, (double *)at(&C, C.r, r0, c0),
                    (int)C.ld);
        struct sums s = sum_stats();
        /* the tiles of the 16-grid the block meets: rows r0 .. r0 + n - 1, cols c0 .. */
        uint64_t tr = (uint64_t)((r0 + n - 1) / 16 - r0 / 16 + 1),
                 tc = (uint64_t)((c0 + n - 1) / 16 - c0 / 16 + 1);
        /* d2h: the write-back of those tiles, then the SYRK's own result (at most n x n) */
        uint64_t met = tr * tc * 16 * 16 * 8, bound = met + (uint64_t)(n * n * 8);
        fprintf(stderr,
                "  dsyrk on %lld x %lld at (%lld, %lld): d2h %llu bytes (its %llu x %llu tiles "
                "%llu + its result <= %llu; all of C alone: %llu)\n",
                (long long)n, (long long)n, (long long)r0, (long long)c0, (unsigned long long)s.d2h,
                (unsigned long long)tr, (unsigned long long)tc, (unsigned long long)met,
                (unsigned long long)bound - met, (unsigned long long)(100 * 90 * 8));
        ASSERT(bound < 100 * 90 * 8); /* the whole matrix written back would not pass */
        ASSERT_MSG(s.d2h >= met && s.d2h <= bound,
                   "d2h %llu: not the tiles the block meets (%llu bytes) and the result",
                   (unsigned long long)s.d2h, (unsigned long long)met);
        dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 100, 90, 24, -0.5, 1.0); /* on the devices */
        ASSERT_OK(tess_sync(C.x));
        double err = mat_err(&C);
        ASSERT_MSG(err <= 1e-12, "C after tess_sync: rel err %.3g", err);
        ASSERT_OK(tess_release(C.x));
        ASSERT_OK(tess_finalize());
        mat_free(&C), mat_free(&A), mat_free(&B);
    }
}

/* A held C of 800 x 720 doubles (4.6 MB) on 3 devices of 512 KiB each: GEMMs with beta = 0.5,
 * 0 and -1 and a trailing update inside C complete right; before the final sync the devices
 * evicted tiles and wrote back more than C's size. */
TEST(out_of_core) {
    uint64_t rng = 23;
    struct mat C, A, B;
    mat_init(&C, "C", TESS_D, 800, 720, 803, &rng);
    mat_init(&A, "A", TESS_D, 800, 48, 800, &rng);
    mat_init(&B, "B", TESS_D, 48, 720, 50, &rng);
    start(3, "32", "512K");
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_hold(TESS_D, C.x, C.ld, C.rows, C.cols, 32));
    ASSERT_OK(tess_hold(TESS_D, A.x, A.ld, A.rows, A.cols, 32));
    tess_reset_stats();
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 800, 720, 48, 0.02, 0.5);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 800, 720, 48, -0.02, 0.0);
    dgemm_both(&C, 64, 64, &C, 64, 16, &C, 16, 64, 736, 656, 48, -0.01, 1.0);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 800, 720, 48, 0.02, -1.0);
    struct sums s0 = sum_stats();
    ASSERT_OK(tess_sync(C.x));
    struct sums s1 = sum_stats();
    const uint64_t cb = 800 * 720 * 8;
    fprintf(stderr,
            "  C %llu bytes on 3 x 512 KiB: before the sync d2h %llu, evictions %llu, write-backs "
            "%llu; after it d2h %llu\n",
            (unsigned long long)cb, (unsigned long long)s0.d2h, (unsigned long long)s0.evict,
            (unsigned long long)s0.wb, (unsigned long long)s1.d2h);
    double err = mat_err(&C);
    ASSERT_MSG(err <= 1e-12, "C after tess_sync: rel err %.3g", err);
    ASSERT_GT(s0.evict, 0);
    ASSERT_GT(s0.d2h, cb);
    ASSERT_OK(tess_release(C.x));
    ASSERT_OK(tess_release(A.x));
    ASSERT_MSG(mat_err(&C) <= 1e-12 && mat_err(&A) == 0, "after tess_release");
    ASSERT_OK(tess_finalize());
    mat_free(&C), mat_free(&A), mat_free(&B);
}

/* ---- the contract checker ------------------------------------------------------------- */

static void plant(struct mat *M, int64_t r, int64_t c, double v) {
    *(double *)at(M, M->x, r, c) += v;
    *(double *)at(M, M->r, r, c) += v;
}

static void expect_violation(int rc, const char *what, const void *base) {
    char p[32];
    snprintf(p, sizeof p, "%p", base);
    const char *msg = tess_last_error();
    fprintf(stderr, "  %s after a planted host write: %d \"%s\"\n", what, rc, msg);
    ASSERT_MSG(rc == TESS_EINVAL, "%s after a planted host write returned %d, not TESS_EINVAL",
               what, rc);
    ASSERT_MSG(strstr(msg, "held") && strstr(msg, p), "%s: the message names no held range %s",
               what, p);
}

/* TESSERA_HOLD_CHECK=1: a host write into a held range after tess_sync without
 * tess_invalidate fails the next GEMM on it (TESS_EINVAL, naming the held range; nothing
 * written), and the next tess_sync likewise; after tess_invalidate host writes are fine.
 * Then a contract-abiding sequence, with write-backs under memory pressure on 1 device
 * whose memory the held C exceeds, raises no alarm and ends right. */
TEST(checker) {
    uint64_t rng = 31;
    struct mat C, A, B;
    mat_init(&C, "C", TESS_D, 150, 130, 151, &rng);
    mat_init(&A, "A", TESS_D, 150, 40, 150, &rng);
    mat_init(&B, "B", TESS_D, 40, 130, 40, &rng);
    start(3, "32", "16M");
    setenv("TESSERA_HOLD_CHECK", "1", 1);
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_hold(TESS_D, C.x, C.ld, C.rows, C.cols, 32));
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.05, 1.0);
    ASSERT_OK(tess_sync(C.x));
    ASSERT_MSG(mat_err(&C) <= 1e-12, "rel err %.3g", mat_err(&C));
    plant(&C, 40, 70, 1.0); /* tile (1, 2) */
    int rc = tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 150, 130, 40, 0.05,
                        (double *)A.x, A.ld, (double *)B.x, B.ld, 1.0, (double *)C.x, C.ld);
    expect_violation(rc, "tess_dgemm", C.x);
    /* the failed call wrote nothing; after tess_invalidate (which may report the write too)
     * the host's contents, planted write included, are what the next call reads */
    rc = tess_invalidate(C.x);
    ASSERT_MSG(rc == TESS_OK || rc == TESS_EINVAL, "tess_invalidate returned %d", rc);
    ASSERT_MSG(mat_err(&C) <= 1e-12, "after the failed call: rel err %.3g", mat_err(&C));
    plant(&C, 149, 129, -2.0);
    plant(&C, 0, 0, 3.0);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, -0.05, 0.5);
    ASSERT_OK(tess_sync(C.x));
    ASSERT_MSG(mat_err(&C) <= 1e-12, "after invalidate, host writes, GEMM, sync: rel err %.3g",
               mat_err(&C));
    /* a planted write found by tess_sync */
    plant(&C, 100, 10, 1.0);
    expect_violation(tess_sync(C.x), "tess_sync", C.x);
    rc = tess_release(C.x);
    ASSERT_MSG(rc == TESS_OK || rc == TESS_EINVAL, "tess_release returned %d", rc);
    /* no longer held: host writes and calls as usual */
    plant(&C, 3, 3, 1.0);
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.05, 1.0);
    ASSERT_MSG(mat_err(&C) <= 1e-12, "after release: rel err %.3g", mat_err(&C));
    ASSERT_OK(tess_finalize());

    /* the contract kept, under memory pressure: no false alarm */
    struct mat D;
    mat_init(&D, "D", TESS_D, 300, 200, 301, &rng); /* 480 KB against 256 KiB */
    start(1, "32", "256K");
    setenv("TESSERA_HOLD_CHECK", "1", 1);
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_hold(TESS_D, D.x, D.ld, D.rows, D.cols, 32));
    ASSERT_OK(tess_hold(TESS_D, A.x, A.ld, A.rows, A.cols, 32));
    tess_reset_stats();
    dgemm_both(&D, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.05, 1.0);
    dgemm_both(&D, 150, 0, &D, 0, 130, &D, 0, 0, 150, 130, 70, 0.01, 0.5);
    dgemm_both(&D, 0, 130, &A, 0, 0, &B, 0, 0, 150, 70, 40, 0.05, 0.0);
    ASSERT_OK(tess_sync(D.x));
    ASSERT_MSG(mat_err(&D) <= 1e-12, "D after sync: rel err %.3g", mat_err(&D));
    dgemm_both(&D, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.05, 1.0);
    ASSERT_OK(tess_invalidate(D.x));
    ASSERT_MSG(mat_err(&D) <= 1e-12, "D after invalidate: rel err %.3g", mat_err(&D));
    plant(&D, 299, 199, 5.0);
    plant(&D, 10, 150, -5.0);
    dgemm_both(&D, 150, 70, &D, 0, 0, &B, 0, 0, 150, 130, 40, 0.01, 1.0);
    dgemm_both(&D, 0, 0, &A, 0, 0, &B, 0, 0, 150, 130, 40, 0.05, -1.0);
    ASSERT_OK(tess_sync(D.x));
    struct sums st = sum_stats();
    fprintf(stderr, "  contract kept on 1 x 256 KiB: %llu evictions, %llu write-backs\n",
            (unsigned long long)st.evict, (unsigned long long)st.wb);
    ASSERT_MSG(mat_err(&D) <= 1e-12, "D after the last sync: rel err %.3g", mat_err(&D));
    ASSERT_OK(tess_release(D.x));
    ASSERT_OK(tess_release(A.x));
    ASSERT_OK(tess_finalize());
    mat_free(&C), mat_free(&A), mat_free(&B), mat_free(&D);
}

/* ---- faults --------------------------------------------------------------------------- */

enum { FCALLS = 4 };

struct fault_case {
    struct mat C, A, B;
    char *snap[FCALLS + 1]; /* C's mirror after 0 .. FCALLS calls */
};

/* Call i (0-based) of the short sequence on held C (and held A, plain B); the status. */
static int fault_call(struct fault_case *f, int i, int mirror) {
    struct mat *C = &f->C, *A = &f->A, *B = &f->B;
    static const double al[FCALLS] = {0.05, -0.04, 0.03, -0.02}, be[FCALLS] = {0.5, 1.0, 0, 1.0};
    double *x = mirror ? (double *)C->r : (double *)C->x;
    const double *a = (const double *)(mirror ? A->r : A->x), *b = (const double *)B->x;
    if (i == 3) { /* trailing update inside C: C[40:, 40:] += al C[40:, 8:40] C[8:40, 40:] */
        double *c = x + 40 + 40 * C->ld;
        if (mirror) {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 60, 50, 32, al[i],
                        x + 40 + 8 * C->ld, (int)C->ld, x + 8 + 40 * C->ld, (int)C->ld, be[i], c,
                        (int)C->ld);
            return 0;
        }
        return tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 60, 50, 32, al[i],
                          x + 40 + 8 * C->ld, C->ld, x + 8 + 40 * C->ld, C->ld, be[i], c, C->ld);
    }
    tess_trans_t tb = i == 1 ? TESS_TRANS : TESS_NO_TRANS;
    int64_t ldb = i == 1 ? 90 : B->ld;
    if (mirror) {
        cblas_dgemm(CblasColMajor, CblasNoTrans, (enum CBLAS_TRANSPOSE)tb, 100, 90, 40, al[i], a,
                    (int)A->ld, b, (int)ldb, be[i], x, (int)C->ld);
        return 0;
    }
    return tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, tb, 100, 90, 40, al[i], a, A->ld, b, ldb,
                      be[i], x, C->ld);
}

/* Every T x T tile of C equals C's value after some number of calls 0 .. ncalls. */
static int tiles_from_snapshots(struct fault_case *f, int ncalls, int64_t T, char *msg,
                                size_t len) {
    struct mat *C = &f->C;
    int bad = 0;
    for (int64_t tj = 0; tj * T < C->cols; tj++)
        for (int64_t ti = 0; ti * T < C->rows; ti++) {
            int64_t r = ti * T, c = tj * T, rows = C->rows - r < T ? C->rows - r : T;
            int64_t cols = C->cols - c < T ? C->cols - c : T;
            int found = 0;
            for (int j = 0; j <= ncalls && !found; j++)
                found = block_err(C, C->x, f->snap[j], r, c, rows, cols) <= 1e-12;
            if (!found && bad++ == 0)
                snprintf(msg, len,
                         "tile (%lld, %lld) holds neither the final value nor one after any "
                         "call (rel err against the final %.3g)",
                         (long long)ti, (long long)tj,
                         block_err(C, C->x, f->snap[ncalls], r, c, rows, cols));
        }
    return bad;
}

/* Print, for each T x T tile of C, after how many calls C held what the tile holds. */
static void describe_tiles(struct fault_case *f, int64_t T) {
    struct mat *C = &f->C;
    fprintf(stderr, "  tiles of C (row, column: state after that many calls, - for none):");
    for (int64_t tj = 0; tj * T < C->cols; tj++)
        for (int64_t ti = 0; ti * T < C->rows; ti++) {
            int64_t r = ti * T, c = tj * T, rows = C->rows - r < T ? C->rows - r : T;
            int64_t cols = C->cols - c < T ? C->cols - c : T;
            int found = -1;
            for (int j = FCALLS; j >= 0 && found < 0; j--)
                if (block_err(C, C->x, f->snap[j], r, c, rows, cols) <= 1e-12) found = j;
            if (found < 0)
                fprintf(stderr, " (%lld,%lld):-", (long long)ti, (long long)tj);
            else
                fprintf(stderr, " (%lld,%lld):%d", (long long)ti, (long long)tj, found);
        }
    fprintf(stderr, "\n");
}

static void fault_sweep(const char *recover, int hold_ab) {
    struct fault_case f;
    uint64_t rng = 41;
    mat_init(&f.C, "C", TESS_D, 100, 90, 101, &rng);
    mat_init(&f.A, "A", TESS_D, 100, 40, 100, &rng);
    mat_init(&f.B, "B", TESS_D, 90, 90, 90, &rng); /* 40 x 90 (ld 90), or 90 x 40 for B^T */
    size_t cbytes = nel(&f.C) * 8;
    char *c0 = ref_malloc(cbytes);
    memcpy(c0, f.C.x, cbytes);
    f.snap[0] = ref_malloc(cbytes);
    memcpy(f.snap[0], c0, cbytes);
    for (int i = 0; i < FCALLS; i++) {
        fault_call(&f, i, 1);
        f.snap[i + 1] = ref_malloc(cbytes);
        memcpy(f.snap[i + 1], f.C.r, cbytes);
    }
    char tag[64];
    snprintf(tag, sizeof tag, "TESSERA_RECOVER=%s, A and B %s", recover,
             hold_ab ? "held (asynchronous calls)" : "not held");
    int right = 0, call_fail = 0, sync_fail = 0, hit = 0, miss_run = 0, k, k0, k1;
    /* TESS_HOLD_FAULT=k runs fault point k alone (reproducers) */
    emu_fault_range("TESS_HOLD_FAULT", 400, &k0, &k1);
    for (k = k0; k <= k1 && miss_run < 6; k++) {
        char p[32];
        memcpy(f.C.x, c0, cbytes);
        emu_fault_init(start, k, recover);
        snprintf(p, sizeof p, "%p", (void *)f.C.x);
        ASSERT_OK(tess_hold(TESS_D, f.C.x, f.C.ld, f.C.rows, f.C.cols, 32));
        if (hold_ab) {
            ASSERT_OK(tess_hold(TESS_D, f.A.x, f.A.ld, f.A.rows, f.A.cols, 32));
            ASSERT_OK(tess_hold(TESS_D, f.B.x, f.B.ld, f.B.rows, f.B.cols, 32));
        }
        int done = 0, rc = TESS_OK;
        for (; done < FCALLS; done++) {
            rc = fault_call(&f, done, 0);
            ASSERT_MSG(rc == TESS_OK || rc == TESS_EDEVICE,
                       "%s, fault 1:%d: call %d returned %d: %s", tag, k, done, rc,
                       tess_last_error());
            if (rc) break;
        }
        /* the errors of asynchronous calls, one per tess_wait, then TESS_OK */
        for (int w = 0; w < 2 * FCALLS && !rc; w++) {
            int wrc = tess_wait();
            ASSERT_MSG(wrc == TESS_OK || wrc == TESS_EDEVICE,
                       "%s, fault 1:%d: tess_wait returned %d: %s", tag, k, wrc, tess_last_error());
            if (wrc == TESS_OK) break;
            rc = wrc;
        }
        int src = tess_sync(f.C.x);
        char smsg[512];
        snprintf(smsg, sizeof smsg, "%s", tess_last_error());
        ASSERT_MSG(src == TESS_OK || src == TESS_EDEVICE,
                   "%s, fault 1:%d: tess_sync returned %d: %s", tag, k, src, smsg);
        int rrc = tess_release(f.C.x);
        ASSERT_MSG(rrc == TESS_OK || rrc == TESS_EDEVICE,
                   "%s, fault 1:%d: tess_release returned %d: %s", tag, k, rrc, tess_last_error());
        for (int i = 0; i < 2 && hold_ab; i++) {
            /* never written, nothing lost: only a failed call's error again */
            int arc = tess_release(i ? f.B.x : f.A.x);
            ASSERT_MSG(arc == TESS_OK || (rc && arc == TESS_EDEVICE),
                       "%s, fault 1:%d: tess_release(%c) returned %d: %s", tag, k, i ? 'B' : 'A',
                       arc, tess_last_error());
        }
        int failed = emu_fault_end();
        hit += failed;
        miss_run = failed ? 0 : miss_run + 1;
        ASSERT_MSG(mat_err(&f.A) == 0 && mat_err(&f.B) == 0, "%s, fault 1:%d: A or B changed", tag,
                   k);
        if (rc) { /* a call failed: C is unspecified, but nothing hung */
            call_fail++;
            continue;
        }
        if (src == TESS_OK) {
            double err = block_err(&f.C, f.C.x, f.snap[FCALLS], 0, 0, f.C.ld, f.C.cols);
            if (!(err <= 1e-12)) describe_tiles(&f, 32);
            ASSERT_MSG(err <= 1e-12,
                       "%s, fault 1:%d: every call and tess_sync returned TESS_OK "
                       "but C is wrong (rel err %.3g; tess_release %d)",
                       tag, k, err, rrc);
            right++;
            continue;
        }
        sync_fail++;
        ASSERT_MSG(strstr(smsg, "held") || strstr(smsg, p),
                   "%s, fault 1:%d: tess_sync's TESS_EDEVICE names no held range %s: %s", tag, k, p,
                   smsg);
        /* a lost tile whose write-back the failure cut short may hold a mix of two states
         * (held.md): at most as many tiles as the sync says were lost */
        char msg[256] = "";
        int bad = tiles_from_snapshots(&f, FCALLS, 32, msg, sizeof msg), nlost = 0;
        const char *lp = strstr(smsg, "): ");
        if (lp) sscanf(lp + 3, "%d tile(s) were lost", &nlost);
        ASSERT_MSG(bad <= nlost,
                   "%s, fault 1:%d: tess_sync TESS_EDEVICE (%s), then %d tile(s) "
                   "in no state C had, the first: %s",
                   tag, k, smsg, bad, msg);
    }
    fprintf(stderr,
            "  %s: faults at ops %d..%d (%d reached): %d right, %d calls "
            "TESS_EDEVICE, %d syncs TESS_EDEVICE with every tile as last written back\n",
            tag, k0, k - 1, hit, right, call_fail, sync_fail);
    ASSERT_MSG(hit > 0 || k1 == k0, "device 1 never reached its fault point");
    for (int i = 0; i <= FCALLS; i++) free(f.snap[i]);
    free(c0);
    mat_free(&f.C), mat_free(&f.A), mat_free(&f.B);
}

/* Device 1 of 3 fails at its k-th copy or kernel, k = 1, 2, ... until it no longer reaches
 * k: four GEMMs on a held C (beta 0.5, 1, 0, and a trailing update inside C) then tess_sync
 * and tess_release. With A and B held too every call is asynchronous (its error comes at
 * the sync); with them plain the first three are synchronous. Each call and the sync
 * returns TESS_OK or TESS_EDEVICE; when all return TESS_OK, C is right; when the sync
 * reports TESS_EDEVICE, every tile of C holds a value it had after some call (lost tiles:
 * the contents last written back; others current; a lost tile is never read from its
 * stale host copy: docs/held.md). Never a hang (the test's timeout). Sweeps:
 * TESSERA_RECOVER=0 with A, B held and plain; TESSERA_RECOVER=1 with them held.
 * Reproducers: TESS_HOLD_SWEEP=1..3 runs one sweep, TESS_HOLD_FAULT=k fault point k alone. */
TEST(faults) {
    long only = ref_env_long("TESS_HOLD_SWEEP", 0); /* 1, 2 or 3: that sweep alone */
    if (!only || only == 1) fault_sweep("0", 1);
    if (!only || only == 2) fault_sweep("0", 0);
    if (!only || only == 3) fault_sweep("1", 1);
}

/* ---- arguments ------------------------------------------------------------------------ */

/* DTRSM and DTRMM whose A is the leading 70 x 70 block of a held 80 x 80 matrix (ld 83, tile
 * 32: A at a tile corner, read where it is held), every side, layout, uplo and transpose, B a
 * plain 70 x 50 or 50 x 70 array (ld one above its minimum), one emulated device: B as cblas
 * makes it (within 1e-12 relative to its largest entry); each call made twice with A held
 * (the first may load A's tiles) and once with a plain copy of A, and the second held call
 * copies at least three whole tiles fewer host to device than the plain one (B's tiles
 * travel alike); at the end the held matrix's host range is bit for bit as it was. */
TEST(trxm_held_a) {
    start(1, "32", "16M");
    ASSERT_OK(tess_init());
    const int64_t N = 80, ld = 83, ka = 70, nb = 50;
    uint64_t rng = 777;
    double *T = malloc(sizeof(double) * (size_t)(ld * N)),
           *T0 = malloc(sizeof(double) * (size_t)(ld * N));
    ASSERT(T && T0);
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < ld; i++)
            T[i + j * ld] = i == j ? 2 + ref_rand_unit(&rng)
                                   : 0.5 * ref_rand_unit(&rng) / (double)N;
    memcpy(T0, T, sizeof(double) * (size_t)(ld * N));
    ASSERT_OK(tess_hold(TESS_D, T, ld, N, N, 32));
    int cases = 0;
    for (int solve = 0; solve < 2; solve++)
        for (int l = 0; l < 2; l++)
            for (int sd = 0; sd < 2; sd++)
                for (int u = 0; u < 2; u++)
                    for (int t = 0; t < 2; t++, cases++) {
                        tess_layout_t L = l ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                        tess_side_t side = sd ? TESS_RIGHT : TESS_LEFT;
                        tess_uplo_t ul = u ? TESS_UPPER : TESS_LOWER;
                        tess_trans_t ta = t ? TESS_TRANS : TESS_NO_TRANS;
                        int64_t m = sd ? nb : ka, n = sd ? ka : nb;
                        int64_t ldb = (l ? n : m) + 1, bn = ldb * (l ? m : n);
                        double *B = malloc(sizeof(double) * (size_t)bn),
                               *R = malloc(sizeof(double) * (size_t)bn);
                        ASSERT(B && R);
                        uint64_t h2d[3];
                        for (int rep = 0; rep < 3; rep++) {
                            const double *A = rep < 2 ? T : T0; /* held, then plain */
                            for (int64_t i = 0; i < bn; i++) B[i] = R[i] = ref_rand_unit(&rng);
                            tess_reset_stats();
                            int rc = solve ? tess_dtrsm(L, side, ul, ta, TESS_NON_UNIT, m, n, 0.5,
                                                        A, ld, B, ldb)
                                           : tess_dtrmm(L, side, ul, ta, TESS_NON_UNIT, m, n, 0.5,
                                                        A, ld, B, ldb);
                            ASSERT_MSG(rc == TESS_OK, "case %d: returned %d (%s)", cases, rc,
                                       tess_last_error());
                            h2d[rep] = emu_bytes_h2d(1);
                            (solve ? cblas_dtrsm : cblas_dtrmm)(
                                (enum CBLAS_ORDER)L, (enum CBLAS_SIDE)side, (enum CBLAS_UPLO)ul,
                                (enum CBLAS_TRANSPOSE)ta, CblasNonUnit, (int)m, (int)n, 0.5, T0,
                                (int)ld, R, (int)ldb);
                            double mx = 0, err = 0;
                            for (int64_t i = 0; i < bn; i++)
                                mx = fmax(mx, fabs(R[i])), err = fmax(err, fabs(B[i] - R[i]));
                            ASSERT_MSG(err <= 1e-12 * fmax(mx, 1),
                                       "d%s %s side %c uplo %c trans %c: |B - cblas| %.3g (max "
                                       "|B| %.3g)",
                                       solve ? "trsm" : "trmm", ref_layout_name(L), sd ? 'R' : 'L',
                                       u ? 'U' : 'L', t ? 'T' : 'N', err, mx);
                        }
                        /* the triangle's held tiles include three whole 32 x 32 ones */
                        uint64_t abytes = 3 * 32 * 32 * sizeof(double);
                        ASSERT_MSG(h2d[1] + abytes <= h2d[2],
                                   "d%s %s side %c uplo %c trans %c: %llu bytes host to device "
                                   "with A held, %llu with a plain copy of A: the held A was "
                                   "read from the host",
                                   solve ? "trsm" : "trmm", ref_layout_name(L), sd ? 'R' : 'L',
                                   u ? 'U' : 'L', t ? 'T' : 'N', (unsigned long long)h2d[1],
                                   (unsigned long long)h2d[2]);
                        free(B), free(R);
                    }
    ASSERT_OK(tess_sync(T));
    ASSERT_MSG(!memcmp(T, T0, sizeof(double) * (size_t)(ld * N)),
               "the held matrix's host range changed: nothing writes it");
    ASSERT_OK(tess_release(T));
    free(T), free(T0);
    ASSERT_OK(tess_finalize());
}

/* tess_hold rejects NULL, ld < rows, rows < 0, cols < 0, tile < 0, a bad dtype and a range
 * overlapping one held already (the same start, a block inside, one starting before);
 * tess_sync/invalidate/release reject NULL, a pointer inside a held range and one never
 * held; holding twice and releasing twice fail; after all of that the held range still
 * works, and a released range can be held again. */
TEST(bad_input) {
    uint64_t rng = 5;
    struct mat M, P;
    mat_init(&M, "M", TESS_D, 70, 50, 75, &rng);
    mat_init(&P, "P", TESS_D, 40, 40, 40, &rng);
    double *x = (double *)M.x, other[64];
    start(2, "32", "16M");
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_hold(TESS_D, NULL, 75, 70, 50, 32), TESS_EINVAL);
    ASSERT_EQ(tess_hold(TESS_D, x, 69, 70, 50, 32), TESS_EINVAL);
    ASSERT_EQ(tess_hold(TESS_D, x, 75, -1, 50, 32), TESS_EINVAL);
    ASSERT_EQ(tess_hold(TESS_D, x, 75, 70, -1, 32), TESS_EINVAL);
    ASSERT_EQ(tess_hold(TESS_D, x, 75, 70, 50, -1), TESS_EINVAL);
    ASSERT_EQ(tess_hold((tess_dtype_t)7, x, 75, 70, 50, 32), TESS_EINVAL);
    ASSERT_EQ(tess_hold((tess_dtype_t)-1, x, 75, 70, 50, 32), TESS_EINVAL);
    ASSERT_NE(tess_last_error()[0], '\0');
    ASSERT_EQ(tess_sync(x), TESS_EINVAL); /* nothing held yet */
    ASSERT_OK(tess_hold(TESS_D, x + 75 * 10, 75, 70, 30, 32));
    ASSERT_EQ(tess_hold(TESS_D, x + 75 * 10, 75, 70, 30, 32), TESS_EINVAL);    /* twice */
    ASSERT_EQ(tess_hold(TESS_D, x + 75 * 12 + 5, 75, 10, 5, 32), TESS_EINVAL); /* inside */
    ASSERT_EQ(tess_hold(TESS_D, x, 75, 70, 12, 32), TESS_EINVAL);              /* begins before */
    ASSERT_EQ(tess_hold(TESS_D, x + 75 * 39, 75, 70, 11, 32), TESS_EINVAL);    /* last column */
    ASSERT_OK(tess_hold(TESS_D, x, 75, 70, 10, 16)); /* the columns before: disjoint */
    ASSERT_EQ(tess_sync(NULL), TESS_EINVAL);
    ASSERT_EQ(tess_invalidate(NULL), TESS_EINVAL);
    ASSERT_EQ(tess_release(NULL), TESS_EINVAL);
    ASSERT_EQ(tess_sync(x + 75 * 10 + 1), TESS_EINVAL);
    ASSERT_EQ(tess_invalidate(x + 75 * 11), TESS_EINVAL);
    ASSERT_EQ(tess_release(x + 75 * 10 + 74), TESS_EINVAL);
    ASSERT_EQ(tess_sync(other), TESS_EINVAL);
    ASSERT_EQ(tess_release(other), TESS_EINVAL);
    /* both ranges still work */
    dgemm_both(&M, 0, 10, &M, 0, 0, &P, 0, 0, 70, 30, 10, 0.1, 1.0);
    ASSERT_OK(tess_sync(x + 75 * 10));
    ASSERT_OK(tess_sync(x));
    ASSERT_MSG(mat_err(&M) <= 1e-12, "rel err %.3g", mat_err(&M));
    ASSERT_OK(tess_release(x + 75 * 10));
    ASSERT_EQ(tess_release(x + 75 * 10), TESS_EINVAL); /* twice */
    ASSERT_EQ(tess_sync(x + 75 * 10), TESS_EINVAL);
    ASSERT_OK(tess_release(x));
    ASSERT_EQ(tess_invalidate(x), TESS_EINVAL);
    /* held again after release */
    ASSERT_OK(tess_hold(TESS_D, x, 75, 70, 50, 0));
    dgemm_both(&M, 0, 25, &M, 0, 0, &P, 0, 0, 70, 25, 25, -0.1, 0.5);
    ASSERT_OK(tess_release(x));
    ASSERT_MSG(mat_err(&M) <= 1e-12, "rel err %.3g", mat_err(&M));
    ASSERT_OK(tess_finalize());
    mat_free(&M), mat_free(&P);
}

/* tess_finalize writes held results back (the contract) and ends the holds: a new runtime
 * holds nothing. */
TEST(finalize) {
    uint64_t rng = 9;
    struct mat C, A, B;
    mat_init(&C, "C", TESS_D, 90, 70, 95, &rng);
    mat_init(&A, "A", TESS_D, 90, 33, 90, &rng);
    mat_init(&B, "B", TESS_D, 33, 70, 33, &rng);
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_hold(TESS_D, C.x, C.ld, C.rows, C.cols, 32));
    dgemm_both(&C, 0, 0, &A, 0, 0, &B, 0, 0, 90, 70, 33, 0.1, 0.5);
    dgemm_both(&C, 5, 3, &A, 5, 0, &B, 0, 3, 80, 60, 33, -0.1, 1.0);
    ASSERT_OK(tess_finalize());
    ASSERT_MSG(mat_err(&C) <= 1e-12, "C after tess_finalize: rel err %.3g", mat_err(&C));
    start(3, "32", "16M");
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_sync(C.x), TESS_EINVAL);
    ASSERT_OK(tess_finalize());
    mat_free(&C), mat_free(&A), mat_free(&B);
}

TEST_MAIN()
