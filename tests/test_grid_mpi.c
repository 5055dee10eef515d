/* tests/test_grid_mpi.c: comm/'s grids, block broadcasts and error agreement under mpirun
 * (registered with 1, 2, 4 and 6 ranks; every test runs every grid shape that fits the
 * ranks it got, in both rank orders). Exits 77 when built without MPI.
 * A failed assertion on any rank aborts the whole job (MPI_Abort), so a failure never
 * leaves the other ranks waiting in a collective; CTest's TIMEOUT is the last resort.
 */
#include <stdio.h>

#ifndef TESS_HAVE_MPI
int main(void) {
    fprintf(stderr, "SKIP: built without MPI\n");
    return 77;
}
#else

#include "harness_mpi.h"
#include "../comm/comm.h"

/* Grid shapes to try with wsize ranks: every P x Q = wsize, and one that leaves a rank
 * outside the grid (P x Q = wsize - 1) when there is more than one rank. */
static int shapes(int out[][2]) {
    int n = 0;
    for (int p = 1; p <= wsize; p++)
        if (wsize % p == 0) {
            out[n][0] = p;
            out[n++][1] = wsize / p;
        }
    if (wsize > 1) {
        out[n][0] = 1;
        out[n++][1] = wsize - 1;
        if (wsize - 1 > 1) {
            out[n][0] = wsize - 1;
            out[n++][1] = 1;
        }
    }
    return n;
}

/* The same value on every rank of comm? */
static int same_everywhere(MPI_Comm comm, long long v) {
    long long lo, hi;
    MPI_Allreduce(&v, &lo, 1, MPI_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(&v, &hi, 1, MPI_LONG_LONG, MPI_MAX, comm);
    return lo == hi;
}

static long long hash(const char *s) {
    unsigned long long h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (long long)(h >> 1);
}

/* Coordinates, rank table and sub-communicators of a grid agree with its definition. */
static void check_grid(const struct tess__comm_grid *g, int P, int Q, char order) {
    ASSERT_EQ(g->at.nprow, P);
    ASSERT_EQ(g->at.npcol, Q);
    if (wrank >= P * Q && order) {
        ASSERT(!tess__comm_grid_in(g));
        ASSERT_EQ(g->at.myrow, -1);
        ASSERT(g->comm == MPI_COMM_NULL && g->row == MPI_COMM_NULL && g->col == MPI_COMM_NULL);
        return;
    }
    ASSERT(tess__comm_grid_in(g));
    if (order == 'R') {
        ASSERT_EQ(g->at.myrow, wrank / Q);
        ASSERT_EQ(g->at.mycol, wrank % Q);
    } else if (order == 'C') {
        ASSERT_EQ(g->at.myrow, wrank % P);
        ASSERT_EQ(g->at.mycol, wrank / P);
    }
    int size, rank;
    MPI_Comm_size(g->comm, &size);
    MPI_Comm_rank(g->comm, &rank);
    ASSERT_EQ(size, P * Q);
    ASSERT_EQ(rank, g->rank);
    ASSERT_EQ(tess__comm_grid_rank(g, g->at.myrow, g->at.mycol), g->rank);
    /* row communicator: Q members, ranked by column, all in my process row */
    MPI_Comm_size(g->row, &size);
    MPI_Comm_rank(g->row, &rank);
    ASSERT_EQ(size, Q);
    ASSERT_EQ(rank, g->at.mycol);
    ASSERT(same_everywhere(g->row, g->at.myrow));
    MPI_Comm_size(g->col, &size);
    MPI_Comm_rank(g->col, &rank);
    ASSERT_EQ(size, P);
    ASSERT_EQ(rank, g->at.myrow);
    ASSERT(same_everywhere(g->col, g->at.mycol));
    /* the coordinates are a permutation of the grid, and the rank table says who is where */
    int mine[3] = {g->at.myrow, g->at.mycol, g->rank}, all[3 * 64];
    ASSERT(P * Q <= 64);
    MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, g->comm);
    int seen[64] = {0};
    for (int k = 0; k < P * Q; k++) {
        int r = all[3 * k], c = all[3 * k + 1];
        ASSERT(r >= 0 && r < P && c >= 0 && c < Q);
        ASSERT_EQ(seen[r + c * P]++, 0);
        ASSERT_EQ(tess__comm_grid_rank(g, r, c), all[3 * k + 2]);
    }
}

