/* tests/test_pgemm_mpi.c: the distributed GEMM (tess_p?gemm) against Debian's ScaLAPACK
 * (PBLAS p?gemm_ on a BLACS grid of the same shape and rank order) under mpirun, with 1, 2,
 * 4, 6 and 8 ranks; exits 77 when built without MPI or ScaLAPACK. Each test runs on every
 * grid shape that fits the ranks (shapes_for), each grid opened afresh; what a case against
 * ScaLAPACK checks is said above run_case. A failed check is counted and printed with its
 * case (failf) and the test goes on; at its end the test fails on every rank if any rank
 * saw a failure. A hang is caught by the per-case watchdog and CTest's TIMEOUT.
 * The runtime runs on emulated devices: unless set, TESSERA_DEVICES=none, TESSERA_EMULATE=2,
 * TESSERA_TILE=16, TESSERA_CPU_WORKER=0, TESSERA_EMULATE_MEM=16M. Environment:
 * TEST_PGEMM_SEED (default 1), TEST_PGEMM_CASES (random cases, default 1200),
 * TEST_PGEMM_CASE (that case id only; the other tests return), TEST_PGEMM_VERBOSE=1,
 * TEST_PGEMM_WATCHDOG (seconds per case, default 60), TEST_PGEMM_ONE_RANK_CASES (default 12
 * per rank). TESSERA_PGEMM_CHUNK/_MEM/_VARIANT are set per case (read at every call). Rank 0
 * prints one summary line at the end.
 */
#include <stdio.h>

#if !defined(TESS_HAVE_MPI) || !defined(TESS_HAVE_SCALAPACK)
int main(void) {
#ifndef TESS_TEST_NO_SCALAPACK
    fprintf(stderr, "SKIP: built without MPI\n");
#else
    fprintf(stderr, "SKIP: built without ScaLAPACK (libscalapack-openmpi-dev)\n");
#endif
    return 77;
}
#else

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness_mpi.h"
#include "tessera_mpi.h"

/* ---- BLACS and PBLAS (Fortran symbols of libscalapack-openmpi) ------------------------- */
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int icontxt, int what, int *val);
void Cblacs_gridinit(int *icontxt, char *order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int icontxt);
void Cblacs_exit(int notdone);
#define PGEMM_PROTO(name)                                                                       \
    void name(const char *ta, const char *tb, const int *m, const int *n, const int *k,         \
              const void *alpha, const void *a, const int *ia, const int *ja, const int *desca, \
              const void *b, const int *ib, const int *jb, const int *descb, const void *beta,  \
              void *c, const int *ic, const int *jc, const int *descc);
PGEMM_PROTO(psgemm_)
PGEMM_PROTO(pdgemm_)
PGEMM_PROTO(pcgemm_)
PGEMM_PROTO(pzgemm_)

/* ---- state, reporting ------------------------------------------------------------------ */
static long n_fail; /* failures seen by this rank */
/* what this rank's cases reached, for the tests' coverage checks and the summary line */
static struct tally {
    long cases_ref, cases_one, cases_bad; /* cases vs ScaLAPACK, one-rank, bad input */
    long multipass, pipelined, inplace;   /* stationary C: k in passes, small chunk, in place */
    long devxport, d2d;                   /* through the GPU transport, packing D2D */
    long split[2];                        /* cases that ran stationary A, B */
    long split_units;                     /* of those, pipelined over several units */
    long long compared;                   /* elements of sub(C) compared */
    long bitwise_one; /* one-rank cases: tess_p?gemm == tess_?gemm bit for bit */
} tl;
static int verbose;
static unsigned watchdog_s = 60;
static char cur_case[512] = "startup";

static void on_alarm(int sig) {
    (void)sig;
    char buf[700];
    int n = snprintf(buf, sizeof buf, "rank %d: WATCHDOG: no progress for %u s in %s\n", wrank,
                     watchdog_s, cur_case);
    if (n > 0) (void)!write(2, buf, (size_t)n);
    _exit(3);
}

/* A failure: counted, printed with the case it belongs to (at most a few per case). */
static int fail_budget;
static void failf(const char *fmt, ...) {
    n_fail++;
    if (fail_budget-- <= 0) return;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL rank %d: %s: %s\n", wrank, cur_case, msg);
}

/* ---- deterministic randomness ---------------------------------------------------------- */
static uint64_t seed0 = 1;
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t next(uint64_t *s) { return mix(*s += 0x9E3779B97F4A7C15ull); }
static int rnd(uint64_t *s, int lo, int hi) {
    return lo + (int)(next(s) % (uint64_t)(hi - lo + 1));
}
static double urand(uint64_t *s) { return (double)(next(s) >> 11) * 0x1.0p-53; }
/* Element (i, j) part p of matrix mat of a case: in [-1, 1), the same on every rank. */
static double hval(uint64_t cs, int mat, int64_t i, int64_t j, int p) {
    uint64_t s = mix(cs ^ mix((uint64_t)mat * 0x1000193u + (uint64_t)p) ^
                     mix((uint64_t)i * 0x9E3779B1u + ((uint64_t)j << 32)));
    return 2.0 * urand(&s) - 1.0;
}

/* ---- elements of the four precisions --------------------------------------------------- */
static const size_t esz[4] = {4, 8, 8, 16};
static const char dtc[4] = {'s', 'd', 'c', 'z'};
static int cplx(int dt) { return dt >= TESS_C; }
static double eps_of(int dt) { return dt == TESS_S || dt == TESS_C ? FLT_EPSILON : DBL_EPSILON; }

static void put(int dt, void *p, size_t i, double re, double im) {
    switch (dt) {
    case TESS_S: ((float *)p)[i] = (float)re; break;
    case TESS_D: ((double *)p)[i] = re; break;
    case TESS_C: ((float *)p)[2 * i] = (float)re, ((float *)p)[2 * i + 1] = (float)im; break;
    default: ((double *)p)[2 * i] = re, ((double *)p)[2 * i + 1] = im; break;
    }
}
static void get(int dt, const void *p, size_t i, double *re, double *im) {
    *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)p)[i]; break;
    case TESS_D: *re = ((const double *)p)[i]; break;
    case TESS_C: *re = ((const float *)p)[2 * i], *im = ((const float *)p)[2 * i + 1]; break;
    default: *re = ((const double *)p)[2 * i], *im = ((const double *)p)[2 * i + 1]; break;
    }
}
/* A quiet NaN with a payload (tag), in every part. */
static void put_nan(int dt, void *p, size_t i, uint32_t tag) {
    int parts = cplx(dt) ? 2 : 1;
    for (int q = 0; q < parts; q++) {
        if (dt == TESS_S || dt == TESS_C) {
            uint32_t v = 0x7fc00000u | ((tag + (uint32_t)q) & 0x3fffffu);
            memcpy((char *)p + i * esz[dt] + (size_t)q * 4, &v, 4);
        } else {
            uint64_t v = 0x7ff8000000000000ull | ((uint64_t)(tag + (uint32_t)q) & 0xffffffffull);
            memcpy((char *)p + i * esz[dt] + (size_t)q * 8, &v, 8);
        }
    }
}

/* ---- the block-cyclic map, written here from ScaLAPACK's definitions (IMB = MB) -------- */
static int numroc(int n, int nb, int p, int src, int np) {
    int d = (p - src + np) % np, nblocks = n / nb, r = (nblocks / np) * nb;
    int extra = nblocks % np;
    if (d < extra)
        r += nb;
    else if (d == extra)
        r += n % nb;
    return r;
}
static int g2p(int g, int nb, int src, int np) { return (src + g / nb) % np; }
static int l2g(int l, int nb, int p, int src, int np) {
    return ((l / nb) * np + (p - src + np) % np) * nb + l % nb;
}

/* One distributed matrix as this rank holds it. */
struct lmat {
    int M, N, mb, nb, rsrc, csrc; /* global: the descriptor but LLD */
    int lr, lc, lld;              /* local rows, columns, leading dimension (this rank) */
    int dt;
    size_t nel; /* elements allocated: lld * max(1, lc) */
    unsigned char *p;
};

/* Allocate and fill: element (gi, gj) = hval(cs, mat, gi, gj); the LLD gap (and a rank
 * with no columns: its one column) holds NaN with a payload. */
