/* tests/test_bcyclic.c: the block-cyclic index math and the descriptors of comm/bcyclic.c,
 * without MPI: numroc, indxg2p, indxg2l, indxl2g (and first blocks IMB/INB) against a
 * brute-force walk of the map and against ScaLAPACK's own formulas; submatrix coverage and
 * submatrix layouts against brute force; descriptor conversion and the validation messages
 * and PBLAS info codes.
 */
#include "harness.h"
#include "../comm/comm.h"

/* The map by definition: walk the blocks in order, dealing them to processes
 * src, src + 1, ... mod np; each process stores its indices in order. */
struct brute {
    int64_t n;
    int owner[512];
    int64_t local[512];
    int64_t count[16];
};

static void brute_map(const struct tess__comm_bc *d, struct brute *b) {
    memset(b, 0, sizeof *b);
    b->n = d->n;
    int64_t g = 0, blk = 0;
    while (g < d->n) {
        int64_t size = blk == 0 ? d->ib : d->nb;
        int p = (int)((d->src + blk) % d->np);
        for (int64_t i = 0; i < size && g < d->n; i++, g++) {
            b->owner[g] = p;
            b->local[g] = b->count[p]++;
        }
        blk++;
    }
}

/* ScaLAPACK's TOOLS functions, transcribed (1-based indices), for ib == nb. */
static int64_t sl_numroc(int64_t n, int64_t nb, int iproc, int isrc, int nprocs) {
    int64_t mydist = (nprocs + iproc - isrc) % nprocs;
    int64_t nblocks = n / nb;
    int64_t r = (nblocks / nprocs) * nb;
    int64_t extra = nblocks % nprocs;
    if (mydist < extra)
        r += nb;
    else if (mydist == extra)
        r += n % nb;
    return r;
}
static int sl_indxg2p(int64_t g, int64_t nb, int isrc, int nprocs) {
    return (int)((isrc + (g - 1) / nb) % nprocs);
}
static int64_t sl_indxg2l(int64_t g, int64_t nb, int nprocs) {
    return nb * ((g - 1) / (nb * nprocs)) + (g - 1) % nb + 1;
}
static int64_t sl_indxl2g(int64_t l, int64_t nb, int iproc, int isrc, int nprocs) {
    return nprocs * nb * ((l - 1) / nb) + (l - 1) % nb + ((nprocs + iproc - isrc) % nprocs) * nb +
           1;
}

static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 31, 64, 100, 257};
static const int64_t nbs[] = {1, 2, 3, 4, 7, 8, 64, 300};
static const int nps[] = {1, 2, 3, 4, 5, 7};
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Calls f on every layout of the sweep: every n, nb, np, src, and first blocks ib = nb,
 * 1, nb / 2 + 1 and nb + 3 (larger than a block). */
static void sweep(void (*f)(const struct tess__comm_bc *d)) {
    for (int a = 0; a < LEN(ns); a++)
        for (int b = 0; b < LEN(nbs); b++)
            for (int c = 0; c < LEN(nps); c++)
                for (int src = 0; src < nps[c]; src++) {
                    int64_t ibs[4] = {nbs[b], 1, nbs[b] / 2 + 1, nbs[b] + 3};
                    for (int k = 0; k < 4; k++) {
                        struct tess__comm_bc d = {
                            .n = ns[a], .ib = ibs[k], .nb = nbs[b], .src = src, .np = nps[c]};
                        f(&d);
                    }
                }
}

#define CHECK_EQ_D(d, a, b)                                                                      \
    ASSERT_MSG((a) == (b), "%s = %lld, expected %lld (n %lld ib %lld nb %lld src %d np %d)", #a, \
               (long long)(a), (long long)(b), (long long)(d)->n, (long long)(d)->ib,            \
               (long long)(d)->nb, (d)->src, (d)->np)

static void check_point_maps(const struct tess__comm_bc *d) {
    static struct brute b;
    brute_map(d, &b);
    for (int p = 0; p < d->np; p++) CHECK_EQ_D(d, tess__comm_bc_numroc(d, p), b.count[p]);
    for (int64_t g = 0; g < d->n; g++) {
        CHECK_EQ_D(d, tess__comm_bc_g2p(d, g), b.owner[g]);
        CHECK_EQ_D(d, tess__comm_bc_g2l(d, g), b.local[g]);
        CHECK_EQ_D(d, tess__comm_bc_l2g(d, b.owner[g], b.local[g]), g);
    }
    /* prefix counts: the number of indices < x each process holds */
    int64_t seen[16] = {0};
    for (int64_t x = 0; x <= d->n; x++) {
        for (int p = 0; p < d->np; p++) CHECK_EQ_D(d, tess__comm_bc_count(d, x, p), seen[p]);
        if (x < d->n) seen[b.owner[x]]++;
    }
}