/* Grids of every shape that fits, both orders: coordinates, rank table, row and column
 * communicators; ranks beyond P x Q are outside with null communicators. */
TEST(grid_create_every_shape) {
    int sh[16][2], n = shapes(sh);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < 2; o++) {
            char order = o ? 'C' : 'R';
            struct tess__comm_grid g;
            ASSERT_OK(tess__comm_grid_create(MPI_COMM_WORLD, sh[i][0], sh[i][1], order, &g));
            ASSERT_EQ(g.order, order);
            check_grid(&g, sh[i][0], sh[i][1], order);
            tess__comm_grid_destroy(&g);
        }
}

/* nprow = npcol = 0 picks the square-most shape of the communicator's size. */
TEST(grid_default_shape) {
    int p, q;
    tess__comm_grid_shape(wsize, &p, &q);
    struct tess__comm_grid g;
    ASSERT_OK(tess__comm_grid_create(MPI_COMM_WORLD, 0, 0, 'r', &g));
    check_grid(&g, p, q, 'R');
    tess__comm_grid_destroy(&g);
}

/* A grid larger than the communicator, or arguments that differ on one rank: every rank
 * returns TESS_EINVAL (and nobody waits in a split). */
TEST(grid_bad_arguments_fail_everywhere) {
    struct tess__comm_grid g;
    ASSERT_EQ(tess__comm_grid_create(MPI_COMM_WORLD, wsize + 1, 1, 'R', &g), TESS_EINVAL);
    ASSERT_MSG(strstr(tess_last_error(), "needs"), "got '%s'", tess_last_error());
    int q = wrank == wsize - 1 ? 2 : 1; /* the last rank disagrees (all agree with 1 rank) */
    int st = tess__comm_grid_create(MPI_COMM_WORLD, 1, q, 'C', &g);
    if (wsize == 1) {
        ASSERT_EQ(st, TESS_EINVAL); /* 1 x 2 does not fit one rank */
    } else {
        ASSERT_EQ(st, TESS_EINVAL);
        ASSERT_MSG(strstr(tess_last_error(), "differ across ranks"), "got '%s'", tess_last_error());
    }
    ASSERT(g.comm == MPI_COMM_NULL && g.ranks == NULL);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A grid from a BLACS-like description (each rank's own coordinates) in row order, column
 * order and a scrambled placement. */
TEST(grid_from_blacs_description) {
    int sh[16][2], n = shapes(sh);
    for (int i = 0; i < n; i++) {
        int P = sh[i][0], Q = sh[i][1];
        if (P * Q != wsize) continue;
        for (int kind = 0; kind < 3; kind++) {
            /* kind 0: row-major, 1: column-major, 2: rank k sits where row-major puts
             * (k * s + 1) mod wsize, s coprime to wsize */
            int s = 1;
            for (int t = 2; t < wsize + 2; t++) {
                int a = t, b = wsize;
                while (b) {
                    int r = a % b;
                    a = b;
                    b = r;
                }
                if (a == 1) {
                    s = t;
                    break;
                }
            }
            int slot = kind == 2 ? (wrank * s + 1) % wsize : wrank;
            int r = kind == 1 ? slot % P : slot / Q, c = kind == 1 ? slot / P : slot % Q;
            struct tess__comm_grid g;
            ASSERT_OK(tess__comm_grid_from_blacs(MPI_COMM_WORLD, P, Q, r, c, &g));
            ASSERT_EQ(g.at.myrow, r);
            ASSERT_EQ(g.at.mycol, c);
            /* with one process row or column both orders coincide: 'R' */
            if (kind < 2) ASSERT_EQ(g.order, kind && P > 1 && Q > 1 ? 'C' : 'R');
            check_grid(&g, P, Q, 0);
            tess__comm_grid_destroy(&g);
        }
    }
}

/* An inconsistent description on one rank (coordinates taken twice, a different shape)
 * makes every rank fail with the same message. */
TEST(grid_from_blacs_bad_description_fails_everywhere) {
    struct tess__comm_grid g;
    if (wsize > 1) {
        int r = wrank == wsize - 1 ? 0 : wrank; /* the last rank claims rank 0's place */
        int st = tess__comm_grid_from_blacs(MPI_COMM_WORLD, 1, wsize, 0, r, &g);
        ASSERT_EQ(st, TESS_EINVAL);
        ASSERT_MSG(strstr(tess_last_error(), "both claim process (0,0)"), "got '%s'",
                   tess_last_error());
        ASSERT(same_everywhere(MPI_COMM_WORLD, hash(tess_last_error())));
    }
    int q = wrank == wsize - 1 ? wsize + 1 : wsize; /* the last rank has another shape */
    ASSERT_EQ(tess__comm_grid_from_blacs(MPI_COMM_WORLD, 1, q, 0, wrank, &g), TESS_EINVAL);
    ASSERT(same_everywhere(MPI_COMM_WORLD, hash(tess_last_error())));
    ASSERT_EQ(tess__comm_grid_from_blacs(MPI_COMM_WORLD, 1, wsize, 1, wrank, &g), TESS_EINVAL);
    ASSERT_MSG(strstr(tess_last_error(), "outside the 1 x"), "got '%s'", tess_last_error());
}

/* Element (i, j) of rank k's local array: distinct across ranks, positions and bytes. */
static unsigned char elem_byte(int k, int64_t i, int64_t j, size_t b) {
    return (unsigned char)(k * 131 + i * 7 + j * 17 + (int64_t)b * 3 + 1);
}

/* One broadcast of the block at (i0, j0), rows x cols, of every member's ld x ncols local
 * array along axis from root; checks the packed copy on every member that receives one. */
static void bcast_case(const struct tess__comm_grid *g, enum tess__comm_axis axis, int root,
                       int64_t i0, int64_t j0, int64_t rows, int64_t cols, int64_t ld, size_t es,
                       int root_packs, int poll) {
    const int64_t ncols = j0 + cols + 1;
    unsigned char *local = malloc((size_t)(ld * ncols) * es + 1);
    unsigned char *recv = malloc((size_t)(rows * cols) * es + 1);
    ASSERT(local && recv);
    for (int64_t j = 0; j < ncols; j++)
        for (int64_t i = 0; i < ld; i++)
            for (size_t b = 0; b < es; b++)
                local[(size_t)(i + j * ld) * es + b] = elem_byte(g->rank, i, j, b);
    memset(recv, 0xEE, (size_t)(rows * cols) * es + 1);
    const int me = axis == TESS__COMM_ROW ? g->at.mycol : g->at.myrow;
    struct tess__comm_block blk = {.ptr = local + (size_t)(i0 + j0 * ld) * es,
                                   .rows = rows,
                                   .cols = cols,
                                   .ld = ld,
                                   .esize = es};
    void *rbuf = (me == root && !root_packs) ? NULL : recv;
    struct tess__comm_bcast req;
    ASSERT_OK(tess__comm_bcast_start(g, axis, root, &blk, rbuf, &req));
    if (poll) {
        int st;
        while ((st = tess__comm_bcast_test(&req)) == TESS_EAGAIN) {}
        ASSERT_OK(st);
    } else {
        ASSERT_OK(tess__comm_bcast_wait(&req));
    }
    /* the root of my row is process (myrow, root); of my column (root, mycol) */
    int src = axis == TESS__COMM_ROW ? tess__comm_grid_rank(g, g->at.myrow, root)
                                     : tess__comm_grid_rank(g, root, g->at.mycol);
    if (rbuf) {
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < rows; i++)
                for (size_t b = 0; b < es; b++) {
                    unsigned char got = recv[(size_t)(i + j * rows) * es + b];
                    ASSERT_MSG(got == elem_byte(src, i0 + i, j0 + j, b),
                               "axis %d root %d: element (%lld,%lld) byte %zu = %u, want %u",
                               (int)axis, root, (long long)i, (long long)j, b, got,
                               elem_byte(src, i0 + i, j0 + j, b));
                }
        ASSERT_EQ(recv[(size_t)(rows * cols) * es], 0xEE); /* nothing past the block */
    }
    /* the root's own array is untouched */
    for (int64_t j = 0; j < ncols; j++)
        for (int64_t i = 0; i < ld; i++)
            ASSERT_EQ(local[(size_t)(i + j * ld) * es], elem_byte(g->rank, i, j, 0));
    free(local);
    free(recv);
}

/* Strided blocks broadcast along rows and columns from every root deliver the root's
 * bytes, packed, on every grid shape: doubles, complex doubles and bytes, unaligned
 * offsets, a contiguous block (ld = rows), empty blocks, the root sending from its array
 * or packing first, polled or waited. */
TEST(bcast_block_delivers_root_bytes) {
    int sh[16][2], n = shapes(sh);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < 2; o++) {
            struct tess__comm_grid g;
            ASSERT_OK(
                tess__comm_grid_create(MPI_COMM_WORLD, sh[i][0], sh[i][1], o ? 'C' : 'R', &g));
            if (!tess__comm_grid_in(&g)) {
                tess__comm_grid_destroy(&g);
                continue;
            }
            for (int axis = 0; axis < 2; axis++) {
                int nroot = axis == TESS__COMM_ROW ? g.at.npcol : g.at.nprow;
                for (int root = 0; root < nroot; root++) {
                    bcast_case(&g, axis, root, 3, 2, 5, 4, 11, 8, 0, 0);
                    bcast_case(&g, axis, root, 0, 1, 7, 3, 7, 16, 1, 1);
                    bcast_case(&g, axis, root, 1, 0, 13, 9, 20, 1, !(root & 1), 0);
                    bcast_case(&g, axis, root, 2, 2, 0, 3, 5, 8, 0, 0);
                    bcast_case(&g, axis, root, 2, 2, 4, 0, 5, 8, 1, 1);
                }
            }
            tess__comm_grid_destroy(&g);
        }
}

