/* tests/test_glue_l3_mpi.c: the ScaLAPACK glue's p?symm_, p?hemm_, p?syrk_, p?herk_,
 * p?syr2k_, p?her2k_, p?trmm_ and p?trsm_ (libtessera_scalapack.so) against the reference
 * PBLAS routines underneath it, under mpirun (1, 2, 4 and 6 ranks; every grid from 1 x 1 to
 * 2 x 3 / 3 x 2 that fits). The program links the glue before Debian's ScaLAPACK, so
 * pdsymm_ & co. are the glue's; the reference routines come from the ScaLAPACK library
 * itself (dlopen of the library defining Cblacs_gridinfo, then dlsym). Both run on the same
 * inputs: random calls (below, "one call"), the counters per TEST_GLUE_MODE (force: every
 * call with work in tessera but the replicated ones and TRSM with an exact zero on A's
 * diagonal; default: these small calls on the reference), and bad arguments reported
 * exactly as the reference reports them (below, "bad arguments").
 * A failed assertion on any rank aborts the whole job (MPI_Abort). TEST_GLUE_SEED changes
 * the random calls, TEST_GLUE_L3_CASES their number per routine and grid (default 3),
 * TEST_GLUE_SHOW=1 prints each call on rank 0.
 */
#include "glue_test.h"

/* PBLAS's prototypes by family (scalars by pointer) */
typedef void pabc_t(const char *, const char *, const int *, const int *, const void *,
                    const void *, const int *, const int *, const int *, const void *, const int *,
                    const int *, const int *, const void *, void *, const int *, const int *,
                    const int *); /* p?symm_, p?hemm_, p?syr2k_, p?her2k_ */
typedef void psyrk_t(const char *, const char *, const int *, const int *, const void *,
                     const void *, const int *, const int *, const int *, const void *, void *,
                     const int *, const int *, const int *);
typedef void ptrxm_t(const char *, const char *, const char *, const char *, const int *,
                     const int *, const void *, const void *, const int *, const int *, const int *,
                     void *, const int *, const int *, const int *);

enum fam { F_SYMM, F_SYRK, F_SYR2K, F_TRXM };
static const struct kind {
    const char *name;
    int fam, herm;
} kinds[] = {
    {"symm", F_SYMM, 0},   {"hemm", F_SYMM, 1},   {"syrk", F_SYRK, 0}, {"herk", F_SYRK, 1},
    {"syr2k", F_SYR2K, 0}, {"her2k", F_SYR2K, 1}, {"trmm", F_TRXM, 0}, {"trsm", F_TRXM, 0},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0], K_TRMM = 6, K_TRSM = 7 };
static void *glue_fn[NKINDS][4], *ref_fn[NKINDS][4];

static int myrow_, mycol_; /* this rank's place in the current grid */

static void put(int dt, unsigned char *p, double re, double im) {
    switch (dt) {
    case 0: {
        float v = (float)re;
        memcpy(p, &v, 4);
        break;
    }
    case 1: memcpy(p, &re, 8); break;
    case 2: {
        float v[2] = {(float)re, (float)im};
        memcpy(p, v, 8);
        break;
    }
    case 3: {
        double v[2] = {re, im};
        memcpy(p, v, 16);
        break;
    }
    }
}

/* Element (gi, gj) of the rank's local array buf of x, if this rank holds it. */
static unsigned char *at(const struct mat *x, unsigned char *buf, int dt, int gi, int gj) {
    return mat_at(x, buf, dt, gi, gj, myrow_, mycol_);
}

/* A rows x cols sub-matrix at a random offset of a random M_ x N_ matrix: descriptor, storage
 * (LLD gap, guard, every byte outside the elements a rank-specific pattern), elements of id;
 * *ix, *jx: the 1-based offsets. One in twelve operands is replicated when allowed. */
static void make_operand(struct mat *x, int dt, int id, int ctxt, int rows, int cols, int *ix,
                         int *jx, int P, int Q, int allow_replicated, int *replicated) {
    memset(x, 0, sizeof *x);
    int i0 = rint_(0, 4), j0 = rint_(0, 4);
    int M = i0 + rows + rint_(0, 3), N = j0 + cols + rint_(0, 3);
    static const int bs[] = {1, 2, 3, 5, 7, 4};
    int mb = bs[rint_(0, 5)], nb = bs[rint_(0, 5)];
    int form11 = rint_(0, 1);
    int imb = form11 ? rint_(1, 9) : mb, inb = form11 ? rint_(1, 9) : nb;
    int rsrc = rint_(0, P - 1), csrc = rint_(0, Q - 1);
    if (allow_replicated && rint_(0, 11) == 0) {
        if (rint_(0, 1))
            rsrc = -1;
        else
            csrc = -1;
        *replicated = 1;
    }
    int gap = rint_(0, 3);
    x->rows = (struct dim){M, imb, mb, rsrc, P};
    x->cols = (struct dim){N, inb, nb, csrc, Q};
    x->lr = count_on(&x->rows, myrow_);
    x->lc = count_on(&x->cols, mycol_);
    x->lld = (x->lr > 1 ? x->lr : 1) + gap;
    if (form11) {
        int d[11] = {2, ctxt, M, N, imb, inb, mb, nb, rsrc, csrc, x->lld};
        memcpy(x->desc, d, sizeof d);
        x->dlen = 11;
    } else {
        int d[9] = {1, ctxt, M, N, mb, nb, rsrc, csrc, x->lld};
        memcpy(x->desc, d, sizeof d);
        x->dlen = 9;
    }
    x->bytes = (size_t)x->lld * (size_t)(x->lc > 0 ? x->lc : 1) * esize[dt] + GUARD;
    x->buf = malloc(x->bytes);
    ASSERT(x->buf);
    for (size_t b = 0; b < x->bytes; b++)
        x->buf[b] = (unsigned char)(0xA5 ^ (b * 7) ^ (unsigned)wrank);
    for (int gj = 0; gj < N; gj++)
        for (int gi = 0; gi < M; gi++) {
            unsigned char *p = at(x, x->buf, dt, gi, gj);
            if (p) put(dt, p, val(id, gi, gj, 0), val(id, gi, gj, 1));
        }
    *ix = i0 + 1;
    *jx = j0 + 1;
}