static void lmat_make(struct lmat *x, int dt, int M, int N, int mb, int nb, int rsrc, int csrc,
                      int P, int Q, int myrow, int mycol, int lld_extra, uint64_t cs, int mat) {
    x->dt = dt, x->M = M, x->N = N, x->mb = mb, x->nb = nb, x->rsrc = rsrc, x->csrc = csrc;
    if (myrow >= 0) {
        x->lr = numroc(M, mb, myrow, rsrc, P);
        x->lc = numroc(N, nb, mycol, csrc, Q);
    } else {
        x->lr = x->lc = 0;
    }
    x->lld = (x->lr > 1 ? x->lr : 1) + lld_extra;
    x->nel = (size_t)x->lld * (size_t)(x->lc > 1 ? x->lc : 1);
    x->p = malloc(x->nel * esz[dt]);
    if (!x->p) {
        fprintf(stderr, "rank %d: out of memory\n", wrank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int lj = 0; lj < (x->lc > 1 ? x->lc : 1); lj++)
        for (int li = 0; li < x->lld; li++) {
            size_t e = (size_t)li + (size_t)lj * (size_t)x->lld;
            if (li < x->lr && lj < x->lc) {
                int gi = l2g(li, mb, myrow, rsrc, P), gj = l2g(lj, nb, mycol, csrc, Q);
                put(dt, x->p, e, hval(cs, mat, gi, gj, 0), hval(cs, mat, gi, gj, 1));
            } else {
                put_nan(dt, x->p, e, (uint32_t)(mat * 1000003 + (int)e));
            }
        }
}
static unsigned char *dup_bytes(const struct lmat *x) {
    unsigned char *c = malloc(x->nel * esz[x->dt]);
    if (!c) MPI_Abort(MPI_COMM_WORLD, 2);
    memcpy(c, x->p, x->nel * esz[x->dt]);
    return c;
}
static void desc9(const struct lmat *x, int ctxt, int d[9]) {
    d[0] = 1, d[1] = ctxt, d[2] = x->M, d[3] = x->N, d[4] = x->mb, d[5] = x->nb;
    d[6] = x->rsrc, d[7] = x->csrc, d[8] = x->lld;
}
static tess_desc_t tdesc(const struct lmat *x) {
    tess_desc_t d;
    tess_desc_init(&d, x->M, x->N, x->mb, x->nb, x->rsrc, x->csrc, x->lld);
    return d;
}

/* ---- one case -------------------------------------------------------------------------- */
struct pcase {
    int id;
    int dt;
    char ta, tb;
    int m, n, k;
    /* global descriptors (LLD per rank: lld_extra from the rank) */
    int AM, AN, Amb, Anb, Arsrc, Acsrc;
    int BM, BN, Bmb, Bnb, Brsrc, Bcsrc;
    int CM, CN, Cmb, Cnb, Crsrc, Ccsrc;
    int ia, ja, ib, jb, ic, jc;
    double al[2], be[2];
    int nanC;        /* beta = 0 and sub(C) full of NaN */
    int aligned;     /* A's rows and B's columns follow C's map */
    int aliasB;      /* B is A: the same local array and descriptor */
    long chunk, mem; /* TESSERA_PGEMM_CHUNK / _MEM for this case, 0 = unset */
    int typed;       /* tess_p?gemm (1) or tess_pgemm (0) */
    char variant;    /* TESSERA_PGEMM_VARIANT for this case: 0 (auto), 'a', 'b', 'c' */
    char expect;     /* the variant stats must report ('C', 'A', 'B'), 0 = any */
    uint64_t cs;     /* data seed */
};

static tess_trans_t ttrans(char t) {
    return t == 'N' ? TESS_NO_TRANS : t == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
}

static void describe(const struct pcase *c, int P, int Q, char order, char *out, size_t n) {
    snprintf(out, n,
             "case %d on %dx%d '%c' (seed %" PRIu64 "): %cgemm ta=%c tb=%c m=%d n=%d k=%d "
             "alpha=(%g,%g) beta=(%g,%g)%s A[%dx%d mb=%d nb=%d src=%d,%d ia=%d ja=%d] "
             "B[%dx%d mb=%d nb=%d src=%d,%d ib=%d jb=%d] C[%dx%d mb=%d nb=%d src=%d,%d "
             "ic=%d jc=%d] chunk=%ld mem=%ld variant=%s %s%s%s",
             c->id, P, Q, order, seed0, dtc[c->dt], c->ta, c->tb, c->m, c->n, c->k, c->al[0],
             c->al[1], c->be[0], c->be[1], c->nanC ? " C=NaN" : "", c->AM, c->AN, c->Amb, c->Anb,
             c->Arsrc, c->Acsrc, c->ia, c->ja, c->BM, c->BN, c->Bmb, c->Bnb, c->Brsrc, c->Bcsrc,
             c->ib, c->jb, c->CM, c->CN, c->Cmb, c->Cnb, c->Crsrc, c->Ccsrc, c->ic, c->jc, c->chunk,
             c->mem,
             c->variant == 'a'   ? "a"
             : c->variant == 'b' ? "b"
             : c->variant == 'c' ? "c"
                                 : "auto",
             c->typed ? "typed" : "generic", c->aliasB ? " B=A" : "", c->aligned ? " aligned" : "");
}

static int pick_dim(uint64_t *s) {
    int r = rnd(s, 0, 99);
    if (r < 5) return 1;
    if (r < 40) return rnd(s, 1, 20);
    if (r < 85) return rnd(s, 21, 60);
    return rnd(s, 61, 120);
}
static int pick_block(uint64_t *s) {
    static const int bs[] = {1, 2, 3, 3, 4, 5, 5, 7, 7, 8, 11, 13, 16, 32, 1000};
    return bs[rnd(s, 0, (int)(sizeof bs / sizeof bs[0]) - 1)];
}
/* One dimension of a matrix around a submatrix of len indices: offset, global size. */
static void place(uint64_t *s, int len, int *off, int *glob) {
    int r = rnd(s, 0, 9);
    *off = r < 3 ? 0 : rnd(s, 1, 12);
    *glob = *off + len + (r == 9 ? 0 : rnd(s, 0, 6));
    if (*glob <= *off) *glob = *off + 1; /* an empty submatrix still lies inside */
}
static void scalar(uint64_t *s, int dt, double v[2]) {
    v[0] = 4.0 * urand(s) - 2.0;
    v[1] = cplx(dt) ? 4.0 * urand(s) - 2.0 : 0.0;
    if (dt == TESS_S || dt == TESS_C) v[0] = (float)v[0], v[1] = (float)v[1];
}

static void make_case(int id, int P, int Q, int force_work, struct pcase *c) {
    uint64_t s = mix(seed0 * 0x2545F4914F6CDD1Dull + (uint64_t)id * 0x9E3779B97F4A7C15ull);
    memset(c, 0, sizeof *c);
    c->id = id;
    c->cs = next(&s);
    c->dt = rnd(&s, 0, 3);
    static const char tr[3] = {'N', 'T', 'C'};
    c->ta = tr[rnd(&s, 0, 2)];
    c->tb = tr[rnd(&s, 0, 2)];
    c->m = pick_dim(&s), c->n = pick_dim(&s), c->k = pick_dim(&s);
    int sp = rnd(&s, 0, 99);
    if (sp < 4)
        c->m = 0;
    else if (sp < 8)
        c->n = 0;
    else if (sp < 14)
        c->k = 0;
    scalar(&s, c->dt, c->al);
    scalar(&s, c->dt, c->be);
    int sc = rnd(&s, 0, 99);
    if (sc < 14)
        c->be[0] = c->be[1] = 0, c->nanC = 1;
    else if (sc < 20)
        c->be[0] = 1, c->be[1] = 0;
    else if (sc < 27)
        c->al[0] = c->al[1] = 0;
    else if (sc < 30)
        c->al[0] = c->al[1] = 0, c->be[0] = c->be[1] = 0, c->nanC = 1;
    if (force_work) {
        if (c->m == 0) c->m = 17;
        if (c->n == 0) c->n = 9;
        if (c->k == 0) c->k = 33;
        if (c->al[0] == 0 && c->al[1] == 0) c->al[0] = 0.75;
    }
    /* C */
    place(&s, c->m, &c->ic, &c->CM);
    place(&s, c->n, &c->jc, &c->CN);
    c->Cmb = pick_block(&s), c->Cnb = pick_block(&s);
    c->Crsrc = rnd(&s, 0, P - 1), c->Ccsrc = rnd(&s, 0, Q - 1);
    /* sub(A): m x k (N) or k x m; sub(B): k x n (N) or n x k */
    int ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
    int br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
    place(&s, ar, &c->ia, &c->AM);
    place(&s, ac, &c->ja, &c->AN);
    place(&s, br, &c->ib, &c->BM);
    place(&s, bc, &c->jb, &c->BN);
    c->Amb = pick_block(&s), c->Anb = pick_block(&s);
    c->Bmb = pick_block(&s), c->Bnb = pick_block(&s);
    c->Arsrc = rnd(&s, 0, P - 1), c->Acsrc = rnd(&s, 0, Q - 1);
    c->Brsrc = rnd(&s, 0, P - 1), c->Bcsrc = rnd(&s, 0, Q - 1);
    if (rnd(&s, 0, 99) < 12) {
        /* op(A) = A with C's row map, op(B) = B with C's column map: in place on P x 1
         * (A) and 1 x Q (B) grids */
        c->aligned = 1;
        c->ta = c->tb = 'N';
        c->ia = c->ic, c->Amb = c->Cmb, c->Arsrc = c->Crsrc;
        c->AM = c->CM > c->ia + c->m ? c->CM : c->ia + c->m;
        c->ja = rnd(&s, 0, 5), c->AN = c->ja + c->k + rnd(&s, 0, 3);
        if (c->AN < 1) c->AN = 1;
        c->jb = c->jc, c->Bnb = c->Cnb, c->Bcsrc = c->Ccsrc;
        c->BN = c->CN > c->jb + c->n ? c->CN : c->jb + c->n;
        c->ib = rnd(&s, 0, 5), c->BM = c->ib + c->k + rnd(&s, 0, 3);
        if (c->BM < 1) c->BM = 1;
    }
    if (!c->aligned && rnd(&s, 0, 99) < 6 && br <= c->AM && bc <= c->AN) {
        /* op(A) op(B) with B = A, e.g. A A^T: two operands from one local array */
        c->aliasB = 1;
        c->BM = c->AM, c->BN = c->AN, c->Bmb = c->Amb, c->Bnb = c->Anb;
        c->Brsrc = c->Arsrc, c->Bcsrc = c->Acsrc;
        c->ib = rnd(&s, 0, c->AM - br), c->jb = rnd(&s, 0, c->AN - bc);
        if (c->ib >= c->AM) c->ib = c->AM - 1; /* an empty sub(B) still lies inside */
        if (c->jb >= c->AN) c->jb = c->AN - 1;
    }
    int kn = rnd(&s, 0, 99);
    if (kn < 12)
        c->chunk = (long)esz[c->dt] * rnd(&s, 1, 300);
    else if (kn < 22)
        c->mem = (long)esz[c->dt] * rnd(&s, 40, 3000);
    else if (kn < 26)
        c->chunk = (long)esz[c->dt] * rnd(&s, 1, 64),
        c->mem = (long)esz[c->dt] * rnd(&s, 100, 2000);
    c->typed = rnd(&s, 0, 1);
    int vr = rnd(&s, 0, 99);
    c->variant = vr < 15 ? 'a' : vr < 30 ? 'b' : vr < 35 ? 'c' : 0;
    if (c->variant) c->expect = (char)(c->variant - 'a' + 'A');
}

static int call_tess(tess_grid_t *g, const struct pcase *c, int m, int k, const void *al,
                     const void *be, const struct lmat *A, const struct lmat *B, void *C,
                     const struct lmat *Cm, int ia) {
    tess_desc_t da = tdesc(A), db = tdesc(B), dc = tdesc(Cm);
    tess_trans_t ta = ttrans(c->ta), tb = ttrans(c->tb);
    if (!c->typed)
        return tess_pgemm(g, (tess_dtype_t)c->dt, ta, tb, m, c->n, k, al, A->p, ia, c->ja, &da,
                          B->p, c->ib, c->jb, &db, be, C, c->ic, c->jc, &dc);
    switch (c->dt) {
    case TESS_S:
        return tess_psgemm(g, ta, tb, m, c->n, k, *(const float *)al, (const float *)A->p, ia,
                           c->ja, &da, (const float *)B->p, c->ib, c->jb, &db, *(const float *)be,
                           C, c->ic, c->jc, &dc);
    case TESS_D:
        return tess_pdgemm(g, ta, tb, m, c->n, k, *(const double *)al, (const double *)A->p, ia,
                           c->ja, &da, (const double *)B->p, c->ib, c->jb, &db, *(const double *)be,
                           C, c->ic, c->jc, &dc);
    case TESS_C:
        return tess_pcgemm(g, ta, tb, m, c->n, k, al, A->p, ia, c->ja, &da, B->p, c->ib, c->jb, &db,
                           be, C, c->ic, c->jc, &dc);
    default:
        return tess_pzgemm(g, ta, tb, m, c->n, k, al, A->p, ia, c->ja, &da, B->p, c->ib, c->jb, &db,
                           be, C, c->ic, c->jc, &dc);
    }
}

static void call_ref(int ctxt, const struct pcase *c, const void *al, const void *be,
                     const struct lmat *A, const struct lmat *B, void *C, const struct lmat *Cm) {
    int da[9], db[9], dc[9];
    desc9(A, ctxt, da), desc9(B, ctxt, db), desc9(Cm, ctxt, dc);
    int m = c->m, n = c->n, k = c->k;
    int ia = c->ia + 1, ja = c->ja + 1, ib = c->ib + 1, jb = c->jb + 1, ic = c->ic + 1,
        jc = c->jc + 1;
    char ta[2] = {c->ta, 0}, tb[2] = {c->tb, 0};
    void (*f)(const char *, const char *, const int *, const int *, const int *, const void *,
              const void *, const int *, const int *, const int *, const void *, const int *,
              const int *, const int *, const void *, void *, const int *, const int *,
              const int *) = c->dt == TESS_S   ? psgemm_
                             : c->dt == TESS_D ? pdgemm_
                             : c->dt == TESS_C ? pcgemm_
                                               : pzgemm_;
    f(ta, tb, &m, &n, &k, al, A->p, &ia, &ja, da, B->p, &ib, &jb, db, be, C, &ic, &jc, dc);
}

/* Tolerance of one part of one element of sub(C): values are in [-1, 1) per part. */
static double tol_of(const struct pcase *c) {
    double cf = cplx(c->dt) ? 2.0 : 1.0;
    double aa = hypot(c->al[0], c->al[1]), bb = hypot(c->be[0], c->be[1]);
    return 8.0 * eps_of(c->dt) * (aa * cf * (c->k + 1) + bb * cf + 1.0);
}

/* Compare the local C (got) against the reference (ref): inside sub(C) within tol and
 * finite; everything else byte for byte equal to orig (got's input) and to refin (the
 * reference's input: ScaLAPACK must not write there either). Counts the sub(C) elements
 * where the expected result differs from got's input (an untouched C would fail there).
 * Returns the number of mismatches. */
static long compare_C(const struct pcase *c, const struct lmat *Cm, int P, int Q, int myrow,
                      int mycol, const unsigned char *orig, const unsigned char *got,
                      const unsigned char *refin, const unsigned char *ref, double tol, int quiet,
                      long long *inside, long *changed) {
    long bad = 0;
    const int dt = Cm->dt;
    const size_t es = esz[dt];
    const int ncol = Cm->lc > 1 ? Cm->lc : 1;
    for (int lj = 0; lj < ncol; lj++)
        for (int li = 0; li < Cm->lld; li++) {
            size_t e = (size_t)li + (size_t)lj * (size_t)Cm->lld;
            int in = 0, gi = -1, gj = -1;
            if (li < Cm->lr && lj < Cm->lc) {
                gi = l2g(li, Cm->mb, myrow, Cm->rsrc, P);
                gj = l2g(lj, Cm->nb, mycol, Cm->csrc, Q);
                in = gi >= c->ic && gi < c->ic + c->m && gj >= c->jc && gj < c->jc + c->n;
            }
            if (in) {
                double gr, gim, rr, rim;
                get(dt, got, e, &gr, &gim);
                get(dt, ref, e, &rr, &rim);
                (*inside)++;
                if (memcmp(ref + e * es, orig + e * es, es)) (*changed)++;
                int ok = isfinite(gr) && isfinite(gim) && fabs(gr - rr) <= tol &&
                         fabs(gim - rim) <= tol;
                if (!ok) {
                    if (!quiet && bad < 4)
                        failf("C(%d,%d) (local %d,%d) = (%.9g,%.9g), ScaLAPACK (%.9g,%.9g), "
                              "tol %.3g",
                              gi, gj, li, lj, gr, gim, rr, rim, tol);
                    else if (!quiet)
                        n_fail++;
                    bad++;
                }
            } else {
                if (memcmp(got + e * es, orig + e * es, es)) {
                    if (!quiet && bad < 4)
                        failf("outside sub(C): local (%d,%d)%s (global %d,%d) was written", li, lj,
                              li >= Cm->lr ? " in the LLD gap" : "", gi, gj);
                    else if (!quiet)
                        n_fail++;
                    bad++;
                }
                if (memcmp(ref + e * es, refin + e * es, es) && !quiet) {
                    failf("REFERENCE: ScaLAPACK wrote outside sub(C) at local (%d,%d)", li, lj);
                    bad++;
                }
            }
        }
    return bad;
}

/* The comparator itself catches a wrong element, a NaN and a write outside sub(C). */
static void selftest_compare(void) {
    struct pcase c = {0};
    c.dt = TESS_D, c.m = 3, c.n = 2, c.k = 4, c.ic = 1, c.jc = 1, c.al[0] = 1;
    struct lmat Cm;
    lmat_make(&Cm, TESS_D, 5, 4, 2, 3, 0, 0, 1, 1, 0, 0, 2, 42, 3);
    unsigned char *orig = dup_bytes(&Cm), *got = dup_bytes(&Cm), *ref = dup_bytes(&Cm);
    for (int j = 1; j < 3; j++)
        for (int i = 1; i < 4; i++)
            ((double *)ref)[i + j * Cm.lld] += 1.0, ((double *)got)[i + j * Cm.lld] += 1.0;
    long long in = 0;
    long ch = 0;
    double tol = tol_of(&c);
    int ok = compare_C(&c, &Cm, 1, 1, 0, 0, orig, got, orig, ref, tol, 1, &in, &ch) == 0 &&
             in == 6 && ch == 6;
    ((double *)got)[2 + 1 * Cm.lld] += 10 * tol;
    ok &= compare_C(&c, &Cm, 1, 1, 0, 0, orig, got, orig, ref, tol, 1, &in, &ch) == 1;
    ((double *)got)[2 + 1 * Cm.lld] = NAN;
    ok &= compare_C(&c, &Cm, 1, 1, 0, 0, orig, got, orig, ref, tol, 1, &in, &ch) == 1;
    ((double *)got)[2 + 1 * Cm.lld] = ((double *)ref)[2 + 1 * Cm.lld];
    ((double *)got)[0] = 0.5; /* outside */
    ok &= compare_C(&c, &Cm, 1, 1, 0, 0, orig, got, orig, ref, tol, 1, &in, &ch) == 1;
    ((double *)got)[0] = ((double *)orig)[0];
    ((double *)got)[4] = 0.5; /* row 4 of column 0: outside sub(C) */
    ((double *)got)[5] = 0.5; /* row 5: the LLD gap (5 rows, LLD 7) */
    ok &= compare_C(&c, &Cm, 1, 1, 0, 0, orig, got, orig, ref, tol, 1, &in, &ch) == 2;
    if (!ok) failf("the comparator's self-test failed");
    free(orig), free(got), free(ref), free(Cm.p);
}

/* Elements of op(A) (rows of sub(C) that process row myrow owns, all k) and op(B) (all k,
 * columns of sub(C) on mycol) that other processes own; my sub(C) rows and columns. */
static void needs(const struct pcase *c, int P, int Q, int myrow, int mycol, long *remA, long *remB,
                  long *mrows, long *ncols) {
    *remA = *remB = *mrows = *ncols = 0;
    for (int i = 0; i < c->m; i++) {
        if (g2p(c->ic + i, c->Cmb, c->Crsrc, P) != myrow) continue;
        (*mrows)++;
        for (int l = 0; l < c->k; l++) {
            int r = c->ta == 'N' ? c->ia + i : c->ia + l, q = c->ta == 'N' ? c->ja + l : c->ja + i;
            if (g2p(r, c->Amb, c->Arsrc, P) != myrow || g2p(q, c->Anb, c->Acsrc, Q) != mycol)
                (*remA)++;
        }
    }
    for (int j = 0; j < c->n; j++) {
        if (g2p(c->jc + j, c->Cnb, c->Ccsrc, Q) != mycol) continue;
        (*ncols)++;
        for (int l = 0; l < c->k; l++) {
            int r = c->tb == 'N' ? c->ib + l : c->ib + j, q = c->tb == 'N' ? c->jb + j : c->jb + l;
            if (g2p(r, c->Bmb, c->Brsrc, P) != myrow || g2p(q, c->Bnb, c->Bcsrc, Q) != mycol)
                (*remB)++;
        }
    }
}

struct gctx {
    tess_grid_t *g;
    int ctxt; /* BLACS context (-1 outside) */
    int P, Q, myrow, mycol;
    char order;
    MPI_Comm comm; /* the grid's ranks (test side), MPI_COMM_NULL outside */
};

static void set_knob(const char *name, long v) {
    if (v > 0) {
        char b[32];
        snprintf(b, sizeof b, "%ld", v);
        setenv(name, b, 1);
    } else {
        unsetenv(name);
    }
}

/* One case on a grid, tess against ScaLAPACK; collective over the grid. Every byte of
 * each rank's local C: inside sub(C) within a tolerance of ScaLAPACK's result (and
 * finite), outside sub(C), LLD gap included, unchanged byte for byte; A and B unchanged;
 * the same status on every rank; the expected sub(C) differs from the input somewhere on
 * the grid unless the call is C = 1 C (no trivial pass). And tess_pgemm_last_stats:
 *   - the same a_local/b_local and variant on every rank (the one c->expect names, if
 *     any; stationary C on one rank unless forced); bytes sent over the grid = bytes
 *     received; no product to compute: no pass, nothing moved;
 *   - stationary C: each rank receives at least the elements it needs that other ranks own
 *     and at most its rows of op(A) and columns of op(B) once; an operand in place needs
 *     nothing from elsewhere; both in place: no unit, nothing moves; on a P x 1 grid op(A)
 *     = A with C's row map is in place (1 x Q: B likewise); passes > 1 when
 *     TESSERA_PGEMM_MEM forces it; the GPU transport exactly where TESSERA_PGEMM_NCCL=2 lets
 *     the emulated devices take it, bytes packed D2D only there and within what was sent;
 *   - stationary A/B: the stationary operand in place, one pass, at most the other operand
 *     and a partial of the rank's sub(C) from every rank received, one unit unless a small
 *     TESSERA_PGEMM_CHUNK splits it. */
static void run_case(struct gctx *G, const struct pcase *c) {
    describe(c, G->P, G->Q, G->order, cur_case, sizeof cur_case);
    fail_budget = 6;
    if (verbose && wrank == 0) fprintf(stderr, "%s\n", cur_case);
    alarm(watchdog_s);
    const int dt = c->dt;
    const size_t es = esz[dt];
    unsigned char al[16], be[16];
    put(dt, al, 0, c->al[0], c->al[1]);
    put(dt, be, 0, c->be[0], c->be[1]);
    const int in = G->myrow >= 0;
    const int P = G->P, Q = G->Q, myrow = G->myrow, mycol = G->mycol;
    /* LLD gaps differ per rank and matrix */
    uint64_t ls = mix(c->cs ^ (uint64_t)(wrank + 1) * 0x51ED27u);
    struct lmat A, B, Cm;
    lmat_make(&A, dt, c->AM, c->AN, c->Amb, c->Anb, c->Arsrc, c->Acsrc, P, Q, myrow, mycol,
              rnd(&ls, 0, 3), c->cs, 1);
    int lldB = rnd(&ls, 0, 3);
    if (c->aliasB) {
        B = A;
        B.p = NULL; /* the array is A's */
    } else {
        lmat_make(&B, dt, c->BM, c->BN, c->Bmb, c->Bnb, c->Brsrc, c->Bcsrc, P, Q, myrow, mycol,
                  lldB, c->cs, 2);
    }
    lmat_make(&Cm, dt, c->CM, c->CN, c->Cmb, c->Cnb, c->Crsrc, c->Ccsrc, P, Q, myrow, mycol,
              rnd(&ls, 0, 3), c->cs, 3);
    if (c->aliasB) B.p = A.p;
    unsigned char *A0 = dup_bytes(&A), *B0 = dup_bytes(&B);
    /* tess's C: sub(C) NaN when beta = 0 (nanC); the reference's: sub(C) = 0 then */
    unsigned char *Ct = dup_bytes(&Cm), *Cr = dup_bytes(&Cm);
    if (c->nanC && in)
        for (int lj = 0; lj < Cm.lc; lj++)
            for (int li = 0; li < Cm.lr; li++) {
                int gi = l2g(li, Cm.mb, myrow, Cm.rsrc, P), gj = l2g(lj, Cm.nb, mycol, Cm.csrc, Q);
                if (gi >= c->ic && gi < c->ic + c->m && gj >= c->jc && gj < c->jc + c->n) {
                    size_t e = (size_t)li + (size_t)lj * (size_t)Cm.lld;
                    put_nan(dt, Ct, e, (uint32_t)e);
                    put(dt, Cr, e, 0, 0);
                }
            }
    unsigned char *Corig = malloc(Cm.nel * es), *Crin = malloc(Cm.nel * es);
    memcpy(Corig, Ct, Cm.nel * es);
    memcpy(Crin, Cr, Cm.nel * es);

    set_knob("TESSERA_PGEMM_CHUNK", c->chunk);
    set_knob("TESSERA_PGEMM_MEM", c->mem);
    char vk[2] = {c->variant, 0};
    if (c->variant) setenv("TESSERA_PGEMM_VARIANT", vk, 1);
    int rc = call_tess(G->g, c, c->m, c->k, al, be, &A, &B, Ct, &Cm, c->ia);
    unsetenv("TESSERA_PGEMM_VARIANT");
    set_knob("TESSERA_PGEMM_CHUNK", 0);
    set_knob("TESSERA_PGEMM_MEM", 0);
    if (rc != TESS_OK) failf("tess_p%cgemm returned %d (%s)", dtc[dt], rc, tess_last_error());
    if (!in) goto out; /* outside the grid: returned at once */

    tl.cases_ref++;
    tess_pgemm_stats_t st;
    memset(&st, 0xff, sizeof st);
    if (tess_pgemm_last_stats(G->g, &st) != TESS_OK) failf("tess_pgemm_last_stats failed");

    call_ref(G->ctxt, c, al, be, &A, &B, Cr, &Cm);

    long long inside = 0;
    long changed = 0;
    compare_C(c, &Cm, P, Q, myrow, mycol, Corig, Ct, Crin, Cr, tol_of(c), 0, &inside, &changed);
    tl.compared += inside;
    if (memcmp(A.p, A0, A.nel * es)) failf("A was written");
    if (memcmp(B.p, B0, B.nel * es)) failf("B was written");

    /* no trivial pass: the expected sub(C) differs from the input somewhere unless C = 1 C */
    int rcs[2] = {rc, -rc}, rcm[2];
    MPI_Allreduce(rcs, rcm, 2, MPI_INT, MPI_MAX, G->comm);
    if (rcm[0] != -rcm[1]) failf("ranks returned different statuses");
    long long ch = changed, chall = 0;
    MPI_Allreduce(&ch, &chall, 1, MPI_LONG_LONG, MPI_SUM, G->comm);
    int noop = c->m == 0 || c->n == 0 ||
               ((c->k == 0 || (c->al[0] == 0 && c->al[1] == 0)) && c->be[0] == 1 && c->be[1] == 0);
    if (!noop && chall == 0)
        failf("the expected sub(C) equals the input everywhere: the case tests nothing");

    /* stats */
    const int work = c->m > 0 && c->n > 0 && c->k > 0 && (c->al[0] != 0 || c->al[1] != 0);
    long remA, remB, mrows, ncols;
    needs(c, P, Q, myrow, mycol, &remA, &remB, &mrows, &ncols);
    if (work) {
        int v[4] = {st.a_local, -st.a_local, st.b_local, -st.b_local}, vm[4];
        MPI_Allreduce(v, vm, 4, MPI_INT, MPI_MAX, G->comm);
        if (vm[0] != -vm[1] || vm[2] != -vm[3])
            failf("stats: a_local/b_local differ across ranks (%d, %d here)", st.a_local,
                  st.b_local);
        if (st.passes < 1) failf("stats: passes = %d", st.passes);
        if (!(st.seconds >= 0) || !(st.comm_seconds >= 0) || st.comm_seconds > st.seconds + 1e-3)
            failf("stats: seconds = %g, comm_seconds = %g", st.seconds, st.comm_seconds);
        unsigned long long sr[2] = {st.bytes_sent, st.bytes_received}, srs[2];
        MPI_Allreduce(sr, srs, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, G->comm);
        if (srs[0] != srs[1])
            failf("stats: %llu bytes sent over the grid but %llu received", srs[0], srs[1]);
        int vv[2] = {st.variant, -st.variant}, vvm[2];
        MPI_Allreduce(vv, vvm, 2, MPI_INT, MPI_MAX, G->comm);
        if (vvm[0] != -vvm[1]) failf("stats: variant differs across ranks ('%c' here)", st.variant);
        if (st.variant != 'C' && st.variant != 'A' && st.variant != 'B')
            failf("stats: variant = %d", st.variant);
        if (c->expect && st.variant != c->expect)
            failf("stats: variant '%c', expected '%c'", st.variant, c->expect);
        if (P * Q == 1 && !c->variant && st.variant != 'C')
            failf("stats: one rank but variant '%c' (nothing moves with stationary C)", st.variant);
        if (P * Q == 1 && !(st.a_local && st.b_local))
            failf("stats: one rank but a_local = %d, b_local = %d", st.a_local, st.b_local);
        if (st.variant == 'A' || st.variant == 'B') {
            /* stationary A (B): that operand never moves; a rank receives at most the
             * other operand's k x n (m x k) and a partial of its sub(C) from every rank */
            tl.split[st.variant == 'B']++;
            if (st.variant == 'A' ? !st.a_local : !st.b_local)
                failf("stats: stationary %c but that operand is not in place", st.variant);
            if (st.passes != 1) failf("stats: stationary %c in %d passes", st.variant, st.passes);
            unsigned long long hi =
                ((unsigned long long)c->k * (unsigned long long)(st.variant == 'A' ? c->n : c->m) +
                 (unsigned long long)(P * Q) * (unsigned long long)(mrows * ncols)) *
                es;
            if (st.bytes_received > hi)
                failf("stats: stationary %c received %llu bytes, at most %llu expected", st.variant,
                      (unsigned long long)st.bytes_received, hi);
            /* units: ranges of the rows (A) or columns (B) of the partial product a rank
             * holds, each about a chunk of it: never more than those, one by default */
            long wfree = st.variant == 'A' ? c->m : c->n;
            if (st.units < 1 || st.units > wfree || (!c->chunk && st.units != 1))
                failf("stats: stationary %c in %d units, expected 1%s%ld (chunk %ld bytes)",
                      st.variant, st.units, c->chunk ? " to " : ", not ", wfree, c->chunk);
            if (st.units > 1) tl.split_units++;
        } else {
            /* stationary C: one exchange unit at least per pass when an operand moves */
            if (st.a_local && st.b_local ? st.units != 0 : st.units < st.passes)
                failf("stats: stationary C with %d units in %d passes (in place: A %d, B %d)",
                      st.units, st.passes, st.a_local, st.b_local);
            /* stationary C: what a rank receives is what it needs of op(A) and op(B) */
            if (st.a_local && st.b_local && (st.bytes_sent || st.bytes_received))
                failf("stats: both operands in place but %llu bytes sent, %llu received",
                      (unsigned long long)st.bytes_sent, (unsigned long long)st.bytes_received);
            const int owns = mrows > 0 && ncols > 0;
            if (st.a_local && owns && remA)
                failf("stats: a_local = 1 but %ld needed elements of op(A) are on other ranks",
                      remA);
            if (st.b_local && owns && remB)
                failf("stats: b_local = 1 but %ld needed elements of op(B) are on other ranks",
                      remB);
            unsigned long long lo = owns ? (unsigned long long)((st.a_local ? 0 : remA) +
                                                                (st.b_local ? 0 : remB)) *
                                               es
                                         : 0;
            unsigned long long hi = (unsigned long long)c->k * (unsigned long long)(mrows + ncols) *
                                    es;
            if (st.bytes_received < lo || st.bytes_received > hi)
                failf("stats: bytes_received = %llu, expected in [%llu, %llu] (needs from others: "
                      "A %ld, B %ld elements; my sub(C) rows %ld, cols %ld)",
                      (unsigned long long)st.bytes_received, lo, hi, remA, remB, mrows, ncols);
            if (c->aligned && Q == 1 && !st.a_local)
                failf("stats: P x 1 grid, op(A) = A with C's row map, but a_local = 0");
            if (c->aligned && P == 1 && !st.b_local)
                failf("stats: 1 x Q grid, op(B) = B with C's column map, but b_local = 0");
            if (st.a_local || st.b_local) tl.inplace++;
            if (c->mem && st.passes > 1) tl.multipass++;
            if (c->chunk) tl.pipelined++;
            /* a tiny budget must split k (one k index of both moving panels exceeds it) */
            long mmax = 0, nmax = 0;
            for (int r = 0; r < P; r++) {
                long a, b, mr, nc;
                needs(c, P, Q, r, 0, &a, &b, &mr, &nc);
                if (mr > mmax) mmax = mr;
            }
            for (int q = 0; q < Q; q++) {
                long a, b, mr, nc;
                needs(c, P, Q, 0, q, &a, &b, &mr, &nc);
                if (nc > nmax) nmax = nc;
            }
            long perk = ((st.a_local ? 0 : mmax) + (st.b_local ? 0 : nmax)) * (long)es;
            /* the transport: the GPU one wherever TESSERA_PGEMM_NCCL=2 lets the emulated
             * devices take it (ctest's test_pgemm_mpi:*_devxport runs), else MPI */
            const char *xk = getenv("TESSERA_PGEMM_NCCL");
            int want_dev = xk && !strcmp(xk, "2") && !(st.a_local && st.b_local);
            if (st.nccl != want_dev)
                failf("stats: nccl = %d, expected %d (TESSERA_PGEMM_NCCL=%s)", st.nccl, want_dev,
                      xk ? xk : "(unset)");
            if (st.nccl) tl.devxport++;
            /* what went to peers of this node from the own panel: part of what was sent,
             * none without the GPU transport or with TESSERA_PGEMM_PACK_D2D=0 */
            const char *dk = getenv("TESSERA_PGEMM_PACK_D2D");
            if (st.bytes_packed_d2d > st.bytes_sent ||
                (st.bytes_packed_d2d && (!st.nccl || (dk && !strcmp(dk, "0")))))
                failf("stats: %llu bytes packed D2D of %llu sent (nccl %d, PACK_D2D %s)",
                      (unsigned long long)st.bytes_packed_d2d, (unsigned long long)st.bytes_sent,
                      st.nccl, dk ? dk : "(unset)");
            if (st.bytes_packed_d2d) tl.d2d++;
            if (c->mem && perk > 0 && c->k > 1 && (long)c->k * perk > 2 * c->mem && st.passes < 2)
                failf("stats: TESSERA_PGEMM_MEM=%ld < k * %ld panel bytes but passes = %d", c->mem,
                      perk, st.passes);
        }
    } else if (st.passes != 0 || st.bytes_sent || st.bytes_received) {
        failf("stats: no product to compute but passes = %d, %llu bytes sent, %llu received",
              st.passes, (unsigned long long)st.bytes_sent, (unsigned long long)st.bytes_received);
    }
out:
    alarm(0);
    free(A.p), free(c->aliasB ? NULL : B.p), free(Cm.p), free(A0), free(B0), free(Ct), free(Cr),
        free(Corig), free(Crin);
}

/* ---- the variant by shape: skinny products under the automatic choice ------------------ */

/* A tall A (m, k >> n) must run stationary A, a wide B (n, k >> m) stationary B, a cube
 * stationary C; each against ScaLAPACK like the random cases. Blocks differ from C's so no
 * operand is in place. */
static void run_shapes(struct gctx *G, int id0) {
    static const struct {
        int m, n, k;
        char ta, tb, expect;
        int dt;
    } sh[] = {
        {700, 6, 500, 'N', 'N', 'A', TESS_D}, {650, 5, 480, 'C', 'T', 'A', TESS_Z},
        {6, 700, 500, 'T', 'N', 'B', TESS_S}, {5, 640, 470, 'N', 'C', 'B', TESS_C},
        {60, 60, 60, 'N', 'N', 'C', TESS_D},
    };
    for (int i = 0; i < (int)(sizeof sh / sizeof sh[0]); i++) {
        struct pcase c;
        memset(&c, 0, sizeof c);
        c.id = id0 + i;
        c.cs = mix((uint64_t)(id0 + i) * 7919u + seed0);
        c.dt = sh[i].dt;
        c.ta = sh[i].ta, c.tb = sh[i].tb;
        c.m = sh[i].m, c.n = sh[i].n, c.k = sh[i].k;
        c.al[0] = 0.5, c.al[1] = cplx(c.dt) ? -0.25 : 0;
        c.be[0] = -0.75, c.be[1] = cplx(c.dt) ? 0.5 : 0;
        int ar = c.ta == 'N' ? c.m : c.k, ac = c.ta == 'N' ? c.k : c.m;
        int br = c.tb == 'N' ? c.k : c.n, bc = c.tb == 'N' ? c.n : c.k;
        c.ia = 3, c.ja = 1, c.AM = ar + 5, c.AN = ac + 2, c.Amb = 7, c.Anb = 5;
        c.ib = 2, c.jb = 0, c.BM = br + 2, c.BN = bc + 1, c.Bmb = 5, c.Bnb = 3;
        c.ic = 1, c.jc = 2, c.CM = c.m + 1, c.CN = c.n + 4, c.Cmb = 11, c.Cnb = 4;
        c.Arsrc = G->P - 1, c.Bcsrc = G->Q - 1;
        c.expect = G->P * G->Q > 1 ? sh[i].expect : 'C';
        c.typed = i & 1;
        run_case(G, &c);
    }
}

/* ---- the device panels' cap (comm/pgemm.c tess__pgemm_panel_cap) ---------------------- */
/* On a 1 x Q grid through the GPU transport (TESSERA_PGEMM_NCCL=2) B is used in place and
 * A's panel of all k goes to device memory. A case whose panel takes 0.65 of the smallest
 * heap, beside a thin in-place B and small exchange units: more than the half the panels
 * once had (two passes), less than the heap left by B, the exchange buffers and the job's
 * reserve, so it must run in one pass (the 4 x H200 case of docs/benchmarks.md, n = 98304,
 * in miniature). Checked like the random cases. */
static void run_panel_cap(struct gctx *G, int id) {
    const char *xk = getenv("TESSERA_PGEMM_NCCL");
    if (!xk || strcmp(xk, "2") || G->P != 1 || G->Q < 2) return;
    size_t heap = 0;
    for (int d = 0; d < tess_device_count(); d++) {
        tess_dev_stats_t ds;
        if (tess_device_stats(d, &ds) == TESS_OK && ds.mem_capacity &&
            (!heap || ds.mem_capacity < heap))
            heap = ds.mem_capacity;
    }
    if (!heap) {
        failf("panel cap: no device heap");
        return;
    }
    struct pcase c;
    memset(&c, 0, sizeof c);
    c.id = id, c.cs = mix((uint64_t)id * 7919u + seed0), c.dt = TESS_D, c.ta = c.tb = 'N';
    c.k = 512, c.n = 8 * G->Q, c.m = (int)(0.65 * (double)heap / (8.0 * c.k));
    c.al[0] = 0.5, c.be[0] = -0.75, c.variant = 'c', c.expect = 'C', c.aligned = 1, c.typed = 1;
    c.chunk = 512 << 10; /* units of 128 rows: exchange buffers of 2-3 x 256 KiB */
    c.ic = 1, c.jc = 2, c.CM = c.m + 3, c.CN = c.n + 5, c.Cmb = 64, c.Cnb = 3;
    c.ia = c.ic, c.Amb = c.Cmb, c.Arsrc = c.Crsrc, c.AM = c.CM, c.ja = 2, c.AN = c.k + 3,
    c.Anb = 40;
    c.jb = c.jc, c.Bnb = c.Cnb, c.Bcsrc = c.Ccsrc, c.BN = c.CN, c.ib = 1, c.BM = c.k + 2,
    c.Bmb = 24;
    const double panel = 8.0 * c.m * c.k;
    run_case(G, &c);
    tess_pgemm_stats_t st;
    if (G->myrow < 0 || tess_pgemm_last_stats(G->g, &st)) return; /* outside the grid */
    if (!(panel > 0.5 * (double)heap))
        failf("panel cap: the case's panel (%.0f B) is not above half the heap", panel);
    if (!st.nccl || !st.b_local || st.a_local)
        failf("panel cap: nccl %d, a_local %d, b_local %d (expected the GPU transport, B in place)",
              st.nccl, st.a_local, st.b_local);
    if (st.passes != 1)
        failf(
            "panel cap: A's panel of %.0f bytes on a heap of %zu bytes beside B's %d local columns "
            "ran in %d passes, expected 1",
            panel, heap, c.n / G->Q, st.passes);
}

/* ---- bad input: every rank returns TESS_EINVAL, nothing written, nobody hangs ----------- */
static long long str_hash(const char *s) {
    unsigned long long h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (long long)(h >> 1);
}

static void run_bad(struct gctx *G) {
    const int P = G->P, Q = G->Q, myrow = G->myrow, mycol = G->mycol, in = myrow >= 0;
    int gsize = 1, grank = 0;
    if (in) MPI_Comm_size(G->comm, &gsize), MPI_Comm_rank(G->comm, &grank);
    const int badrank = gsize > 1 ? 1 : 0; /* the rank that alone passes something wrong */
    enum {
        LLD_SHORT,
        M_NEG,
        K_NEG_ONE,
        IA_RANGE,
        IC_RANGE,
        MB_ZERO,
        RSRC_ONE,
        ALPHA_ONE,
        VAR_BAD,
        VAR_ONE,
        NBAD
    };
    static const char *what[NBAD] = {"LLD of C too small on one rank",
                                     "m < 0",
                                     "k < 0 on one rank",
                                     "ia + m > M_A",
                                     "ic + m > M_C",
                                     "MB_ of B = 0",
                                     "RSRC_ of A >= NPROW on one rank",
                                     "alpha different on one rank",
                                     "TESSERA_PGEMM_VARIANT=x",
                                     "TESSERA_PGEMM_VARIANT=a on one rank only"};
    for (int v = 0; v < NBAD; v++) {
        snprintf(cur_case, sizeof cur_case, "bad input on %dx%d '%c': %s", P, Q, G->order, what[v]);
        fail_budget = 4;
        alarm(watchdog_s);
        /* 37 x 23 = (37 x 19)(19 x 23), 4 x 3 blocks from (P-1, Q-1): every rank holds some */
        struct lmat A, B, Cm;
        lmat_make(&A, TESS_D, 37, 19, 4, 3, P - 1, Q - 1, P, Q, myrow, mycol, 1, 99 + v, 1);
        lmat_make(&B, TESS_D, 19, 23, 4, 3, P - 1, Q - 1, P, Q, myrow, mycol, 0, 99 + v, 2);
        lmat_make(&Cm, TESS_D, 37, 23, 4, 3, P - 1, Q - 1, P, Q, myrow, mycol, 2, 99 + v, 3);
        unsigned char *A0 = dup_bytes(&A), *B0 = dup_bytes(&B), *C0 = dup_bytes(&Cm);
        tess_desc_t da = tdesc(&A), db = tdesc(&B), dc = tdesc(&Cm);
        int64_t m = 37, n = 23, k = 19, ia = 0, ic = 0;
        double alpha = 1.5, beta = 0.5;
        const int me_bad = in && grank == badrank;
        switch (v) {
        case LLD_SHORT:
            if (me_bad) dc.lld = Cm.lr - 1;
            break;
        case M_NEG: m = -1; break;
        case K_NEG_ONE:
            if (me_bad) k = -1;
            break;
        case IA_RANGE: ia = 1; break;
        case IC_RANGE: ic = 1; break;
        case MB_ZERO: db.mb = db.imb = 0; break;
        case RSRC_ONE:
            if (me_bad) da.rsrc = P;
            break;
        case ALPHA_ONE:
            if (me_bad) alpha = 1.25;
            break;
        case VAR_BAD: setenv("TESSERA_PGEMM_VARIANT", "x", 1); break;
        case VAR_ONE:
            if (me_bad) setenv("TESSERA_PGEMM_VARIANT", "a", 1);
            break;
        }
        int rc = tess_pdgemm(G->g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha,
                             (const double *)A.p, ia, 0, &da, (const double *)B.p, 0, 0, &db, beta,
                             (double *)Cm.p, ic, 0, &dc);
        unsetenv("TESSERA_PGEMM_VARIANT");
        if (in) {
            tl.cases_bad++;
            /* alpha or the variant differing cannot be seen on one rank: a valid call there */
            int expect = ((v == ALPHA_ONE || v == VAR_ONE) && gsize == 1) ? TESS_OK : TESS_EINVAL;
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tess_last_error());
            if (rc != expect) failf("returned %d, expected %d (%s)", rc, expect, msg);
            if (expect == TESS_EINVAL) {
                if (memcmp(Cm.p, C0, Cm.nel * 8)) failf("C was written");
                long long h = str_hash(msg), lo, hi;
                MPI_Allreduce(&h, &lo, 1, MPI_LONG_LONG, MPI_MIN, G->comm);
                MPI_Allreduce(&h, &hi, 1, MPI_LONG_LONG, MPI_MAX, G->comm);
                if (lo != hi) failf("the ranks report different messages ('%s' here)", msg);
                if (v == LLD_SHORT && !strstr(msg, "LLD"))
                    failf("message '%s' does not name LLD_", msg);
                if ((v == VAR_BAD || v == VAR_ONE) && !strstr(msg, "TESSERA_PGEMM_VARIANT"))
                    failf("message '%s' does not name TESSERA_PGEMM_VARIANT", msg);
                if (!*msg) failf("no message");
            }
            if (memcmp(A.p, A0, A.nel * 8) || memcmp(B.p, B0, B.nel * 8)) failf("A or B written");
        } else if (rc != TESS_OK) {
            failf("outside the grid: returned %d, expected TESS_OK at once", rc);
        }
        alarm(0);
        free(A.p), free(B.p), free(Cm.p), free(A0), free(B0), free(C0);
    }
    /* the grid still works: a valid case right after */
    struct pcase c;
    memset(&c, 0, sizeof c);
    c.id = -1, c.dt = TESS_D, c.ta = 'N', c.tb = 'T', c.m = 37, c.n = 23, c.k = 19;
    c.AM = 37, c.AN = 19, c.Amb = 4, c.Anb = 3, c.Arsrc = P - 1, c.Acsrc = Q - 1;
    c.BM = 23, c.BN = 19, c.Bmb = 3, c.Bnb = 4, c.Brsrc = 0, c.Bcsrc = Q - 1;
    c.CM = 40, c.CN = 25, c.Cmb = 5, c.Cnb = 2, c.Crsrc = P - 1, c.Ccsrc = 0;
    c.ic = 2, c.jc = 1, c.al[0] = 1.5, c.be[0] = 0.5, c.typed = 1, c.cs = 7;
    run_case(G, &c);
}