/* With ib = nb the functions are ScaLAPACK's numroc, indxg2p, indxg2l, indxl2g. */
static void check_scalapack(const struct tess__comm_bc *d) {
    if (d->ib != d->nb) return;
    for (int p = 0; p < d->np; p++) {
        CHECK_EQ_D(d, tess__comm_bc_numroc(d, p), sl_numroc(d->n, d->nb, p, d->src, d->np));
        for (int64_t l = 0; l < tess__comm_bc_numroc(d, p); l++)
            CHECK_EQ_D(d, tess__comm_bc_l2g(d, p, l) + 1,
                       sl_indxl2g(l + 1, d->nb, p, d->src, d->np));
    }
    for (int64_t g = 0; g < d->n; g++) {
        CHECK_EQ_D(d, tess__comm_bc_g2p(d, g), sl_indxg2p(g + 1, d->nb, d->src, d->np));
        CHECK_EQ_D(d, tess__comm_bc_g2l(d, g) + 1, sl_indxg2l(g + 1, d->nb, d->np));
    }
}

/* Blocks: they tile [0, n) in order, owners and local starts agree with the point maps. */
static void check_blocks(const struct tess__comm_bc *d) {
    int64_t nblk = tess__comm_bc_nblocks(d), next = 0;
    for (int64_t k = 0; k < nblk; k++) {
        int64_t g0, len, l0;
        int owner;
        tess__comm_bc_block(d, k, &g0, &len, &owner, &l0);
        CHECK_EQ_D(d, g0, next);
        ASSERT(len >= 1);
        CHECK_EQ_D(d, owner, tess__comm_bc_g2p(d, g0));
        CHECK_EQ_D(d, owner, tess__comm_bc_g2p(d, g0 + len - 1));
        CHECK_EQ_D(d, l0, tess__comm_bc_g2l(d, g0));
        if (g0 + len < d->n)
            CHECK_EQ_D(d, tess__comm_bc_g2p(d, g0 + len) != owner || d->np == 1, 1);
        next = g0 + len;
    }
    CHECK_EQ_D(d, next, d->n);
}

/* Every global range [i0, i0 + len): the local indices a process holds form the range
 * tess__comm_bc_range gives, and the submatrix layout maps g' to the same owner at local
 * index offset + g2l'(g'). All ranges for small n, a sample for large n. */
static void check_ranges(const struct tess__comm_bc *d) {
    static struct brute b;
    brute_map(d, &b);
    int64_t step = d->n <= 31 ? 1 : 29;
    for (int64_t i0 = 0; i0 <= d->n; i0 += step)
        for (int64_t len = 0; i0 + len <= d->n; len += step) {
            for (int p = 0; p < d->np; p++) {
                int64_t l0, cnt, lo = -1, hi = -1, k = 0;
                tess__comm_bc_range(d, i0, len, p, &l0, &cnt);
                for (int64_t g = i0; g < i0 + len; g++)
                    if (b.owner[g] == p) {
                        if (lo < 0) lo = b.local[g];
                        ASSERT_EQ(b.local[g], lo + k); /* contiguous */
                        hi = b.local[g] + 1;
                        k++;
                    }
                CHECK_EQ_D(d, cnt, k);
                if (k > 0) {
                    CHECK_EQ_D(d, l0, lo);
                    CHECK_EQ_D(d, l0 + cnt, hi);
                }
            }
            if (len == 0) continue;
            struct tess__comm_bc s = tess__comm_bc_sub(d, i0, len);
            ASSERT(s.ib >= 1 && s.nb == d->nb && s.np == d->np);
            for (int64_t gs = 0; gs < len; gs++) {
                int p = b.owner[i0 + gs];
                CHECK_EQ_D(d, tess__comm_bc_g2p(&s, gs), p);
                CHECK_EQ_D(d, tess__comm_bc_count(d, i0, p) + tess__comm_bc_g2l(&s, gs),
                           b.local[i0 + gs]);
            }
            for (int p = 0; p < d->np; p++) {
                int64_t l0, cnt;
                tess__comm_bc_range(d, i0, len, p, &l0, &cnt);
                CHECK_EQ_D(d, tess__comm_bc_numroc(&s, p), cnt);
            }
        }
}