/* ---- one call ------------------------------------------------------------------------------
 * Every routine in every precision, every SIDE/UPLO/TRANS/DIAG (cycled so that each grid sees
 * each combination in turn, lower case now and then), sizes 0..30, odd block sizes 1..7
 * (often larger than the matrix), 9- and 11-entry descriptors (first blocks IMB/INB), IA/JA
 * off the block boundaries, nonzero RSRC/CSRC, LLD gaps, now and then a replicated operand
 * (RSRC/CSRC = -1: the glue must hand it to the reference), alpha and beta 0 and 1, and NaN
 * planted wherever the routine must not read: sub(C) when beta = 0, the unreferenced
 * triangle of A (SYMM/HEMM/TRMM/TRSM), A's diagonal when DIAG = 'U', the imaginary parts of
 * A's diagonal (HEMM) and of C's diagonal (HERK/HER2K), all of sub(A) and sub(B) when
 * alpha = 0. The output agrees within k eps (k: the inner dimension), is finite, and
 * everything else of the local arrays (outside sub(C)/sub(B) or its triangle, the LLD gap, a
 * guard zone after the array, A and B) is byte for byte unchanged. p?trsm_'s inversions call
 * p?trmm_/p?trsm_ inside p?trtri: those come in addition to the counted calls. */
struct call {
    int kk, dt;
    char side, uplo, trans, diag;
    int m, n, k; /* SYRK family: n, k; the others m, n */
    double alpha[2], beta[2];
    int ia, ja, ib, jb, ic, jc; /* 1-based; TRMM/TRSM: their B is C here (ic, jc) */
    struct mat A, B, C;         /* B unused (empty) for SYRK/HERK/TRMM/TRSM */
    int replicated;             /* an operand has RSRC/CSRC = -1 */
    int singular;               /* TRSM: an exact 0 on A's diagonal */
};