/* ---- one-rank mode: tess_p?gemm on a 1 x 1 grid against tess_?gemm ------------------- */
static void run_one_rank(int ncases) {
    tess_grid_t *g = NULL;
    int rc = tess_grid_create(MPI_COMM_SELF, 1, 1, 'R', &g);
    if (rc) {
        failf("tess_grid_create(MPI_COMM_SELF) returned %d (%s)", rc, tess_last_error());
        return;
    }
    for (int t = 0; t < ncases; t++) {
        struct pcase c;
        /* different cases on each rank; the first four do work in every precision */
        make_case(100000 + t * 64 + wrank, 1, 1, t < 4, &c);
        c.chunk = c.mem = 0;
        if (t < 4) c.dt = t;                                        /* every precision */
        if (t == 1) c.typed = 1, c.nanC = 1, c.be[0] = c.be[1] = 0; /* tess_pdgemm, beta = 0 */
        char d[sizeof cur_case - 16];
        describe(&c, 1, 1, 'R', d, sizeof d);
        snprintf(cur_case, sizeof cur_case, "one-rank %s", d);
        fail_budget = 6;
        alarm(watchdog_s);
        const int dt = c.dt;
        const size_t es = esz[dt];
        unsigned char al[16], be[16];
        put(dt, al, 0, c.al[0], c.al[1]);
        put(dt, be, 0, c.be[0], c.be[1]);
        struct lmat A, B, Cm;
        lmat_make(&A, dt, c.AM, c.AN, c.Amb, c.Anb, 0, 0, 1, 1, 0, 0, t % 3, c.cs, 1);
        lmat_make(&B, dt, c.BM, c.BN, c.Bmb, c.Bnb, 0, 0, 1, 1, 0, 0, (t + 1) % 3, c.cs, 2);
        lmat_make(&Cm, dt, c.CM, c.CN, c.Cmb, c.Cnb, 0, 0, 1, 1, 0, 0, (t + 2) % 3, c.cs, 3);
        unsigned char *Ct = dup_bytes(&Cm), *Cn = dup_bytes(&Cm);
        if (c.nanC)
            for (int j = 0; j < c.n; j++)
                for (int i = 0; i < c.m; i++) {
                    size_t e = (size_t)(c.ic + i) + (size_t)(c.jc + j) * (size_t)Cm.lld;
                    put_nan(dt, Ct, e, (uint32_t)e);
                    put_nan(dt, Cn, e, (uint32_t)e);
                }
        unsigned char *Corig = dup_bytes(&Cm);
        memcpy(Corig, Ct, Cm.nel * es);
        rc = call_tess(g, &c, c.m, c.k, al, be, &A, &B, Ct, &Cm, c.ia);
        if (rc) failf("tess_p%cgemm returned %d (%s)", dtc[dt], rc, tess_last_error());
        tess_pgemm_stats_t st;
        tess_pgemm_last_stats(g, &st);
        const int work = c.m > 0 && c.n > 0 && c.k > 0 && (c.al[0] != 0 || c.al[1] != 0);
        if (work && (!st.a_local || !st.b_local || st.bytes_sent || st.bytes_received))
            failf("stats on one rank: a_local %d b_local %d sent %llu received %llu", st.a_local,
                  st.b_local, (unsigned long long)st.bytes_sent,
                  (unsigned long long)st.bytes_received);
        /* the node runtime on the same submatrices */
        const char *Ap = (const char *)A.p + ((size_t)c.ia + (size_t)c.ja * A.lld) * es;
        const char *Bp = (const char *)B.p + ((size_t)c.ib + (size_t)c.jb * B.lld) * es;
        char *Cp = (char *)Cn + ((size_t)c.ic + (size_t)c.jc * Cm.lld) * es;
        tess_trans_t ta = ttrans(c.ta), tb = ttrans(c.tb);
        switch (dt) {
        case TESS_S:
            rc = tess_sgemm(TESS_COL_MAJOR, ta, tb, c.m, c.n, c.k, *(float *)al, (const float *)Ap,
                            A.lld, (const float *)Bp, B.lld, *(float *)be, (float *)Cp, Cm.lld);
            break;
        case TESS_D:
            rc = tess_dgemm(TESS_COL_MAJOR, ta, tb, c.m, c.n, c.k, *(double *)al,
                            (const double *)Ap, A.lld, (const double *)Bp, B.lld, *(double *)be,
                            (double *)Cp, Cm.lld);
            break;
        case TESS_C:
            rc = tess_cgemm(TESS_COL_MAJOR, ta, tb, c.m, c.n, c.k, al, Ap, A.lld, Bp, B.lld, be, Cp,
                            Cm.lld);
            break;
        default:
            rc = tess_zgemm(TESS_COL_MAJOR, ta, tb, c.m, c.n, c.k, al, Ap, A.lld, Bp, B.lld, be, Cp,
                            Cm.lld);
            break;
        }
        if (rc) failf("tess_%cgemm returned %d (%s)", dtc[dt], rc, tess_last_error());
        long long inside = 0;
        long changed = 0;
        /* the node runtime's result is the reference; tess_?gemm wrote sub(C) only: its
         * input for the "outside" check is Corig */
        compare_C(&c, &Cm, 1, 1, 0, 0, Corig, Ct, Corig, Cn, tol_of(&c), 0, &inside, &changed);
        tl.compared += inside;
        if (memcmp(Ct, Cn, Cm.nel * es) == 0) tl.bitwise_one++;
        tl.cases_one++;
        alarm(0);
        free(A.p), free(B.p), free(Cm.p), free(Ct), free(Cn), free(Corig);
    }
    tess_grid_free(g);
}

