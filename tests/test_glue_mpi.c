/* tests/test_glue_mpi.c: the ScaLAPACK glue's p?gemm_ (libtessera_scalapack.so) against the
 * reference PBLAS underneath it, under mpirun (1, 2, 4 and 6 ranks; every grid from 1 x 1 to
 * 2 x 3 / 3 x 2 that fits). The program links the glue before Debian's ScaLAPACK, so
 * pdgemm_ is the glue's; the reference comes from the ScaLAPACK library itself (dlopen of
 * the library defining Cblacs_gridinfo, then dlsym). Both run on the same inputs: random
 * calls (below, "one random call"), bad arguments reported exactly as the reference reports
 * them ("bad arguments"), global arguments that differ on one process (every process reports
 * the same PBLAS error, nothing written, no reference call, no hang), contexts freed and
 * their handles reused with another shape, and the counters per TEST_GLUE_MODE (force:
 * every call with work in tessera but the replicated ones; default: these small calls on the
 * reference). A failed assertion on any rank aborts the whole job (MPI_Abort). The other
 * level-3 routines: tests/test_glue_l3_mpi.c.
 */
#include <unistd.h>

#include "glue_test.h"

typedef void pgemm_t(const char *, const char *, const int *, const int *, const int *,
                     const void *, const void *, const int *, const int *, const int *,
                     const void *, const int *, const int *, const int *, const void *, void *,
                     const int *, const int *, const int *);
extern pgemm_t psgemm_, pdgemm_, pcgemm_, pzgemm_;
static pgemm_t *const glue_fn[4] = {psgemm_, pdgemm_, pcgemm_, pzgemm_};
static pgemm_t *ref_fn[4];
static const char *const rout_name[4] = {"PSGEMM", "PDGEMM", "PCGEMM", "PZGEMM"};

/* A matrix of M_ x N_ with the given map; local storage with an LLD gap and a guard, every
 * byte outside the matrix's elements set to a rank-specific pattern. */