static int upper_(char c) { return c == 'U' || c == 'u'; }
static char up(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* Rows and columns of sub(A) (and sub(B)) of a call. */
static int order_a(const struct call *c) { return up(c->side) == 'L' ? c->m : c->n; }
static int notrans(const struct call *c) { return up(c->trans) == 'N'; }

static void scalar(int dt, const double v[2], unsigned char out[16]) {
    memset(out, 0, 16);
    if (dt == 0 || dt == 2) {
        float f[2] = {(float)v[0], (float)v[1]};
        memcpy(out, f, 8);
    } else {
        memcpy(out, v, 16);
    }
}

/* Call routine f (glue or reference) of c's kind on the given local arrays. */
static void run(void *f, const struct call *c, unsigned char *A, unsigned char *B,
                unsigned char *C) {
    const struct kind *K = &kinds[c->kk];
    unsigned char al[16], be[16];
    int cplx = c->dt >= 2;
    int real_alpha = K->herm && K->fam == F_SYRK, real_beta = K->herm && K->fam != F_SYMM;
    scalar(real_alpha && cplx ? c->dt - 2 : c->dt, c->alpha, al);
    scalar(real_beta && cplx ? c->dt - 2 : c->dt, c->beta, be);
    char s1[2] = {c->side, 0}, s2[2] = {c->uplo, 0}, s3[2] = {c->trans, 0}, s4[2] = {c->diag, 0};
    if (K->fam == F_SYMM) {
        pabc_t *fp;
        memcpy(&fp, &f, sizeof f);
        fp(s1, s2, &c->m, &c->n, al, A, &c->ia, &c->ja, c->A.desc, B, &c->ib, &c->jb, c->B.desc, be,
           C, &c->ic, &c->jc, c->C.desc);
    } else if (K->fam == F_SYRK) {
        psyrk_t *fp;
        memcpy(&fp, &f, sizeof f);
        fp(s2, s3, &c->n, &c->k, al, A, &c->ia, &c->ja, c->A.desc, be, C, &c->ic, &c->jc,
           c->C.desc);
    } else if (K->fam == F_SYR2K) {
        pabc_t *fp;
        memcpy(&fp, &f, sizeof f);
        fp(s2, s3, &c->n, &c->k, al, A, &c->ia, &c->ja, c->A.desc, B, &c->ib, &c->jb, c->B.desc, be,
           C, &c->ic, &c->jc, c->C.desc);
    } else {
        ptrxm_t *fp;
        memcpy(&fp, &f, sizeof f);
        fp(s1, s2, s3, s4, &c->m, &c->n, al, A, &c->ia, &c->ja, c->A.desc, C, &c->ic, &c->jc,
           c->C.desc);
    }
}

/* Set element (i, j) of sub(X) (0-based within the submatrix) to (re, im) or NaN parts. */
static void set_sub(struct mat *x, int dt, int i0, int j0, int i, int j, double re, double im) {
    unsigned char *p = at(x, x->buf, dt, i0 - 1 + i, j0 - 1 + j);
    if (p) put(dt, p, re, im);
}

/* The TRANS letters of a kind (SYRK family, TRMM/TRSM) in precision dt. */
static const char *trans_set(int kk, int dt) {
    const struct kind *K = &kinds[kk];
    if (K->fam == F_TRXM) return "NTC";
    if (K->herm) return "NC";
    return dt < 2 ? "NTC" : "NT";
}

/* A random call of kind kk, precision dt, the option combination number combo. */
static void make_call(struct call *c, int kk, int dt, int combo, int ctxt, int P, int Q, int id) {
    memset(c, 0, sizeof *c);
    const struct kind *K = &kinds[kk];
    c->kk = kk, c->dt = dt;
    int cplx = dt >= 2;
    /* the options, combination `combo` (mixed radix) */
    if (K->fam == F_SYMM) {
        c->side = "LR"[combo % 2], c -> uplo = "UL"[(combo / 2) % 2];
    } else if (K->fam == F_TRXM) {
        const char *ts = trans_set(kk, dt);
        c->side = "LR"[combo % 2], c -> uplo = "UL"[(combo / 2) % 2];
        c->trans = ts[(combo / 4) % 3], c->diag = "NU"[(combo / 12) % 2];
    } else {
        const char *ts = trans_set(kk, dt);
        c->uplo = "UL"[combo % 2], c -> trans = ts[(combo / 2) % (int)strlen(ts)];
    }
    if (rint_(0, 5) == 0) c->uplo = (char)(c->uplo - 'A' + 'a');
    if (c->trans && rint_(0, 5) == 0) c->trans = (char)(c->trans - 'A' + 'a');
    int big = rint_(0, 3) == 0, top = big ? 30 : 14;
    c->m = rint_(0, top), c->n = rint_(0, top), c->k = rint_(0, top);
    if (rint_(0, 9) == 0) c->k = 0;
    if (K->fam == F_SYRK || K->fam == F_SYR2K) c->m = c->n;
    static const double al[] = {1.0, -0.5, 0.0, 2.0, 0.75, 1.0};
    c->alpha[0] = al[rint_(0, 5)];
    int real_alpha = K->herm && K->fam == F_SYRK, real_beta = K->herm && K->fam != F_SYMM;
    c->alpha[1] = cplx && !real_alpha && rint_(0, 1) ? 0.25 : 0.0;
    static const double bv[] = {0.0, 1.0, -1.0, 0.5, 0.0};
    if (K->fam != F_TRXM) {
        c->beta[0] = bv[rint_(0, 4)];
        c->beta[1] = cplx && !real_beta && rint_(0, 2) == 0 ? -0.5 : 0.0;
    }
    int alpha0 = c->alpha[0] == 0.0 && c->alpha[1] == 0.0;
    int beta0 = c->beta[0] == 0.0 && c->beta[1] == 0.0;

    if (K->fam == F_SYMM || K->fam == F_TRXM) {
        int a = order_a(c);
        make_operand(&c->A, dt, id, ctxt, a, a, &c->ia, &c->ja, P, Q, 1, &c->replicated);
        if (K->fam == F_SYMM)
            make_operand(&c->B, dt, id + 1, ctxt, c->m, c->n, &c->ib, &c->jb, P, Q, !c->replicated,
                         &c->replicated);
        make_operand(&c->C, dt, id + 2, ctxt, c->m, c->n, &c->ic, &c->jc, P, Q, !c->replicated,
                     &c->replicated);
        int up_ = upper_(c->uplo);
        for (int j = 0; j < a; j++)
            for (int i = 0; i < a; i++) {
                int unref = up_ ? i > j : i < j;
                if (unref)
                    set_sub(&c->A, dt, c->ia, c->ja, i, j, NAN, NAN);
                else if (K->fam == F_TRXM && i != j) /* keep op(A) well conditioned */
                    set_sub(&c->A, dt, c->ia, c->ja, i, j, val(id, i, j, 0) / 2,
                            val(id, i, j, 1) / 2);
            }
        for (int d = 0; d < a; d++) {
            if (K->fam == F_TRXM && up(c->diag) == 'U')
                set_sub(&c->A, dt, c->ia, c->ja, d, d, NAN, NAN);
            else if (K->fam == F_TRXM)
                set_sub(&c->A, dt, c->ia, c->ja, d, d,
                        (d % 2 ? -1 : 1) * (a + 2.0 + val(id, d, d, 0)), val(id, d, d, 1));
            else if (K->herm)
                set_sub(&c->A, dt, c->ia, c->ja, d, d, val(id, d, d, 0), NAN);
        }
        /* now and then a singular triangular A for TRSM (an exact 0 on the diagonal) */
        if (kk == K_TRSM && up(c->diag) == 'N' && a > 0 && rint_(0, 9) == 0) {
            set_sub(&c->A, dt, c->ia, c->ja, a / 2, a / 2, 0.0, 0.0);
            c->singular = 1;
        }
    } else {
        int na = notrans(c);
        int r = na ? c->n : c->k, q = na ? c->k : c->n;
        make_operand(&c->A, dt, id, ctxt, r, q, &c->ia, &c->ja, P, Q, 1, &c->replicated);
        if (K->fam == F_SYR2K)
            make_operand(&c->B, dt, id + 1, ctxt, r, q, &c->ib, &c->jb, P, Q, !c->replicated,
                         &c->replicated);
        make_operand(&c->C, dt, id + 2, ctxt, c->n, c->n, &c->ic, &c->jc, P, Q, !c->replicated,
                     &c->replicated);
        if (K->herm && !beta0)
            for (int d = 0; d < c->n; d++)
                set_sub(&c->C, dt, c->ic, c->jc, d, d, val(id + 2, d, d, 0), NAN);
    }
    if (K->fam == F_SYRK || K->fam == F_SYR2K || K->fam == F_SYMM) {
        /* beta = 0: sub(C) must not be read */
        if (beta0 && rint_(0, 2))
            for (int j = 0; j < c->n; j++)
                for (int i = 0; i < c->m; i++) set_sub(&c->C, dt, c->ic, c->jc, i, j, NAN, NAN);
    }
    if (alpha0) { /* alpha = 0: neither A nor B may be read */
        int ar = K->fam == F_SYMM || K->fam == F_TRXM ? order_a(c) : notrans(c) ? c->n : c->k;
        int aq = K->fam == F_SYMM || K->fam == F_TRXM ? order_a(c) : notrans(c) ? c->k : c->n;
        for (int j = 0; j < aq; j++)
            for (int i = 0; i < ar; i++) {
                set_sub(&c->A, dt, c->ia, c->ja, i, j, NAN, NAN);
                if (K->fam == F_SYR2K) set_sub(&c->B, dt, c->ib, c->jb, i, j, NAN, NAN);
            }
        if (K->fam == F_SYMM)
            for (int j = 0; j < c->n; j++)
                for (int i = 0; i < c->m; i++) set_sub(&c->B, dt, c->ib, c->jb, i, j, NAN, NAN);
        c->singular = 0;
    }
}

static void free_call(struct call *c) {
    free(c->A.buf);
    free(c->B.buf);
    free(c->C.buf);
}

static const char *mode(void) {
    const char *m = getenv("TEST_GLUE_MODE");
    return m ? m : "force";
}

static int is_quick(const struct call *c) {
    const struct kind *K = &kinds[c->kk];
    int alpha0 = c->alpha[0] == 0.0 && c->alpha[1] == 0.0;
    int beta1 = c->beta[0] == 1.0 && c->beta[1] == 0.0;
    switch (K->fam) {
    case F_SYMM: return c->m == 0 || c->n == 0 || (alpha0 && beta1);
    case F_TRXM: return c->m == 0 || c->n == 0;
    default: return c->n == 0 || ((alpha0 || c->k == 0) && beta1);
    }
}

static void describe(const struct call *c, char *s, size_t n) {
    snprintf(s, n,
             "p%c%s side %c uplo %c trans %c diag %c m %d n %d k %d alpha %g%+gi beta "
             "%g%+gi%s%s",
             "sdcz"[c->dt], kinds[c->kk].name, c->side ? c->side : '-', c->uplo ? c->uplo : '-',
             c->trans ? c->trans : '-', c->diag ? c->diag : '-', c->m, c->n, c->k, c->alpha[0],
             c->alpha[1], c->beta[0], c->beta[1], c->replicated ? " replicated" : "",
             c->singular ? " singular" : "");
}

/* Run one call through the glue and the reference and compare everything. */
static void check_call(struct call *c) {
    const struct kind *K = &kinds[c->kk];
    int dt = c->dt;
    size_t es = esize[dt];
    char what[256];
    describe(c, what, sizeof what);
    if (wrank == 0 && getenv("TEST_GLUE_SHOW")) fprintf(stderr, "    %s\n", what);
    size_t bb = c->B.buf ? c->B.bytes : 1;
    unsigned char *A0 = malloc(c->A.bytes), *B0 = malloc(bb), *Ag = malloc(c->A.bytes),
                  *Bg = malloc(bb), *Cg = malloc(c->C.bytes), *Cr = malloc(c->C.bytes);
    ASSERT(A0 && B0 && Ag && Bg && Cg && Cr);
    memcpy(A0, c->A.buf, c->A.bytes);
    memcpy(Ag, c->A.buf, c->A.bytes);
    if (c->B.buf) memcpy(B0, c->B.buf, bb), memcpy(Bg, c->B.buf, bb);
    memcpy(Cg, c->C.buf, c->C.bytes);
    memcpy(Cr, c->C.buf, c->C.bytes);

    char name[16];
    snprintf(name, sizeof name, "p%c%s", "sdcz"[dt], K -> name);
    tess_scalapack_counters_t before, after;
    ASSERT_OK(tess_scalapack_counters(name, &before));
    rec_reset();
    run(glue_fn[c->kk][dt], c, Ag, Bg, Cg);
    ASSERT_MSG(rec.aborts == 0, "%s: the glue reported info %d (%s): %s", what, rec.info, rec.rout,
               rec.warn);
    ASSERT_OK(tess_scalapack_counters(name, &after));
    run(ref_fn[c->kk][dt], c, c->A.buf, c->B.buf, Cr);
    ASSERT_MSG(rec.aborts == 0, "%s: the reference reported info %d", what, rec.info);

    /* where the call went */
    uint64_t dtess = after.tessera_calls - before.tessera_calls;
    uint64_t dref = after.reference_calls - before.reference_calls;
    uint64_t dquick = after.quick_returns - before.quick_returns;
    uint64_t dfall = after.fallbacks - before.fallbacks;
    int fault = !strcmp(mode(), "fault"), force = fault || !strcmp(mode(), "force");
    int to_ref = c->replicated || c->singular || !force;
    if (is_quick(c)) {
        ASSERT_MSG(dquick == 1 && dtess == 0 && dref == 0, "%s: quick return not taken", what);
    } else if (!to_ref && fault && dref == 1) {
        /* the injected device failure: a call that met it fell back (counted); once the
         * only device of a process is gone, the calls of its grids go to the reference
         * (through the agreement, on the other processes too) */
        ASSERT_MSG(dtess == 0 && dfall <= 1, "%s: tessera +%llu, fallbacks +%llu", what,
                   (unsigned long long)dtess, (unsigned long long)dfall);
    } else if (!to_ref) {
        /* TRSM: p?trtri's own p?trsm_ calls come on top */
        ASSERT_MSG((c->kk == K_TRSM ? dtess >= 1 : dtess == 1) && dref == 0,
                   "%s: forced call did not go to tessera (tessera +%llu, reference +%llu)", what,
                   (unsigned long long)dtess, (unsigned long long)dref);
    } else {
        ASSERT_MSG(dtess == 0 && dref == 1,
                   "%s: call did not go to the reference (tessera "
                   "+%llu, reference +%llu)",
                   what, (unsigned long long)dtess, (unsigned long long)dref);
    }

    /* A and B untouched */
    ASSERT_MSG(!memcmp(A0, Ag, c->A.bytes), "%s: the glue wrote into A", what);
    ASSERT_MSG(!c->B.buf || !memcmp(B0, Bg, bb), "%s: the glue wrote into B", what);

    /* the output within rounding (its triangle for the SYRK family), the rest byte for byte */
    int tri = K->fam == F_SYRK || K->fam == F_SYR2K, upc = upper_(c->uplo);
    int kdim = K->fam == F_SYMM || K->fam == F_TRXM ? order_a(c) : c->k;
    double eps = dt == 0 || dt == 2 ? FLT_EPSILON : DBL_EPSILON;
    double amax = 0.0;
    for (int j = 0; j < c->n; j++)
        for (int i = 0; i < c->m; i++) {
            unsigned char *pr = at(&c->C, Cr, dt, c->ic - 1 + i, c->jc - 1 + j);
            if (!pr || (tri && (upc ? i > j : i < j))) continue;
            for (int part = 0; part < (dt >= 2 ? 2 : 1); part++)
                if (fabs(part_of(dt, pr, part)) > amax) amax = fabs(part_of(dt, pr, part));
        }
    double an = fabs(c->alpha[0]) + fabs(c->alpha[1]), bn = fabs(c->beta[0]) + fabs(c->beta[1]);
    double tol = 32 * eps * (kdim + 2) * (1 + amax) * (1 + an) * (1 + bn);
    unsigned char *mask = calloc(c->C.bytes, 1);
    ASSERT(mask);
    for (int j = 0; j < c->n; j++)
        for (int i = 0; i < c->m; i++) {
            if (tri && (upc ? i > j : i < j)) continue;
            int gi = c->ic - 1 + i, gj = c->jc - 1 + j;
            unsigned char *pg = at(&c->C, Cg, dt, gi, gj);
            if (!pg) continue;
            unsigned char *pr = at(&c->C, Cr, dt, gi, gj);
            memset(mask + (pg - Cg), 1, es);
            if (to_ref || is_quick(c)) {
                /* handed to the reference, or nothing to do: the very same bytes */
                ASSERT_MSG(!memcmp(pg, pr, es),
                           "%s: element (%d,%d) differs from the "
                           "reference's",
                           what, gi + 1, gj + 1);
                continue;
            }
            if (K->herm && K->fam != F_SYMM && i == j)
                ASSERT_MSG(part_of(dt, pg, 1) == 0.0, "%s: Im C(%d,%d) = %g, must be 0", what,
                           gi + 1, gj + 1, part_of(dt, pg, 1));
            for (int part = 0; part < (dt >= 2 ? 2 : 1); part++) {
                double g = part_of(dt, pg, part), r = part_of(dt, pr, part);
                ASSERT_MSG(isfinite(r), "%s: the reference's (%d,%d)[%d] = %g is not finite", what,
                           gi + 1, gj + 1, part, r);
                ASSERT_MSG(isfinite(g),
                           "%s: (%d,%d)[%d] = %g is not finite (a NaN planted where "
                           "nothing may be read reached it?)",
                           what, gi + 1, gj + 1, part, g);
                ASSERT_MSG(fabs(g - r) <= tol,
                           "%s: (%d,%d)[%d] glue %.17g reference %.17g (tol "
                           "%.3g)",
                           what, gi + 1, gj + 1, part, g, r, tol);
            }
        }
    for (size_t b = 0; b < c->C.bytes; b++)
        if (!mask[b] && Cg[b] != c->C.buf[b])
            TEST_FAIL_("%s: byte %zu of the local output (element %zu, outside the part it may "
                       "write%s) changed",
                       what, b, b / es, b >= c->C.bytes - GUARD ? ", guard" : "");
    free(mask);
    free(A0), free(B0), free(Ag), free(Bg), free(Cg), free(Cr);
}

/* ---- grids --------------------------------------------------------------------------------- */

static int cases(void) {
    const char *v = getenv("TEST_GLUE_L3_CASES");
    return v && atoi(v) > 0 ? atoi(v) : 3;
}

static int ncombos(int kk, int dt) {
    const struct kind *K = &kinds[kk];
    if (K->fam == F_SYMM) return 4;
    if (K->fam == F_TRXM) return 24;
    return 2 * (int)strlen(trans_set(kk, dt));
}

/* Random calls of the kinds [k0, k1) in every precision on every grid that fits. */
static void random_calls(int k0, int k1) {
    int ncall = 0;
    for (int s = 0; s < NSHAPES; s++) {
        int P = shape_list[s][0], Q = shape_list[s][1];
        if (P * Q > wsize) continue;
        int ctxt = grid_open(P, Q);
        rng_state = 0x2545F4914F6CDD1Dull + (uint64_t)(s * 7919 + k0 * 104729) +
                    seed() * 0x9E3779B97F4A7C15ull;
        if (ctxt >= 0) {
            int nprow, npcol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow_, &mycol_);
            ASSERT(nprow == P && npcol == Q);
            for (int kk = k0; kk < k1; kk++)
                for (int dt = 0; dt < 4; dt++) {
                    if (kinds[kk].herm && dt < 2) continue;
                    for (int i = 0; i < cases(); i++, ncall++) {
                        struct call c;
                        int combo = (s * cases() + i) % ncombos(kk, dt);
                        make_call(&c, kk, dt, combo, ctxt, P, Q, 100 + ncall * 3);
                        check_call(&c);
                        free_call(&c);
                    }
                }
            Cblacs_gridexit(ctxt);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* SYMM/HEMM: sub(C) = alpha T B + beta C with T built from A's referenced triangle. */
TEST(glue_l3_symm) { random_calls(0, 2); }
/* SYRK/HERK/SYR2K/HER2K: C's triangle = beta C + W, W a full GEMM (two for the 2k ones). */
TEST(glue_l3_syrk) { random_calls(2, 6); }
/* TRMM: B = alpha op(T) W, T = A's triangle, W a copy of B. */
TEST(glue_l3_trmm) { random_calls(6, 7); }
/* TRSM: blocked, diagonal blocks inverted (TESSERA_SCALAPACK_TRSM_BLOCK). */
TEST(glue_l3_trsm) { random_calls(7, 8); }

/* TEST_GLUE_MODE=fault (registered with one emulated device and TESSERA_FAULT): the device
 * fails during some call; that call must fall back to the reference with its output's input
 * intact (SYRK family: C not yet touched; TRMM: sub(B) put back from its copy) and give the
 * reference's result, and every later call goes to the reference. These check that the
 * fault did reach the glue (on some rank). */
static void fell_back(int k0, int k1) {
    if (strcmp(mode(), "fault")) return;
    unsigned long long mine = 0, all = 0;
    for (int kk = k0; kk < k1; kk++) {
        tess_scalapack_counters_t x;
        ASSERT_OK(tess_scalapack_counters(kinds[kk].name, &x));
        mine += x.fallbacks;
    }
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    ASSERT_MSG(all > 0, "no %s call fell back: the injected fault did not reach the glue",
               kinds[k0].name);
    if (wrank == 0) fprintf(stderr, "    %llu fallbacks over the ranks\n", all);
}
TEST(glue_l3_syrk_fault_fell_back) { fell_back(2, 6); }
TEST(glue_l3_trmm_fault_fell_back) { fell_back(6, 7); }

/* ---- bad arguments ---------------------------------------------------------------------------
 * The program's own PB_Cabort and PB_Cwarn (defined below) record what they are told; the
 * glue must report exactly what the reference reports (routine name, info code, warnings
 * with their text and line numbers) and write nothing. */

struct mutation {
    const char *what;
    int fams; /* bit per family it applies to */
    void (*apply)(struct call *c, int P, int Q);
};
#define ALL_F 15
#define NOT_SYRK (1 << F_SYMM | 1 << F_TRXM)
#define SYRKS (1 << F_SYRK | 1 << F_SYR2K)
static void m_l1(struct call *c, int P, int Q) {
    if (kinds[c->kk].fam == F_SYRK || kinds[c->kk].fam == F_SYR2K)
        c->uplo = 'X';
    else
        c->side = 'x';
}
static void m_l2(struct call *c, int P, int Q) {
    if (kinds[c->kk].fam == F_SYRK || kinds[c->kk].fam == F_SYR2K)
        c->trans = 'q';
    else
        c->uplo = 'Q';
}
static void m_l12(struct call *c, int P, int Q) { m_l1(c, P, Q), m_l2(c, P, Q); }
static void m_trans(struct call *c, int P, int Q) { c->trans = 'Z'; }
static void m_diag(struct call *c, int P, int Q) { c->diag = 'T'; }
static void m_side_diag(struct call *c, int P, int Q) { c->side = 'B', c->diag = 'T'; }
static void m_trans_diag(struct call *c, int P, int Q) { c->trans = 'B', c->diag = 'x'; }
static void m_wrong_trans(struct call *c, int P, int Q) { /* 'C' for complex SYRK, 'T' for HERK */
    c->trans = kinds[c->kk].herm ? 'T' : 'C';
}
static void m_m(struct call *c, int P, int Q) { c->m = -1; }
static void m_n(struct call *c, int P, int Q) { c->n = -3; }
static void m_k(struct call *c, int P, int Q) { c->k = -2; }
static void m_ia(struct call *c, int P, int Q) { c->ia = 0; }
static void m_jb(struct call *c, int P, int Q) { c->jb = -1; }
static void m_icjc(struct call *c, int P, int Q) { c->ic = 0, c->jc = 0; }
static void m_dtype(struct call *c, int P, int Q) { c->A.desc[0] = 7; }
static void m_ctxt_c(struct call *c, int P, int Q) { c->C.desc[1] += 17; }
static void m_ctxt_a(struct call *c, int P, int Q) { c->A.desc[1] = -1; }
static void m_mb(struct call *c, int P, int Q) { c->A.desc[c->A.dlen == 9 ? 4 : 6] = 0; }
static void m_nb_c(struct call *c, int P, int Q) { c->C.desc[c->C.dlen == 9 ? 5 : 7] = -1; }
static void m_rsrc(struct call *c, int P, int Q) { c->A.desc[c->A.dlen == 9 ? 6 : 8] = P; }
static void m_csrc_b(struct call *c, int P, int Q) { c->B.desc[c->B.dlen == 9 ? 7 : 9] = -2; }
static void m_m_(struct call *c, int P, int Q) { c->A.desc[2] = 0; }
static void m_bounds(struct call *c, int P, int Q) { c->ic = c->C.desc[2] + 1; }
static void m_bounds_j(struct call *c, int P, int Q) { c->ja = c->A.desc[3] + 1; }
static void m_lld0(struct call *c, int P, int Q) { c->C.desc[c->C.dlen - 1] = 0; }
static void m_l1_lld(struct call *c, int P, int Q) { m_l1(c, P, Q), c->A.desc[c->A.dlen - 1] = 0; }
static void m_empty_lld(struct call *c, int P, int Q) {
    c->n = 0, c->C.desc[c->C.dlen - 1] = 0; /* sub(C) empty: LLD_ relaxed, still checked >= 1 */
}
static void m_many(struct call *c, int P, int Q) {
    c->C.desc[c->C.dlen == 9 ? 4 : 6] = 0, c->A.desc[c->A.dlen == 9 ? 6 : 8] = 99, c->ja = 0;
}
static const struct mutation mutations[] = {
    {"first letter", ALL_F, m_l1},
    {"second letter", ALL_F, m_l2},
    {"both letters", ALL_F, m_l12},
    {"TRANS", 1 << F_TRXM, m_trans},
    {"DIAG", 1 << F_TRXM, m_diag},
    {"SIDE + DIAG", 1 << F_TRXM, m_side_diag},
    {"TRANS + DIAG", 1 << F_TRXM, m_trans_diag},
    {"TRANS not for this type", SYRKS, m_wrong_trans},
    {"M < 0", NOT_SYRK, m_m},
    {"N < 0", ALL_F, m_n},
    {"K < 0", SYRKS, m_k},
    {"IA = 0", ALL_F, m_ia},
    {"JB < 0", 1 << F_SYMM | 1 << F_SYR2K, m_jb},
    {"IC = JC = 0", ALL_F, m_icjc},
    {"DTYPE_A", ALL_F, m_dtype},
    {"CTXT of the output", ALL_F, m_ctxt_c},
    {"CTXT_A = -1", ALL_F, m_ctxt_a},
    {"MB_A = 0", ALL_F, m_mb},
    {"NB of the output < 0", ALL_F, m_nb_c},
    {"RSRC_A = P", ALL_F, m_rsrc},
    {"CSRC_B = -2", 1 << F_SYMM | 1 << F_SYR2K, m_csrc_b},
    {"M_A = 0", ALL_F, m_m_},
    {"IC + M > M_C", ALL_F, m_bounds},
    {"JA + N > N_A", ALL_F, m_bounds_j},
    {"LLD of the output = 0", ALL_F, m_lld0},
    {"first letter + LLD_A", ALL_F, m_l1_lld},
    {"N = 0, LLD = 0", ALL_F, m_empty_lld},
    {"three at once", ALL_F, m_many},
};
enum { NMUT = sizeof mutations / sizeof mutations[0] };

/* Every bad argument is reported as the reference PBLAS reports it, and nothing is written. */
TEST(glue_l3_errors) {
    int nchecked = 0;
    for (int s = 0; s < NSHAPES; s++) {
        int P = shape_list[s][0], Q = shape_list[s][1];
        if (P * Q > wsize) continue;
        /* a few grids are enough: every shape's check is the same code */
        if (s != 0 && s != 5 && s != 6 && !(s == 1 && wsize < 4)) continue;
        int ctxt = grid_open(P, Q);
        if (ctxt >= 0) {
            int nprow, npcol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow_, &mycol_);
            for (int kk = 0; kk < NKINDS; kk++)
                for (int dt = 0; dt < 4; dt++) {
                    if (kinds[kk].herm && dt < 2) continue;
                    for (int t = 0; t < NMUT; t++) {
                        const struct mutation *mu = &mutations[t];
                        if (!(mu->fams & (1 << kinds[kk].fam))) continue;
                        if (mu->apply == m_wrong_trans && dt < 2 && !kinds[kk].herm) continue;
                        rng_state = 0xABCDEFull + (uint64_t)(s * 1000 + t * 10 + kk);
                        struct call c;
                        do { /* a valid call with work and no replicated operand */
                            make_call(&c, kk, dt, rint_(0, 23) % ncombos(kk, dt), ctxt, P, Q,
                                      9000 + t);
                            if (c.m > 0 && c.n > 0 && c.k > 0 && !c.replicated) break;
                            free_call(&c);
                        } while (1);
                        mu->apply(&c, P, Q);
                        unsigned char *Cg = malloc(c.C.bytes), *Cr = malloc(c.C.bytes);
                        ASSERT(Cg && Cr);
                        memcpy(Cg, c.C.buf, c.C.bytes);
                        memcpy(Cr, c.C.buf, c.C.bytes);
                        char name[16];
                        snprintf(name, sizeof name, "p%c%s", "sdcz"[dt], kinds[kk].name);
                        tess_scalapack_counters_t before, after;
                        tess_scalapack_counters(name, &before);
                        rec_reset();
                        run(glue_fn[kk][dt], &c, c.A.buf, c.B.buf, Cg);
                        __typeof__(rec) got = rec;
                        tess_scalapack_counters(name, &after);
                        rec_reset();
                        run(ref_fn[kk][dt], &c, c.A.buf, c.B.buf, Cr);
                        ASSERT_MSG(rec.aborts == 1, "%s %s: the reference did not report it", name,
                                   mu->what);
                        ASSERT_MSG(got.aborts == 1 && got.info == rec.info &&
                                       !strcmp(got.rout, rec.rout) && got.ctxt == rec.ctxt,
                                   "%s %s (%dx%d): glue reported %d x info %d in %s (ctxt %d), the "
                                   "reference info %d in %s (ctxt %d)",
                                   name, mu->what, P, Q, got.aborts, got.info, got.rout, got.ctxt,
                                   rec.info, rec.rout, rec.ctxt);
                        ASSERT_MSG(!strcmp(got.warn, rec.warn),
                                   "%s %s: warnings differ:\nglue:\n"
                                   "%sreference:\n%s",
                                   name, mu->what, got.warn, rec.warn);
                        ASSERT_MSG(!memcmp(Cg, c.C.buf, c.C.bytes),
                                   "%s %s: the glue wrote into "
                                   "its output",
                                   name, mu->what);
                        ASSERT_EQ(after.arg_errors - before.arg_errors, 1);
                        ASSERT_EQ(after.tessera_calls + after.reference_calls,
                                  before.tessera_calls + before.reference_calls);
                        if (wrank == 0 && s == 0 && getenv("TEST_GLUE_SHOW"))
                            fprintf(stderr, "    %-8s %-28s info %6d\n", name, mu->what, rec.info);
                        nchecked++;
                        free(Cg);
                        free(Cr);
                        free_call(&c);
                    }
                }
            Cblacs_gridexit(ctxt);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (wrank == 0 && getenv("TEST_GLUE_SHOW")) fprintf(stderr, "    %d bad calls\n", nchecked);
}

/* The counters: these routines are counted under their own names, and forced calls went to
 * tessera (unforced ones to the reference). */
TEST(glue_l3_counters) {
    tess_scalapack_counters_t all, g, x;
    ASSERT_OK(tess_scalapack_counters(NULL, &all));
    ASSERT_OK(tess_scalapack_counters("gemm", &g));
    for (int kk = 0; kk < NKINDS; kk++) {
        ASSERT_OK(tess_scalapack_counters(kinds[kk].name, &x));
        if (wrank >= 6) continue; /* ranks outside every grid made no call */
        ASSERT_GT(x.tessera_calls + x.reference_calls + x.quick_returns, 0);
        if (!strcmp(mode(), "force"))
            ASSERT_GT(x.tessera_calls, 0);
        else
            ASSERT_EQ(x.tessera_calls, 0);
    }
    ASSERT_EQ(g.tessera_calls + g.reference_calls, 0); /* no p?gemm_ of ours in this program */
    ASSERT_OK(tess_scalapack_counters("PZHER2K_", &x));
    ASSERT_EQ(tess_scalapack_counters("pssyr2", &x), -1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int me, np;
    Cblacs_pinfo(&me, &np);
    /* the reference routines: from the library that defines BLACS */
    const char *libname;
    void *lib = reference_library(&libname);
    for (int kk = 0; kk < NKINDS; kk++)
        for (int d = 0; d < 4; d++) {
            if (kinds[kk].herm && d < 2) continue;
            char name[16];
            snprintf(name, sizeof name, "p%c%s_", "sdcz"[d], kinds[kk].name);
            void *r = dlsym(lib, name), *g = dlsym(RTLD_DEFAULT, name);
            Dl_info gi_;
            if (!r || !g || r == g || !dladdr(g, &gi_) ||
                !strstr(gi_.dli_fname, "tessera_scalapack")) {
                fprintf(stderr, "rank %d: %s: the glue is not in front of %s\n", wrank, name,
                        libname);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            glue_fn[kk][d] = g;
            ref_fn[kk][d] = r;
        }
    if (wrank == 0)
        fprintf(stderr, "mode %s, %d ranks, TRSM block %s, reference %s\n", mode(), wsize,
                getenv("TESSERA_SCALAPACK_TRSM_BLOCK") ? getenv("TESSERA_SCALAPACK_TRSM_BLOCK")
                                                       : "default",
                libname);
    int rc = test_main_(argc, argv);
    Cblacs_exit(1);
    MPI_Finalize();
    return rc;
}