/* ---- grids ------------------------------------------------------------------------------ */
struct shape {
    int P, Q;
    char order;
};

static int shapes_for(int np, struct shape *out) {
    int n = 0;
    switch (np) {
    case 1: out[n++] = (struct shape){1, 1, 'R'}, out[n++] = (struct shape){1, 1, 'C'}; break;
    case 2:
        out[n++] = (struct shape){1, 2, 'R'}, out[n++] = (struct shape){2, 1, 'C'};
        out[n++] = (struct shape){1, 2, 'C'}, out[n++] = (struct shape){2, 1, 'R'};
        break;
    case 4:
        out[n++] = (struct shape){2, 2, 'R'}, out[n++] = (struct shape){2, 2, 'C'};
        out[n++] = (struct shape){1, 4, 'R'}, out[n++] = (struct shape){4, 1, 'C'};
        out[n++] = (struct shape){1, 3, 'C'}; /* rank 3 outside */
        break;
    case 6:
        out[n++] = (struct shape){2, 3, 'R'}, out[n++] = (struct shape){3, 2, 'C'};
        out[n++] = (struct shape){2, 3, 'C'}, out[n++] = (struct shape){3, 2, 'R'};
        out[n++] = (struct shape){1, 6, 'C'}, out[n++] = (struct shape){2, 2, 'R'}; /* 4, 5 out */
        break;
    case 8: /* issue 9's eight ranks (one per GPU of a node) */
        out[n++] = (struct shape){2, 4, 'R'}, out[n++] = (struct shape){4, 2, 'C'};
        out[n++] = (struct shape){1, 4, 'R'}; /* ranks 4..7 outside; B in place */
        break;
    default:
        for (int p = 1; p <= np && n < 30; p++)
            if (np % p == 0) {
                out[n++] = (struct shape){p, np / p, 'R'};
                out[n++] = (struct shape){p, np / p, 'C'};
            }
    }
    return n;
}