/* A row broadcast and a column broadcast in flight at once (the SUMMA pattern: the A
 * panel along rows, the B panel along columns) both complete with the right bytes. */
TEST(bcast_row_and_column_overlap) {
    int p, q;
    tess__comm_grid_shape(wsize, &p, &q);
    struct tess__comm_grid g;
    ASSERT_OK(tess__comm_grid_create(MPI_COMM_WORLD, p, q, 'C', &g));
    enum { R = 64, C = 48 };
    static double a[R * C], b[R * C], ra[R * C], rb[R * C];
    for (int k = 0; k < R * C; k++) {
        a[k] = g.rank * 1e6 + k;
        b[k] = -(g.rank * 1e6 + k);
    }
    for (int step = 0; step < 3; step++) {
        int rootc = step % q, rootr = step % p;
        struct tess__comm_block ba = {a, R, C, R, sizeof(double)},
                                bb = {b, R, C, R, sizeof(double)};
        struct tess__comm_bcast qa, qb;
        ASSERT_OK(tess__comm_bcast_start(&g, TESS__COMM_ROW, rootc, &ba, ra, &qa));
        ASSERT_OK(tess__comm_bcast_start(&g, TESS__COMM_COL, rootr, &bb, rb, &qb));
        ASSERT_OK(tess__comm_bcast_wait(&qb));
        ASSERT_OK(tess__comm_bcast_wait(&qa));
        int sa = tess__comm_grid_rank(&g, g.at.myrow, rootc);
        int sb = tess__comm_grid_rank(&g, rootr, g.at.mycol);
        for (int k = 0; k < R * C; k++) {
            ASSERT(ra[k] == sa * 1e6 + k);
            ASSERT(rb[k] == -(sb * 1e6 + k));
        }
    }
    tess__comm_grid_destroy(&g);
}