/* numroc, indxg2p, indxg2l and indxl2g agree with the brute-force map for every layout of
 * the sweep (nb = 1, nb > n, src != 0, first blocks smaller and larger than nb). */
TEST(point_maps_match_brute_force) { sweep(check_point_maps); }

/* With IMB = MB they are exactly ScaLAPACK's TOOLS functions. */
TEST(point_maps_match_scalapack_formulas) { sweep(check_scalapack); }

/* The blocks tile the dimension in order with the owners and local starts of the map. */
TEST(blocks_tile_the_dimension) { sweep(check_blocks); }

/* Submatrix coverage and submatrix layouts agree with brute force (unaligned ranges). */
TEST(submatrix_ranges_match_brute_force) { sweep(check_ranges); }

/* A worked 2D case: 10 x 9 matrix, 3 x 2 blocks, RSRC = 1, CSRC = 1 on a 2 x 2 grid. */
TEST(two_d_example) {
    struct tess__comm_desc d;
    tess__comm_desc_init(&d, 10, 9, 3, 2, 1, 1, 6);
    struct tess__comm_bc r = tess__comm_desc_rows(&d, 2), c = tess__comm_desc_cols(&d, 2);
    /* rows: blocks [0,3) row 1, [3,6) row 0, [6,9) row 1, [9,10) row 0 */
    ASSERT_EQ(tess__comm_bc_numroc(&r, 1), 6);
    ASSERT_EQ(tess__comm_bc_numroc(&r, 0), 4);
    ASSERT_EQ(tess__comm_bc_g2p(&r, 9), 0);
    ASSERT_EQ(tess__comm_bc_g2l(&r, 9), 3);
    ASSERT_EQ(tess__comm_bc_g2l(&r, 7), 4);
    /* cols: blocks [0,2) col 1, [2,4) col 0, [4,6) col 1, [6,8) col 0, [8,9) col 1 */
    ASSERT_EQ(tess__comm_bc_numroc(&c, 1), 5);
    ASSERT_EQ(tess__comm_bc_numroc(&c, 0), 4);
    ASSERT_EQ(tess__comm_bc_l2g(&c, 1, 4), 8);
    /* sub(A) = A(4:8, 3:7) (1-based): rows [3, 8) start in row 0's first block */
    int64_t l0, cnt;
    tess__comm_bc_range(&r, 3, 5, 0, &l0, &cnt);
    ASSERT_EQ(l0, 0);
    ASSERT_EQ(cnt, 3);
    tess__comm_bc_range(&r, 3, 5, 1, &l0, &cnt);
    ASSERT_EQ(l0, 3);
    ASSERT_EQ(cnt, 2);
    struct tess__comm_bc s = tess__comm_bc_sub(&c, 2, 5); /* cols [2, 7): starts at a block */
    ASSERT_EQ(s.ib, 2);
    ASSERT_EQ(s.src, 0);
    s = tess__comm_bc_sub(&c, 3, 5); /* cols [3, 8): one column left in the first block */
    ASSERT_EQ(s.ib, 1);
    ASSERT_EQ(s.src, 0);
}

/* Both ScaLAPACK forms convert, round-trip, and a bad DTYPE_ is named. */
TEST(descriptor_forms) {
    int d9[9] = {1, 7, 100, 50, 8, 4, 1, 0, 60};
    struct tess__comm_desc d;
    ASSERT_OK(tess__comm_desc_from_scalapack(d9, "A", &d));
    ASSERT_EQ(d.m, 100);
    ASSERT_EQ(d.n, 50);
    ASSERT_EQ(d.imb, 8);
    ASSERT_EQ(d.inb, 4);
    ASSERT_EQ(d.mb, 8);
    ASSERT_EQ(d.nb, 4);
    ASSERT_EQ(d.rsrc, 1);
    ASSERT_EQ(d.csrc, 0);
    ASSERT_EQ(d.lld, 60);
    ASSERT_EQ(d.ctxt, 7);
    int out[11];
    ASSERT_EQ(tess__comm_desc_to_scalapack(&d, out), 9);
    for (int i = 0; i < 9; i++) ASSERT_EQ(out[i], d9[i]);

    int d11[11] = {2, 7, 100, 50, 3, 5, 8, 4, 1, 2, 60};
    ASSERT_OK(tess__comm_desc_from_scalapack(d11, "B", &d));
    ASSERT_EQ(d.imb, 3);
    ASSERT_EQ(d.inb, 5);
    ASSERT_EQ(d.mb, 8);
    ASSERT_EQ(d.nb, 4);
    ASSERT_EQ(d.rsrc, 1);
    ASSERT_EQ(d.csrc, 2);
    ASSERT_EQ(d.lld, 60);
    ASSERT_EQ(tess__comm_desc_to_scalapack(&d, out), 11);
    for (int i = 0; i < 11; i++) ASSERT_EQ(out[i], d11[i]);

    int bad[9] = {3, 0, 10, 10, 2, 2, 0, 0, 10};
    ASSERT_EQ(tess__comm_desc_from_scalapack(bad, "C", &d), TESS_EINVAL);
    ASSERT_MSG(strstr(tess_last_error(), "DESCC(1) = DTYPE_ = 3"), "got '%s'", tess_last_error());
}