static int grid_open(struct gctx *G, struct shape s) {
    memset(G, 0, sizeof *G);
    G->order = s.order;
    G->comm = MPI_COMM_NULL;
    G->ctxt = -1;
    int rc = tess_grid_create(MPI_COMM_WORLD, s.P, s.Q, s.order, &G->g);
    if (rc) {
        failf("tess_grid_create(%d, %d, '%c') returned %d (%s)", s.P, s.Q, s.order, rc,
              tess_last_error());
        return -1;
    }
    tess_grid_info(G->g, &G->P, &G->Q, &G->myrow, &G->mycol);
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, s.order == 'R' ? "Row" : "Col", s.P, s.Q);
    G->ctxt = ctxt;
    int bp = -1, bq = -1, br = -1, bc = -1;
    if (ctxt >= 0) Cblacs_gridinfo(ctxt, &bp, &bq, &br, &bc);
    int in = G->myrow >= 0;
    if (in != (ctxt >= 0 && br >= 0) || (in && (br != G->myrow || bc != G->mycol))) {
        fprintf(stderr, "rank %d: BLACS puts me at (%d,%d), tess at (%d,%d) on %dx%d '%c'\n", wrank,
                br, bc, G->myrow, G->mycol, s.P, s.Q, s.order);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : 1, wrank, &G->comm);
    return 0;
}