/* Bad broadcast arguments are refused locally before any MPI call. */
TEST(bcast_bad_arguments) {
    struct tess__comm_grid g;
    ASSERT_OK(tess__comm_grid_create(MPI_COMM_WORLD, 1, wsize, 'R', &g));
    double x[4];
    struct tess__comm_block blk = {x, 2, 2, 2, sizeof(double)};
    struct tess__comm_bcast req;
    ASSERT_EQ(tess__comm_bcast_start(&g, TESS__COMM_ROW, wsize, &blk, x, &req), TESS_EINVAL);
    blk.ld = 1;
    ASSERT_EQ(tess__comm_bcast_start(&g, TESS__COMM_ROW, g.at.mycol, &blk, NULL, &req),
              TESS_EINVAL);
    blk.ld = 2;
    blk.rows = (int64_t)1 << 40;
    ASSERT_EQ(tess__comm_bcast_start(&g, TESS__COMM_COL, 0, &blk, x, &req), TESS_EINVAL);
    tess__comm_grid_destroy(&g);
}

/* One rank's descriptor is bad (its LLD_ is one short of its local rows): every rank gets
 * TESS_EINVAL and the same message naming that rank and DESCA(9), then goes on to the next
 * collective without hanging. Tried with each rank as the bad one, on every shape. */