static const struct tess__comm_coords grid22_00 = {2, 2, 0, 0};

/* Expect desc_check to fail with status st, a message starting with msg and info. */
#define EXPECT_CHECK(st, msg, info_, d, at, ia, ja, m, n, pos)                      \
    do {                                                                            \
        int info = 12345;                                                           \
        ASSERT_EQ(tess__comm_desc_check(d, "A", at, ia, ja, m, n, pos, &info), st); \
        ASSERT_MSG(strncmp(tess_last_error(), msg, strlen(msg)) == 0,               \
                   "message '%s', expected '%s...'", tess_last_error(), msg);       \
        ASSERT_EQ(info, info_);                                                     \
    } while (0)

/* Each descriptor entry is named in the caller's numbering (9- or 11-entry form); info is
 * PBLAS's code (11-entry numbering, the smallest failing position). */
TEST(descriptor_messages) {
    struct tess__comm_desc d;
    int info = 1;
    tess__comm_desc_init(&d, 10, 10, 3, 3, 0, 0, 6);
    ASSERT_OK(tess__comm_desc_check(&d, "A", &grid22_00, 0, 0, 10, 10, NULL, &info));
    ASSERT_EQ(info, 0);

    d.mb = d.imb = 0; /* 9-entry form: MB_ is DESCA(5); PBLAS sees IMB_ first: -505 */
    EXPECT_CHECK(TESS_EINVAL, "DESCA(5) = MB_ = 0 must be >= 1", -505, &d, &grid22_00, 0, 0, 10, 10,
                 NULL);
    tess__comm_desc_init(&d, 10, 10, 3, 0, 0, 0, 6);
    EXPECT_CHECK(TESS_EINVAL, "DESCA(6) = NB_ = 0 must be >= 1", -506, &d, &grid22_00, 0, 0, 10, 10,
                 NULL);
    d.dtype = TESS__DESC_BLOCK_CYCLIC_2D_INB; /* 11-entry form: INB_ = DESCA(6) */
    d.inb = 2;
    EXPECT_CHECK(TESS_EINVAL, "DESCA(8) = NB_ = 0 must be >= 1", -508, &d, &grid22_00, 0, 0, 10, 10,
                 NULL);
    tess__comm_desc_init(&d, 10, 10, 3, 3, 2, 0, 6);
    EXPECT_CHECK(TESS_EINVAL, "DESCA(7) = RSRC_ = 2 must be >= 0 and < NPROW = 2", -509, &d,
                 &grid22_00, 0, 0, 10, 10, NULL);
    tess__comm_desc_init(&d, 10, 10, 3, 3, 0, -2, 6);
    EXPECT_CHECK(TESS_EINVAL, "DESCA(8) = CSRC_ = -2 must be >= 0 and < NPCOL = 2", -510, &d,
                 &grid22_00, 0, 0, 10, 10, NULL);
    tess__comm_desc_init(&d, 0, 10, 3, 3, 0, 0, 6);
    EXPECT_CHECK(TESS_EINVAL, "DESCA(3) = M_ = 0 must be >= 1", -503, &d, &grid22_00, 0, 0, 10, 10,
                 NULL);

    /* sub(A) out of bounds: rows 6..11 of 10; info names IA (position desc - 2 = 3) */
    tess__comm_desc_init(&d, 10, 10, 3, 3, 0, 0, 6);
    EXPECT_CHECK(TESS_EINVAL, "sub(A) rows IA = 6 .. 11 exceed DESCA(3) = M_ = 10", -3, &d,
                 &grid22_00, 5, 0, 6, 4, NULL);
    EXPECT_CHECK(TESS_EINVAL, "sub(A) columns JA = 2 .. 11 exceed DESCA(4) = N_ = 10", -4, &d,
                 &grid22_00, 0, 1, 4, 10, NULL);
    EXPECT_CHECK(TESS_EINVAL, "IA = 0 must be >= 1", -3, &d, &grid22_00, -1, 0, 4, 4, NULL);
    /* a bad size and a bad entry: the smaller position wins */
    d.mb = d.imb = 0;
    EXPECT_CHECK(TESS_EINVAL, "the number of rows of sub(A) = -1 must be >= 0", -1, &d, &grid22_00,
                 0, 0, -1, 4, NULL);

    /* PBLAS positions of pdgemm's A: M = 3, K = 5, DESCA = 10 */
    struct tess__comm_argpos gemm_a = {.m = 3, .n = 5, .desc = 10};
    EXPECT_CHECK(TESS_EINVAL, "DESCA(5) = MB_ = 0", -1005, &d, &grid22_00, 0, 0, 4, 4, &gemm_a);
    tess__comm_desc_init(&d, 10, 10, 3, 3, 0, 0, 6);
    EXPECT_CHECK(TESS_EINVAL, "JA = -2 must be >= 1", -9, &d, &grid22_00, 0, -3, 4, 4, &gemm_a);

    /* replicated (RSRC_ = -1) is valid ScaLAPACK but not supported: ENOSYS, info 0 */
    tess__comm_desc_init(&d, 10, 10, 3, 3, -1, 0, 10);
    EXPECT_CHECK(TESS_ENOSYS, "DESCA(7) = RSRC_ = -1 (replicated) is not supported", 0, &d,
                 &grid22_00, 0, 0, 4, 4, NULL);
}