static void grid_close(struct gctx *G) {
    if (G->ctxt >= 0) Cblacs_gridexit(G->ctxt);
    tess_grid_free(G->g);
    if (G->comm != MPI_COMM_NULL) MPI_Comm_free(&G->comm);
}

static long env_long(const char *name, long def) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

/* ---- the run: settings, every grid, the end of a test ----------------------------------- */
static long n_random = 1200, only = -1; /* TEST_PGEMM_CASES, TEST_PGEMM_CASE */
static struct shape shapes[32];         /* the grid shapes for this rank count */
static int nshapes;
static char gridlist[256]; /* their names, for the summary */
static double t0;

/* fn(G, s) on every grid shape s, each grid opened afresh and closed after (collective over
 * all ranks; a grid that cannot be opened is a failure, reported by grid_open). */
static void for_each_grid(void (*fn)(struct gctx *G, int s)) {
    for (int s = 0; s < nshapes; s++) {
        struct gctx G;
        if (grid_open(&G, shapes[s])) continue;
        fn(&G, s);
        grid_close(&G);
    }
}

/* The end of a test: no rank saw a failure since n_fail was `from` (collective). */
static void assert_no_failures(long from, const char *what) {
    long mine = n_fail - from, most = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    ASSERT_MSG(most == 0, "%s: up to %ld failures on a rank (%ld on this one), printed above", what,
               most, mine);
}