static void mat_make(struct mat *x, int dt, int id, int ctxt, int M, int N, int imb, int inb,
                     int mb, int nb, int rsrc, int csrc, int form11, int gap, int P, int Q,
                     int myrow, int mycol) {
    memset(x, 0, sizeof *x);
    x->id = id;
    x->rows = (struct dim){M, imb, mb, rsrc, P};
    x->cols = (struct dim){N, inb, nb, csrc, Q};
    x->lr = count_on(&x->rows, myrow);
    x->lc = count_on(&x->cols, mycol);
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
    size_t es = esize[dt];
    x->bytes = (size_t)x->lld * (size_t)(x->lc > 0 ? x->lc : 1) * es + GUARD;
    x->buf = malloc(x->bytes);
    ASSERT(x->buf);
    for (size_t b = 0; b < x->bytes; b++)
        x->buf[b] = (unsigned char)(0xA5 ^ (b * 7) ^ (unsigned)wrank);
    /* the elements: global (gi, gj) at local (li, lj) */
    for (int gj = 0; gj < N; gj++) {
        if (x->cols.src >= 0 && owner(&x->cols, gj) != mycol) continue;
        int lj = local_of(&x->cols, gj);
        for (int gi = 0; gi < M; gi++) {
            if (x->rows.src >= 0 && owner(&x->rows, gi) != myrow) continue;
            int li = local_of(&x->rows, gi);
            unsigned char *p = x->buf + ((size_t)li + (size_t)lj * (size_t)x->lld) * es;
            double re = val(id, gi, gj, 0), im = val(id, gi, gj, 1);
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
    }
}

/* ---- one random call ---------------------------------------------------------------------
 * Every precision and transpose, sizes 0..40, odd block sizes, 9- and 11-entry descriptors
 * (first blocks IMB/INB), submatrix offsets, nonzero RSRC/CSRC, LLD gaps, now and then a
 * replicated A or B (RSRC/CSRC = -1: the glue must hand it to the reference), alpha and beta
 * 0 and 1, beta = 0 over a NaN-filled C: sub(C) agrees within rounding, everything else of
 * the local arrays (outside sub(C), the LLD gap, a guard zone after the array, A and B) is
 * byte for byte unchanged. */
struct call {
    int dt;
    char ta, tb;
    int m, n, k;
    double alpha[2], beta[2];
    int ia, ja, ib, jb, ic, jc; /* 1-based */
    struct mat A, B, C;
    int nan_c;      /* beta = 0 and sub(C) filled with NaN */
    int replicated; /* A or B has RSRC/CSRC = -1 */
};

static void scalar(int dt, const double v[2], unsigned char out[16]) {
    memset(out, 0, 16);
    if (dt == 0 || dt == 2) {
        float f[2] = {(float)v[0], (float)v[1]};
        memcpy(out, f, 8);
    } else {
        memcpy(out, v, 16);
    }
}

static void run(pgemm_t *f, struct call *c, unsigned char *A, unsigned char *B, unsigned char *C) {
    unsigned char al[16], be[16];
    scalar(c->dt, c->alpha, al);
    scalar(c->dt, c->beta, be);
    char ta[2] = {c->ta, 0}, tb[2] = {c->tb, 0};
    f(ta, tb, &c->m, &c->n, &c->k, al, A, &c->ia, &c->ja, c->A.desc, B, &c->ib, &c->jb, c->B.desc,
      be, C, &c->ic, &c->jc, c->C.desc);
}

/* Random sizes of one operand (rows x cols of sub(X)), its descriptor and storage. */
static void make_operand(struct mat *x, int dt, int id, int ctxt, int rows, int cols, int *ix,
                         int *jx, int P, int Q, int myrow, int mycol, int allow_replicated,
                         int *replicated) {
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
    mat_make(x, dt, id, ctxt, M, N, imb, inb, mb, nb, rsrc, csrc, form11, gap, P, Q, myrow, mycol);
    *ix = i0 + 1;
    *jx = j0 + 1;
}

/* TEST_GLUE_MAX_DIM: the largest m, n, k of the "big" quarter of the calls (default 40) */
static int max_dim(void) {
    const char *v = getenv("TEST_GLUE_MAX_DIM");
    return v && atoi(v) > 17 ? atoi(v) : 40;
}

static void make_call(struct call *c, int ctxt, int P, int Q, int myrow, int mycol, int case_id) {
    memset(c, 0, sizeof *c);
    c->dt = rint_(0, 3);
    static const char tr[] = "NTC";
    c->ta = tr[rint_(0, 2)];
    c->tb = tr[rint_(0, 2)];
    if (rint_(0, 5) == 0) c->ta = (char)(c->ta - 'A' + 'a'); /* lower case is fine too */
    int big = rint_(0, 3) == 0, top = big ? max_dim() : 17;
    c->m = rint_(0, top);
    c->n = rint_(0, top);
    c->k = rint_(0, top);
    if (rint_(0, 9) == 0) c->k = 0;
    static const double al[] = {1.0, -0.5, 0.0, 2.0, 0.75};
    c->alpha[0] = al[rint_(0, 4)];
    c->alpha[1] = c->dt >= 2 && rint_(0, 1) ? 0.25 : 0.0;
    static const double bv[] = {0.0, 1.0, -1.0, 0.5, 0.0};
    c->beta[0] = bv[rint_(0, 4)];
    c->beta[1] = c->dt >= 2 && rint_(0, 2) == 0 ? -0.5 : 0.0;
    int beta0 = c->beta[0] == 0.0 && c->beta[1] == 0.0;
    c->nan_c = beta0 && rint_(0, 1);
    int na = c->ta == 'N' || c->ta == 'n', nb = c->tb == 'N';
    int id = case_id * 3;
    make_operand(&c->A, c->dt, id, ctxt, na ? c->m : c->k, na ? c->k : c->m, &c->ia, &c->ja, P, Q,
                 myrow, mycol, 1, &c->replicated);
    make_operand(&c->B, c->dt, id + 1, ctxt, nb ? c->k : c->n, nb ? c->n : c->k, &c->ib, &c->jb, P,
                 Q, myrow, mycol, !c->replicated, &c->replicated);
    int dummy = 0;
    make_operand(&c->C, c->dt, id + 2, ctxt, c->m, c->n, &c->ic, &c->jc, P, Q, myrow, mycol, 0,
                 &dummy);
    if (c->nan_c)
        for (int j = 0; j < c->n; j++)
            for (int i = 0; i < c->m; i++) {
                unsigned char *p = mat_at(&c->C, c->C.buf, c->dt, c->ic - 1 + i, c->jc - 1 + j,
                                          myrow, mycol);
                if (!p) continue;
                double nanv[2] = {NAN, NAN};
                unsigned char s[16];
                scalar(c->dt, nanv, s);
                memcpy(p, s, esize[c->dt]);
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
    int alpha0 = c->alpha[0] == 0.0 && c->alpha[1] == 0.0;
    int beta1 = c->beta[0] == 1.0 && c->beta[1] == 0.0;
    return c->m == 0 || c->n == 0 || ((alpha0 || c->k == 0) && beta1);
}

/* Run one random call through the glue and the reference and compare everything. */
static void check_call(struct call *c, int myrow, int mycol, int case_id) {
    int dt = c->dt;
    size_t es = esize[dt];
    unsigned char *A0 = malloc(c->A.bytes), *B0 = malloc(c->B.bytes);
    unsigned char *Cg = malloc(c->C.bytes), *Cr = malloc(c->C.bytes);
    ASSERT(A0 && B0 && Cg && Cr);
    memcpy(A0, c->A.buf, c->A.bytes);
    memcpy(B0, c->B.buf, c->B.bytes);
    memcpy(Cg, c->C.buf, c->C.bytes);
    memcpy(Cr, c->C.buf, c->C.bytes);

    tess_scalapack_counters_t before, after;
    ASSERT_OK(tess_scalapack_counters("gemm", &before));
    rec_reset();
    run(glue_fn[dt], c, c->A.buf, c->B.buf, Cg);
    ASSERT_MSG(rec.aborts == 0, "case %d: the glue reported info %d (%s): %s", case_id, rec.info,
               rec.rout, rec.warn);
    ASSERT_OK(tess_scalapack_counters("gemm", &after));
    run(ref_fn[dt], c, A0, B0, Cr);
    ASSERT_MSG(rec.aborts == 0, "case %d: the reference reported info %d", case_id, rec.info);

    /* where the call went */
    uint64_t dtess = after.tessera_calls - before.tessera_calls;
    uint64_t dref = after.reference_calls - before.reference_calls;
    uint64_t dquick = after.quick_returns - before.quick_returns;
    int force = !strcmp(mode(), "force");
    if (is_quick(c)) {
        ASSERT_MSG(dquick == 1 && dtess == 0 && dref == 0, "case %d: quick return not taken",
                   case_id);
    } else if (force && !c->replicated) {
        ASSERT_MSG(dtess == 1 && dref == 0,
                   "case %d: forced call did not go to tessera "
                   "(tessera +%llu, reference +%llu)",
                   case_id, (unsigned long long)dtess, (unsigned long long)dref);
    } else {
        ASSERT_MSG(dtess == 0 && dref == 1,
                   "case %d: call did not go to the reference "
                   "(tessera +%llu, reference +%llu)",
                   case_id, (unsigned long long)dtess, (unsigned long long)dref);
    }

    /* A and B untouched */
    ASSERT_MSG(!memcmp(A0, c->A.buf, c->A.bytes), "case %d: the glue wrote into A", case_id);
    ASSERT_MSG(!memcmp(B0, c->B.buf, c->B.bytes), "case %d: the glue wrote into B", case_id);

    /* sub(C) within rounding; everything else byte for byte */
    double eps = dt == 0 || dt == 2 ? FLT_EPSILON : DBL_EPSILON;
    double scale = (fabs(c->alpha[0]) + fabs(c->alpha[1])) * (c->k + 1) * 2 +
                   (fabs(c->beta[0]) + fabs(c->beta[1])) * 2 + 1;
    double tol = 16 * eps * scale;
    unsigned char *mask = calloc(c->C.bytes, 1);
    ASSERT(mask);
    for (int j = 0; j < c->n; j++)
        for (int i = 0; i < c->m; i++) {
            int gi = c->ic - 1 + i, gj = c->jc - 1 + j;
            unsigned char *pg = mat_at(&c->C, Cg, dt, gi, gj, myrow, mycol);
            if (!pg) continue;
            unsigned char *pr = mat_at(&c->C, Cr, dt, gi, gj, myrow, mycol);
            memset(mask + (pg - Cg), 1, es);
            for (int part = 0; part < (dt >= 2 ? 2 : 1); part++) {
                double g = part_of(dt, pg, part), r = part_of(dt, pr, part);
                ASSERT_MSG(isfinite(g),
                           "case %d (%s %c%c m=%d n=%d k=%d beta=%g): C(%d,%d) = %g "
                           "is not finite%s",
                           case_id, rout_name[dt], c->ta, c->tb, c->m, c->n, c->k, c->beta[0],
                           gi + 1, gj + 1, g, c->nan_c ? " (beta = 0 must not read C)" : "");
                if (c->replicated) {
                    /* the glue handed the call to the reference: the very same bytes */
                    ASSERT_MSG(!memcmp(pg, pr, es), "case %d: replicated call differs", case_id);
                } else {
                    ASSERT_MSG(fabs(g - r) <= tol,
                               "case %d (%s %c%c m=%d n=%d k=%d alpha=%g "
                               "beta=%g): C(%d,%d)[%d] glue %.17g reference %.17g "
                               "(tol %.3g)",
                               case_id, rout_name[dt], c->ta, c->tb, c->m, c->n, c->k, c->alpha[0],
                               c->beta[0], gi + 1, gj + 1, part, g, r, tol);
                }
            }
        }
    for (size_t b = 0; b < c->C.bytes; b++)
        if (!mask[b] && Cg[b] != c->C.buf[b])
            TEST_FAIL_("case %d (%s %c%c m=%d n=%d k=%d): byte %zu of the local C (element %zu, "
                       "outside sub(C)%s) changed",
                       case_id, rout_name[dt], c->ta, c->tb, c->m, c->n, c->k, b, b / es,
                       b >= c->C.bytes - GUARD ? ", guard" : "");
    free(mask);
    free(A0);
    free(B0);
    free(Cg);
    free(Cr);
}

/* ---- grids --------------------------------------------------------------------------------- */

static int cases_per_shape(void) {
    const char *v = getenv("TEST_GLUE_CASES");
    return v ? atoi(v) : 40;
}

/* Random p?gemm_ calls on every grid that fits: the glue and the reference agree. */
TEST(glue_gemm_random) {
    int ncase = 0;
    for (int s = 0; s < NSHAPES; s++) {
        int P = shape_list[s][0], Q = shape_list[s][1];
        if (P * Q > wsize) continue;
        int ctxt = grid_open(P, Q);
        rng_state = 0x1234567ull + (uint64_t)s * 7919 + seed() * 0x9E3779B97F4A7C15ull;
        if (ctxt >= 0) {
            int nprow, npcol, myrow, mycol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
            ASSERT(nprow == P && npcol == Q);
            for (int i = 0; i < cases_per_shape(); i++, ncase++) {
                struct call c;
                make_call(&c, ctxt, P, Q, myrow, mycol, ncase);
                check_call(&c, myrow, mycol, ncase);
                free_call(&c);
            }
            Cblacs_gridexit(ctxt);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (getenv("TEST_GLUE_SHOW")) fprintf(stderr, "    rank %d: %d cases\n", wrank, ncase);
}

/* ---- bad arguments ---------------------------------------------------------------------------
 * The program's own PB_Cabort and PB_Cwarn (defined below: this program is "the program",
 * and the executable exports them) record what they are told; the glue must report exactly
 * what the reference reports (same routine name, info code, warnings with their text and
 * line numbers), and write nothing. */

/* A valid base call, then one mutation; both routines must report the same. */
struct mutation {
    const char *what;
    void (*apply)(struct call *c, int P, int Q);
};
static void m_transa(struct call *c, int P, int Q) { c->ta = 'X'; }
static void m_transb(struct call *c, int P, int Q) { c->tb = 'q'; }
static void m_both_trans(struct call *c, int P, int Q) { c->ta = 'x', c->tb = 'y'; }
static void m_m(struct call *c, int P, int Q) { c->m = -1; }
static void m_n(struct call *c, int P, int Q) { c->n = -3; }
static void m_k(struct call *c, int P, int Q) { c->k = -2; }
static void m_ia(struct call *c, int P, int Q) { c->ia = 0; }
static void m_jb(struct call *c, int P, int Q) { c->jb = -1; }
static void m_icjc(struct call *c, int P, int Q) { c->ic = 0, c->jc = 0; }
static void m_dtype(struct call *c, int P, int Q) { c->A.desc[0] = 7; }
static void m_ctxt_b(struct call *c, int P, int Q) { c->B.desc[1] += 17; }
static void m_ctxt_a(struct call *c, int P, int Q) { c->A.desc[1] = -1; }
static void m_mb(struct call *c, int P, int Q) { c->A.desc[c->A.dlen == 9 ? 4 : 6] = 0; }
static void m_nb_c(struct call *c, int P, int Q) { c->C.desc[c->C.dlen == 9 ? 5 : 7] = -1; }
static void m_rsrc(struct call *c, int P, int Q) { c->B.desc[c->B.dlen == 9 ? 6 : 8] = P; }
static void m_csrc(struct call *c, int P, int Q) { c->C.desc[c->C.dlen == 9 ? 7 : 9] = -2; }
static void m_m_(struct call *c, int P, int Q) { c->A.desc[2] = 0; }
static void m_bounds(struct call *c, int P, int Q) { c->ic = c->C.desc[2]; }
static void m_bounds_j(struct call *c, int P, int Q) { c->jb = c->B.desc[3] + 1; }
static void m_lld0(struct call *c, int P, int Q) { c->B.desc[c->B.dlen - 1] = 0; }
static void m_trans_lld(struct call *c, int P, int Q) { c->ta = 'Z', c->C.desc[c->C.dlen - 1] = 0; }
static void m_dtype_m(struct call *c, int P, int Q) { c->A.desc[0] = 3, c->m = -1; }
static void m_empty_lld(struct call *c, int P, int Q) { c->m = 0, c->C.desc[c->C.dlen - 1] = 0; }
static void m_empty_n_(struct call *c, int P, int Q) { c->k = 0, c->A.desc[3] = -1; }
/* LLD_A one below the local rows: a per-process check (applied only where every process of
 * the grid holds >= 2 rows and some columns of A, so all report it) */
static void m_lld_small(struct call *c, int P, int Q) { c->A.desc[c->A.dlen - 1] = c->A.lr - 1; }
static void m_many(struct call *c, int P, int Q) {
    c->B.desc[c->B.dlen == 9 ? 4 : 6] = 0, c->C.desc[c->C.dlen == 9 ? 6 : 8] = 99, c->ja = 0;
}
static const struct mutation mutations[] = {
    {"TRANSA", m_transa},
    {"TRANSB", m_transb},
    {"both TRANS", m_both_trans},
    {"M < 0", m_m},
    {"N < 0", m_n},
    {"K < 0", m_k},
    {"IA = 0", m_ia},
    {"JB < 0", m_jb},
    {"IC = JC = 0", m_icjc},
    {"DTYPE_A", m_dtype},
    {"CTXT_B", m_ctxt_b},
    {"CTXT_A = -1", m_ctxt_a},
    {"MB_A = 0", m_mb},
    {"NB_C < 0", m_nb_c},
    {"RSRC_B = P", m_rsrc},
    {"CSRC_C = -2", m_csrc},
    {"M_A = 0", m_m_},
    {"IC + M > M_C", m_bounds},
    {"JB + N > N_B", m_bounds_j},
    {"LLD_B = 0", m_lld0},
    {"TRANSA + LLD_C", m_trans_lld},
    {"DTYPE_A + M", m_dtype_m},
    {"M = 0, LLD_C = 0", m_empty_lld},
    {"K = 0, N_A < 0", m_empty_n_},
    {"three at once", m_many},
    {"LLD_A < local rows", m_lld_small},
};
enum { NMUT = sizeof mutations / sizeof mutations[0], NCOMBO = 30 };

/* Every bad argument is reported as the reference PBLAS reports it, and nothing is written. */
TEST(glue_gemm_errors) {
    for (int s = 0; s < NSHAPES; s++) {
        int P = shape_list[s][0], Q = shape_list[s][1];
        if (P * Q > wsize) continue;
        int ctxt = grid_open(P, Q);
        MPI_Comm gcomm; /* the grid's processes (row-major: the first P * Q ranks) */
        MPI_Comm_split(MPI_COMM_WORLD, wrank < P * Q ? 0 : MPI_UNDEFINED, wrank, &gcomm);
        if (ctxt >= 0) {
            int nprow, npcol, myrow, mycol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
            /* the single mutations, then random combinations of two or three */
            for (int t = 0; t < NMUT + NCOMBO; t++) {
                int mu = t < NMUT ? t : -1;
                rng_state = 0xABCDEFull + (uint64_t)(s * 1000 + t);
                struct call c;
                do {
                    make_call(&c, ctxt, P, Q, myrow, mycol, 1000 + t);
                    if (c.m > 0 && c.n > 0 && c.k > 0 && !c.replicated) break;
                    free_call(&c);
                } while (1);
                char what[128] = "";
                if (mu >= 0 && mutations[mu].apply == m_lld_small) {
                    /* every process of the grid must find it, or some would go on alone */
                    int can = c.A.lr >= 2 && c.A.lc > 0, all;
                    MPI_Allreduce(&can, &all, 1, MPI_INT, MPI_MIN, gcomm);
                    if (!all) {
                        free_call(&c);
                        continue;
                    }
                }
                if (mu >= 0) {
                    mutations[mu].apply(&c, P, Q);
                    snprintf(what, sizeof what, "%s", mutations[mu].what);
                } else {
                    int nm = rint_(2, 3);
                    for (int i = 0; i < nm; i++) {
                        int x = rint_(0, NMUT - 2); /* not the per-process LLD one */
                        mutations[x].apply(&c, P, Q);
                        size_t l = strlen(what);
                        snprintf(what + l, sizeof what - l, "%s%s", i ? " + " : "",
                                 mutations[x].what);
                    }
                }
                unsigned char *Cg = malloc(c.C.bytes), *Cr = malloc(c.C.bytes);
                memcpy(Cg, c.C.buf, c.C.bytes);
                memcpy(Cr, c.C.buf, c.C.bytes);
                tess_scalapack_counters_t before, after;
                tess_scalapack_counters("gemm", &before);
                rec_reset();
                run(glue_fn[c.dt], &c, c.A.buf, c.B.buf, Cg);
                __typeof__(rec) got = rec;
                tess_scalapack_counters("gemm", &after);
                rec_reset();
                run(ref_fn[c.dt], &c, c.A.buf, c.B.buf, Cr);
                ASSERT_MSG(rec.aborts == 1, "%s: the reference did not report it", what);
                ASSERT_MSG(got.aborts == 1 && got.info == rec.info && !strcmp(got.rout, rec.rout) &&
                               got.ctxt == rec.ctxt,
                           "%s (%dx%d): glue reported %d x info %d in %s (ctxt %d), the reference "
                           "info %d in %s (ctxt %d)",
                           what, P, Q, got.aborts, got.info, got.rout, got.ctxt, rec.info, rec.rout,
                           rec.ctxt);
                ASSERT_MSG(!strcmp(got.warn, rec.warn),
                           "%s: warnings differ:\nglue:\n%sreference:\n%s", what, got.warn,
                           rec.warn);
                ASSERT_MSG(!memcmp(Cg, c.C.buf, c.C.bytes), "%s: the glue wrote into C", what);
                ASSERT_EQ(after.arg_errors - before.arg_errors, 1);
                ASSERT_EQ(after.tessera_calls + after.reference_calls,
                          before.tessera_calls + before.reference_calls);
                if (wrank == 0 && s == 0 && getenv("TEST_GLUE_SHOW"))
                    fprintf(stderr, "    %-40s info %6d %s\n", what, rec.info, rec.rout);
                free(Cg);
                free(Cr);
                free_call(&c);
            }
            Cblacs_gridexit(ctxt);
        }
        if (gcomm != MPI_COMM_NULL) MPI_Comm_free(&gcomm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* The recorded warnings without their context handles (a local handle): "line|rout|text\n". */
static void warn_texts(const char *in, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = in; *p && o + 1 < len;) {
        const char *bar = strchr(p, '|'), *nl = strchr(p, '\n');
        if (!nl) nl = p + strlen(p);
        if (bar && bar < nl) p = bar + 1;
        size_t n = (size_t)(nl - p) + (*nl ? 1 : 0);
        if (n > len - 1 - o) n = len - 1 - o;
        memcpy(out + o, p, n);
        o += n;
        out[o] = '\0';
        p = *nl ? nl + 1 : nl;
    }
}

/* Global arguments that differ on one process of the context (forced to tessera): the glue
 * sees it in its agreement and must report it as PBLAS reports a bad argument, on every
 * process alike (same routine, info code and PB_Cwarn texts), without computing anything
 * or calling the reference routine (whose processes would wait for each other forever in
 * BLACS with different block sizes); then the same call with good arguments is right.
 * Expected codes: PBLAS's, the smallest over the differing arguments: ALPHA is argument 6
 * (-6), DESCA's MB_ entry 7 of argument 10 (-1007; a 9-entry DESCA reads as the 11-entry
 * form, as PBLAS reads it, so its MB is IMB_ too: entry 5, -1005, one warning more),
 * DESCC's NB_ entry 8 of argument 19 (-1908; 9-entry: INB_, -1906). Each call runs under alarm(60), so a hang ends the test. Forced mode, 2 or more
 * ranks only (unforced, these small calls go to the reference, which hangs as PBLAS does). */
TEST(glue_gemm_args_differ) {
    if (strcmp(mode(), "force") || wsize < 2) {
        if (wrank == 0) fprintf(stderr, "    (forced mode and 2+ ranks only)\n");
        return;
    }
    static const struct {
        const char *what;
        int mb_a, alpha, nb_c; /* which differ on the odd process */
        int info, nwarn;
        const char *first; /* the first warning's text starts so */
    } kinds[] = {
        {"MB_A = 16 on one process", 1, 0, 0, -1007, 1, "Illegal DESCA[MB_]"},
        {"ALPHA on one process", 0, 1, 0, -6, 1, "Illegal ALPHA"},
        {"NB_C on one process", 0, 0, 1, -1908, 1, "Illegal DESCC[NB_]"},
        {"MB_A, ALPHA and NB_C", 1, 1, 1, -6, 3, "Illegal ALPHA"},
    };
    int ncase = 0;
    for (int s = 0; s < NSHAPES; s++) {
        int P = shape_list[s][0], Q = shape_list[s][1];
        if (P * Q > wsize || P * Q < 2) continue;
        int ctxt = grid_open(P, Q);
        MPI_Comm gcomm;
        MPI_Comm_split(MPI_COMM_WORLD, wrank < P * Q ? 0 : MPI_UNDEFINED, wrank, &gcomm);
        if (ctxt >= 0) {
            int nprow, npcol, myrow, mycol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
            const int odd = (s + 1) % (P * Q); /* the process that differs (its grid rank) */
            for (size_t t = 0; t < sizeof kinds / sizeof kinds[0]; t++, ncase++) {
                rng_state = 0x5EED5ull + (uint64_t)(s * 100 + t);
                struct call c;
                do {
                    make_call(&c, ctxt, P, Q, myrow, mycol, 7000 + ncase);
                    if (c.m > 0 && c.n > 0 && c.k > 0 && !c.replicated &&
                        (c.alpha[0] != 0 || c.alpha[1] != 0))
                        break;
                    free_call(&c);
                } while (1);
                int saved_a[11], saved_c[11];
                memcpy(saved_a, c.A.desc, sizeof saved_a);
                memcpy(saved_c, c.C.desc, sizeof saved_c);
                double saved_alpha = c.alpha[0];
                if (wrank == odd) {
                    if (kinds[t].mb_a) {
                        /* MB_ = 16 (9-entry form: IMB_ too); LLD_ raised where 16-row blocks
                         * give this process more rows, so its own checks still pass */
                        c.A.desc[c.A.dlen == 9 ? 4 : 6] = 16;
                        struct dim r = c.A.rows;
                        r.nb = 16;
                        if (c.A.dlen == 9) r.ib = 16;
                        int lr = count_on(&r, myrow);
                        if (lr > c.A.desc[c.A.dlen - 1]) c.A.desc[c.A.dlen - 1] = lr;
                    }
                    if (kinds[t].alpha) c.alpha[0] += 1.5; /* never 0: no quick return */
                    if (kinds[t].nb_c) c.C.desc[c.C.dlen == 9 ? 5 : 7] += 1;
                }
                unsigned char *C0 = malloc(c.C.bytes), *Cg = malloc(c.C.bytes);
                ASSERT(C0 && Cg);
                memcpy(C0, c.C.buf, c.C.bytes);
                memcpy(Cg, c.C.buf, c.C.bytes);
                tess_scalapack_counters_t before, after;
                ASSERT_OK(tess_scalapack_counters("gemm", &before));
                rec_reset();
                alarm(60); /* a process left waiting ends the test */
                run(glue_fn[c.dt], &c, c.A.buf, c.B.buf, Cg);
                alarm(0);
                ASSERT_OK(tess_scalapack_counters("gemm", &after));
                char what[96];
                snprintf(what, sizeof what, "%s (%dx%d, process %d)", kinds[t].what, P, Q, odd);
                ASSERT_MSG(rec.aborts == 1, "%s: %d PB_Cabort calls on rank %d, expected 1", what,
                           rec.aborts, wrank);
                /* 9-entry forms: IMB_ (INB_) differs with MB_ (NB_) */
                int info = kinds[t].info, nwarn = kinds[t].nwarn;
                const char *first_warn = kinds[t].first;
                if (kinds[t].mb_a && c.A.dlen == 9) {
                    nwarn++;
                    if (info == -1007) info = -1005, first_warn = "Illegal DESCA[IMB_]";
                }
                if (kinds[t].nb_c && c.C.dlen == 9) {
                    nwarn++;
                    if (info == -1908) info = -1906, first_warn = "Illegal DESCC[INB_]";
                }
                ASSERT_MSG(rec.info == info && !strcmp(rec.rout, rout_name[c.dt]) &&
                               rec.ctxt == ctxt,
                           "%s: rank %d: info %d in %s (ctxt %d), expected %d in %s (ctxt %d)",
                           what, wrank, rec.info, rec.rout, rec.ctxt, info, rout_name[c.dt], ctxt);
                /* the same warnings, in the same order, on every process */
                char texts[4096], first[4096];
                warn_texts(rec.warn, texts, sizeof texts);
                memcpy(first, texts, sizeof first);
                MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, gcomm);
                ASSERT_MSG(!strcmp(texts, first), "%s: rank %d warned\n%sprocess 0 warned\n%s",
                           what, wrank, texts, first);
                int lines = 0;
                for (const char *p = texts; *p; p++) lines += *p == '\n';
                const char *text1 = strchr(texts, '|') ? strchr(strchr(texts, '|') + 1, '|') : NULL;
                ASSERT_MSG(lines == nwarn && text1 &&
                               !strncmp(text1 + 1, first_warn, strlen(first_warn)),
                           "%s: rank %d warned\n%s(expected %d warnings, the first \"%s...\")",
                           what, wrank, texts, nwarn, first_warn);
                ASSERT_MSG(!memcmp(Cg, C0, c.C.bytes), "%s: the glue wrote into C on rank %d", what,
                           wrank);
                ASSERT_EQ(after.arg_errors - before.arg_errors, 1);
                ASSERT_EQ(after.tessera_calls + after.reference_calls,
                          before.tessera_calls + before.reference_calls);
                if (wrank == 0 && s == 1 && getenv("TEST_GLUE_SHOW"))
                    fprintf(stderr, "    %s: info %d\n%s", what, rec.info, texts);
                free(C0);
                free(Cg);
                /* the next call, the same on every process, is right */
                memcpy(c.A.desc, saved_a, sizeof saved_a);
                memcpy(c.C.desc, saved_c, sizeof saved_c);
                c.alpha[0] = saved_alpha;
                alarm(60);
                check_call(&c, myrow, mycol, 7000 + ncase);
                alarm(0);
                free_call(&c);
            }
            Cblacs_gridexit(ctxt);
        }
        if (gcomm != MPI_COMM_NULL) MPI_Comm_free(&gcomm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* A context freed and its handle reused by a grid of another shape: the glue must not use
 * the grid it built for the old one (the calls would then be wrong or hang). */
TEST(glue_context_reuse) {
    int shapes[4][2] = {{1, wsize}, {wsize, 1}, {1, 1}, {1, wsize}};
    if (wsize >= 4) shapes[2][0] = 2, shapes[2][1] = wsize / 2;
    int prev = -2;
    for (int r = 0; r < 8; r++) {
        int P = shapes[r % 4][0], Q = shapes[r % 4][1];
        int ctxt = grid_open(P, Q);
        if (ctxt >= 0) {
            int nprow, npcol, myrow, mycol;
            Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
            if (r > 0 && wrank == 0 && getenv("TEST_GLUE_SHOW"))
                fprintf(stderr, "    context %d (previous %d), %d x %d\n", ctxt, prev, P, Q);
            prev = ctxt;
            rng_state = 0x5151ull + (uint64_t)r;
            for (int i = 0; i < 3; i++) {
                struct call c;
                make_call(&c, ctxt, P, Q, myrow, mycol, 5000 + r * 10 + i);
                check_call(&c, myrow, mycol, 5000 + r * 10 + i);
                free_call(&c);
            }
            Cblacs_gridexit(ctxt);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* The counters' names: per routine, per kind, everything; bad names refused. */
TEST(glue_counters_api) {
    tess_scalapack_counters_t all, g, d, dd, z;
    ASSERT_OK(tess_scalapack_counters(NULL, &all));
    ASSERT_OK(tess_scalapack_counters("gemm", &g));
    ASSERT_OK(tess_scalapack_counters("PDGEMM", &d));
    ASSERT_OK(tess_scalapack_counters("pdgemm_", &dd));
    ASSERT_OK(tess_scalapack_counters("pzherk", &z));
    ASSERT_EQ(d.tessera_calls, dd.tessera_calls);
    ASSERT(g.tessera_calls >= d.tessera_calls);
    ASSERT_EQ(all.tessera_calls, g.tessera_calls); /* this program calls p?gemm_ only */
    ASSERT(g.tessera_calls + g.reference_calls + g.quick_returns > 0);
    if (!strcmp(mode(), "force"))
        ASSERT_GT(g.tessera_calls, 0);
    else
        ASSERT_EQ(g.tessera_calls, 0);
    ASSERT_EQ(tess_scalapack_counters("pdherk", &z), -1);
    ASSERT_EQ(tess_scalapack_counters("pxgemm", &z), -1);
    ASSERT_EQ(tess_scalapack_counters("gemm", NULL), -1);
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
    static const char *const names[4] = {"psgemm_", "pdgemm_", "pcgemm_", "pzgemm_"};
    for (int d = 0; d < 4; d++) {
        void *f = dlsym(lib, names[d]);
        memcpy(&ref_fn[d], &f, sizeof f);
        /* and the program's p?gemm_ is the glue's */
        Dl_info gi_;
        void *g = dlsym(RTLD_DEFAULT, names[d]);
        if (!f || !g || f == g || !dladdr(g, &gi_) || !strstr(gi_.dli_fname, "tessera_scalapack")) {
            fprintf(stderr, "rank %d: %s: the glue is not in front of %s\n", wrank, names[d],
                    libname);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (wrank == 0) fprintf(stderr, "mode %s, %d ranks, reference %s\n", mode(), wsize, libname);
    int rc = test_main_(argc, argv);
    Cblacs_exit(1);
    MPI_Finalize();
    return rc;
}