/* LLD_ is checked against this process's local rows, so one process can fail alone; a
 * process holding no column of A only needs LLD_ >= 1; an empty sub(A) relaxes M_, N_. */
TEST(descriptor_lld_is_local) {
    /* 10 rows, MB 3 on 2 process rows: row 0 holds 6 rows, row 1 holds 4 */
    struct tess__comm_desc d;
    tess__comm_desc_init(&d, 10, 2, 3, 2, 0, 0, 5);
    struct tess__comm_coords r0 = {2, 2, 0, 0}, r1 = {2, 2, 1, 0}, r0c1 = {2, 2, 0, 1};
    ASSERT_OK(tess__comm_desc_check(&d, "A", &r1, 0, 0, 10, 2, NULL, NULL));
    EXPECT_CHECK(TESS_EINVAL, "DESCA(9) = LLD_ = 5 must be >= 6 (local rows of process (0,0))",
                 -511, &d, &r0, 0, 0, 10, 2, NULL);
    /* 2 columns in one block of process column 0: process column 1 holds none */
    ASSERT_OK(tess__comm_desc_check(&d, "A", &r0c1, 0, 0, 10, 2, NULL, NULL));
    d.lld = 0;
    EXPECT_CHECK(TESS_EINVAL, "DESCA(9) = LLD_ = 0 must be >= 1", -511, &d, &r0c1, 0, 0, 10, 2,
                 NULL);
    /* empty sub(A): M_ = 0 is fine, LLD_ >= 1 suffices */
    tess__comm_desc_init(&d, 0, 0, 3, 3, 0, 0, 1);
    ASSERT_OK(tess__comm_desc_check(&d, "A", &r0, 0, 0, 0, 0, NULL, NULL));
    d.m = -1;
    EXPECT_CHECK(TESS_EINVAL, "DESCA(3) = M_ = -1 must be >= 0", -503, &d, &r0, 0, 0, 0, 0, NULL);
}

/* The default grid shape is as square as possible with nprow <= npcol. */
TEST(grid_shape) {
    static const int want[][3] = {{1, 1, 1}, {2, 1, 2}, {3, 1, 3},  {4, 2, 2}, {6, 2, 3},
                                  {7, 1, 7}, {8, 2, 4}, {12, 3, 4}, {16, 4, 4}};
    for (int i = 0; i < LEN(want); i++) {
        int p, q;
        tess__comm_grid_shape(want[i][0], &p, &q);
        ASSERT_EQ(p, want[i][1]);
        ASSERT_EQ(q, want[i][2]);
    }
}

TEST_MAIN()