/* ---- the tests ------------------------------------------------------------------------- */

/* The comparator catches a wrong element, a NaN and a write outside sub(C), in the LLD gap
 * too (selftest_compare): the checks of every other test rest on it. */
TEST(pgemm_comparator_catches_errors) {
    long f0 = n_fail;
    selftest_compare();
    assert_no_failures(f0, "the comparator's self-test");
}

/* TEST_PGEMM_CASES random cases (make_case: seeded, the same on every rank; ids are global,
 * so case i runs alone with TEST_PGEMM_CASE=i and the same rank count, seed and case count)
 * shared out over the grids, each against ScaLAPACK (run_case): s, d, c, z; transa/transb
 * in N, T, C; typed and generic entries; MB/NB from 1 to more than the matrix; nonzero
 * RSRC/CSRC; submatrices off block boundaries and smaller than the matrix; LLD larger than
 * needed (a different gap on each rank; A's and B's gaps hold NaN); B = A; random
 * alpha/beta, beta = 0 with sub(C) full of NaN (the reference runs with sub(C) = 0), beta =
 * 1, alpha = 0, k = 0, m = 0, n = 0; some with a tiny TESSERA_PGEMM_CHUNK (many pipelined
 * exchanges) or TESSERA_PGEMM_MEM (k in passes); 35% forced to stationary A, B or C
 * (TESSERA_PGEMM_VARIANT=a|b|c), the rest chosen by shape. Every rank compared some of
 * sub(C), and the draw reached every path (rank 0's cases): k in several passes (more
 * than one rank), a small chunk, an operand in place, stationary A and B, stationary A/B
 * in several units, the GPU transport where TESSERA_PGEMM_NCCL=2 and, with peers on the
 * node, its packing D2D from the own panel. */