TEST(agree_one_bad_descriptor_fails_everywhere) {
    int sh[16][2], n = shapes(sh);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < 2; o++) {
            struct tess__comm_grid g;
            ASSERT_OK(
                tess__comm_grid_create(MPI_COMM_WORLD, sh[i][0], sh[i][1], o ? 'C' : 'R', &g));
            if (!tess__comm_grid_in(&g)) {
                ASSERT_EQ(tess__comm_agree(&g, TESS_EINVAL), TESS_EINVAL); /* no-op outside */
                tess__comm_grid_destroy(&g);
                continue;
            }
            const int P = g.at.nprow, Q = g.at.npcol;
            for (int bad = 0; bad < P * Q; bad++) {
                /* 37 x 23, 4 x 3 blocks, sources (P-1, Q-1): every process holds some */
                struct tess__comm_desc d;
                tess__comm_desc_init(&d, 37, 23, 4, 3, P - 1, Q - 1, 1);
                struct tess__comm_bc rows = tess__comm_desc_rows(&d, P);
                int64_t np = tess__comm_bc_numroc(&rows, g.at.myrow);
                d.lld = g.rank == bad ? np - 1 : np;
                int st = tess__comm_desc_check(&d, "A", &g.at, 0, 0, 37, 23, NULL, NULL);
                ASSERT_EQ(st, g.rank == bad ? TESS_EINVAL : TESS_OK);
                st = tess__comm_agree(&g, st);
                ASSERT_EQ(st, TESS_EINVAL);
                char want[64];
                snprintf(want, sizeof want, "rank %d: DESCA(9) = LLD_ = ", bad);
                ASSERT_MSG(strncmp(tess_last_error(), want, strlen(want)) == 0, "got '%s'",
                           tess_last_error());
                ASSERT(same_everywhere(g.comm, hash(tess_last_error())));
                /* all good: OK everywhere */
                ASSERT_OK(tess__comm_agree(&g, TESS_OK));
            }
            MPI_Barrier(g.comm);
            tess__comm_grid_destroy(&g);
        }
}

/* Different failures on different ranks: every rank returns the smallest status, with the
 * message of the lowest rank that had it. */
TEST(agree_picks_smallest_status) {
    struct tess__comm_grid g;
    ASSERT_OK(tess__comm_grid_create(MPI_COMM_WORLD, 0, 0, 'R', &g));
    int st = TESS_OK;
    if (g.rank % 2 == 1) st = tess__fail(TESS_EINVAL, "odd rank %d says EINVAL", g.rank);
    if (g.rank == wsize - 1) st = tess__fail(TESS_ENOSYS, "last rank %d says ENOSYS", g.rank);
    if (wsize >= 4 && g.rank == 2) st = tess__fail(TESS_ENOSYS, "rank 2 says ENOSYS");
    st = tess__comm_agree(&g, st);
    const int first = wsize >= 4 ? 2 : wsize - 1;
    ASSERT_EQ(st, TESS_ENOSYS);
    char want[64];
    if (first == 2)
        snprintf(want, sizeof want, "rank 2: rank 2 says ENOSYS");
    else
        snprintf(want, sizeof want, "rank %d: last rank %d says ENOSYS", first, first);
    ASSERT_MSG(strcmp(tess_last_error(), want) == 0, "got '%s', want '%s'", tess_last_error(),
               want);
    tess__comm_grid_destroy(&g);
}

TEST_MPI_MAIN(1, 64)

#endif