static void random_cases(struct gctx *G, int s) {
    long per = (n_random + nshapes - 1) / nshapes;
    for (long t = 0; t < per; t++) {
        long id = s * per + t;
        if (only >= 0 && id != only) continue;
        struct pcase c;
        make_case((int)id, G->P, G->Q, 0, &c);
        run_case(G, &c);
    }
}

TEST(pgemm_random_cases_vs_scalapack) {
    long f0 = n_fail;
    struct tally before = tl;
    for_each_grid(random_cases);
    snprintf(cur_case, sizeof cur_case, "the random cases' coverage");
    if (only < 0 && tl.compared == before.compared)
        failf("this rank compared no element of sub(C)");
    if (only < 0 && wrank == 0) {
        if (tl.multipass == before.multipass && wsize > 1) failf("no case ran k in several passes");
        if (tl.pipelined == before.pipelined) failf("no case ran with a small TESSERA_PGEMM_CHUNK");
        if (tl.inplace == before.inplace) failf("no case used an operand in place");
        if (tl.split[0] == before.split[0] || tl.split[1] == before.split[1])
            failf("no case ran stationary A (%ld) or B (%ld)", tl.split[0] - before.split[0],
                  tl.split[1] - before.split[1]);
        if (tl.split_units == before.split_units)
            failf("no stationary A / B case ran in several units");
        const char *xk = getenv("TESSERA_PGEMM_NCCL");
        if (xk && !strcmp(xk, "2") && wsize > 1 && tl.devxport == before.devxport)
            failf("TESSERA_PGEMM_NCCL=2 but no case ran the GPU transport");
        /* with peers on the node (not TESSERA_PGEMM_NODE_RANKS=1) something is packed */
        const char *dk = getenv("TESSERA_PGEMM_PACK_D2D"), *nk = getenv("TESSERA_PGEMM_NODE_RANKS");
        if (tl.devxport > before.devxport && !(dk && !strcmp(dk, "0")) &&
            !(nk && !strcmp(nk, "1")) && tl.d2d == before.d2d)
            failf("the GPU transport never packed from the own panel");
    }
    assert_no_failures(f0, "random cases against ScaLAPACK");
}

/* The variant by shape under the automatic choice (run_shapes): a tall A (m, k >> n) runs
 * stationary A, a wide B (n, k >> m) stationary B, a cube stationary C (on one rank: C
 * always), in d, z, s, c with transposes; each checked against ScaLAPACK like the random
 * cases. */
static void shape_cases(struct gctx *G, int s) { run_shapes(G, 900000 + s * 8); }

TEST(pgemm_variant_by_shape) {
    if (only >= 0) return;
    long f0 = n_fail;
    for_each_grid(shape_cases);
    assert_no_failures(f0, "the variant by shape");
}

/* The device panels' cap (run_panel_cap; TESSERA_PGEMM_NCCL=2, 1 x Q grids): A's panel of
 * 0.65 of the heap beside a thin in-place B runs in one pass through the GPU transport
 * (half the heap would need two), and its result is ScaLAPACK's. */
static void panel_cap_case(struct gctx *G, int s) { run_panel_cap(G, 950000 + s); }

TEST(pgemm_device_panel_cap) {
    if (only >= 0) return;
    const char *xk = getenv("TESSERA_PGEMM_NCCL");
    if (!xk || strcmp(xk, "2")) {
        if (wrank == 0)
            fprintf(stderr, "  (the GPU transport is not on: TESSERA_PGEMM_NCCL=2 runs this)\n");
        return;
    }
    long f0 = n_fail;
    for_each_grid(panel_cap_case);
    assert_no_failures(f0, "the device panels' cap");
}

/* Bad input on every grid (run_bad): an LLD too small on one rank only, m < 0, k < 0 on
 * one rank only, ia out of range, ic + m > M_, MB_ = 0, RSRC_ >= NPROW on one rank, alpha
 * different on one rank, TESSERA_PGEMM_VARIANT unknown or set on one rank only: every rank
 * in the grid returns TESS_EINVAL with the same message (naming LLD_ or the knob where
 * that is the fault), nothing is written, ranks outside return TESS_OK at once, nobody
 * hangs; a valid case right after is right. */
static void bad_cases(struct gctx *G, int s) {
    (void)s;
    run_bad(G);
}

TEST(pgemm_bad_input_fails_on_every_rank) {
    if (only >= 0) return;
    long f0 = n_fail;
    for_each_grid(bad_cases);
    assert_no_failures(f0, "bad input");
}

/* One-rank mode (run_one_rank): a 1 x 1 grid over MPI_COMM_SELF on every rank (different
 * cases on each; the first four do work in every precision, one through tess_pdgemm with
 * beta = 0 and a NaN sub(C)), tess_p?gemm against tess_?gemm, the node runtime, on the same
 * data: within the tolerance, nothing written outside sub(C), both operands in place and
 * nothing moved. */
TEST(pgemm_one_rank_matches_node_runtime) {
    if (only >= 0) return;
    long f0 = n_fail;
    run_one_rank((int)env_long("TEST_PGEMM_ONE_RANK_CASES", 12));
    assert_no_failures(f0, "one-rank mode");
}

/* ---- setup, summary ------------------------------------------------------------------------ */

static void pgemm_setup(void) {
    /* emulated devices, small tiles: the runtime really runs tiles (the knobs are read at
     * tess_init; CTest's ENVIRONMENT or the caller may set others) */
    setenv("TESSERA_DEVICES", "none", 0);
    setenv("TESSERA_EMULATE", "2", 0);
    setenv("TESSERA_TILE", "16", 0);
    setenv("TESSERA_CPU_WORKER", "0", 0);
    setenv("TESSERA_EMULATE_MEM", "16M", 0);
    unsetenv("TESSERA_PGEMM_CHUNK"); /* cases set these themselves */
    unsetenv("TESSERA_PGEMM_MEM");
    unsetenv("TESSERA_PGEMM_VARIANT");
    t0 = MPI_Wtime();
    seed0 = (uint64_t)env_long("TEST_PGEMM_SEED", 1);
    n_random = env_long("TEST_PGEMM_CASES", 1200);
    only = env_long("TEST_PGEMM_CASE", -1);
    verbose = (int)env_long("TEST_PGEMM_VERBOSE", 0);
    watchdog_s = (unsigned)env_long("TEST_PGEMM_WATCHDOG", 60);
    signal(SIGALRM, on_alarm);
    int rc = tess_init();
    if (rc) {
        fprintf(stderr, "rank %d: tess_init: %s (%s)\n", wrank, tess_strerror(rc),
                tess_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bme, bnp;
    Cblacs_pinfo(&bme, &bnp);
    if (bme != wrank || bnp != wsize) {
        fprintf(stderr, "rank %d: BLACS says process %d of %d\n", wrank, bme, bnp);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    nshapes = shapes_for(wsize, shapes);
    for (int s = 0; s < nshapes; s++) {
        size_t L = strlen(gridlist);
        snprintf(gridlist + L, sizeof gridlist - L, "%s%dx%d%c", s ? " " : "", shapes[s].P,
                 shapes[s].Q, shapes[s].order);
    }
}

/* Rank 0's summary line: what every rank checked, what rank 0's cases reached. */
static void pgemm_teardown(void) {
    snprintf(cur_case, sizeof cur_case, "shutdown");
    alarm(watchdog_s);
    long loc[6] = {n_fail,         tl.cases_ref,
                   tl.cases_one,   tl.cases_bad,
                   tl.bitwise_one, (long)(tl.compared > 0x7fffffff ? 0x7fffffff : tl.compared)};
    long sum[6];
    MPI_Allreduce(loc, sum, 6, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    alarm(0);
    Cblacs_exit(1);
    tess_finalize();
    if (wrank == 0)
        printf(
            "test_pgemm_mpi np=%d: %s | %ld case-ranks vs ScaLAPACK, %ld one-rank vs "
            "tess_?gemm (%ld bit-identical), %ld bad-input case-ranks, %ld sub(C) elements "
            "compared, %ld multi-pass, %ld small-chunk, %ld in-place, %ld/%ld stationary A/B (%ld in "
            "several units), %ld through the GPU transport (%ld packing D2D) (rank 0) | "
            "%ld failures | "
            "%.1f s\n",
            wsize, gridlist, sum[1], sum[2], sum[4], sum[3], sum[5], tl.multipass, tl.pipelined,
            tl.inplace, tl.split[0], tl.split[1], tl.split_units, tl.devxport, tl.d2d, sum[0],
            MPI_Wtime() - t0);
    fflush(stdout);
}

TEST_MPI_MAIN_WITH(1, 64, pgemm_setup, pgemm_teardown)

#endif
