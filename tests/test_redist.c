/* tests/test_redist.c: the datatypes of one panel exchange in comm/redist.c against its
 * block list, on one rank (singleton MPI, no communication but with itself): for random
 * grids, descriptors, transposes, element sizes and units, and every (owner, destination)
 * pair,
 *   - the MPI transport's way (tess__redist_types, send side from the owner's local arrays,
 *     receive side into the destination's panels, one MPI_Sendrecv), and
 *   - the GPU transport's way with pieces from other nodes (the send-side type packed, the
 *     bytes unpacked with tess__redist_blocks' list)
 * must leave the same bytes in the panels, and the packed bytes must be the blocks copied
 * one after another. The cases must include blocks that are neither whole columns nor
 * whole rows (several row and column segments for one pair), where block order differs
 * from plain column order (the order the send type once had: the GPU transport then
 * scrambled such units).
 * Exits 77 when built without MPI.
 */
#include <stdio.h>

#ifndef TESS_HAVE_MPI
int main(void) {
    fprintf(stderr, "SKIP: built without MPI\n");
    return 77;
}
#else

#include "harness_mpi.h"
#include "../comm/redist.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t rnd(int64_t lo, int64_t hi) { /* in [lo, hi] */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* A random descriptor for a rows x cols submatrix at (*i, *j) on a P x Q grid. */
static struct tess__comm_desc rdesc(int P, int Q, int64_t rows, int64_t cols, int64_t *i,
                                    int64_t *j) {
    struct tess__comm_desc d = {.dtype = 1};
    *i = rnd(0, 5), *j = rnd(0, 5);
    d.m = *i + rows + rnd(0, 3), d.n = *j + cols + rnd(0, 3);
    d.mb = rnd(1, 7), d.nb = rnd(1, 7), d.imb = rnd(1, 9), d.inb = rnd(1, 9);
    d.rsrc = (int)rnd(0, P - 1), d.csrc = (int)rnd(0, Q - 1);
    struct tess__comm_bc r = tess__comm_desc_rows(&d, P);
    int64_t mx = 1;
    for (int p = 0; p < P; p++) mx = TESS__MAX(mx, tess__comm_bc_numroc(&r, p));
    d.lld = mx + rnd(0, 2);
    return d;
}

/* the receiving side of the block path: copy each block out of the packed bytes */
struct unpack {
    const struct tess__redist_op *ops;
    const char *src;
    size_t off;
};
static void unpack_block(void *arg, int op, int64_t sr, int64_t sc, int64_t tr, int64_t tc,
                         int64_t rows, int64_t cols) {
    struct unpack *u = arg;
    const struct tess__redist_op *o = &u->ops[op];
    (void)sr, (void)sc;
    for (int64_t c = 0; c < cols; c++) {
        memcpy((char *)o->buf + (size_t)(tr + (tc + c) * o->ldbuf) * o->es, u->src + u->off,
               (size_t)rows * o->es);
        u->off += (size_t)rows * o->es;
    }
}
/* the blocks copied one after another from the owner's arrays, the packed bytes expected */
struct pack {
    const struct tess__redist_op *ops;
    char *dst;
    size_t off;
    int64_t r[2][2], c[2][2]; /* per operand: first and last block's first row and column */
    int64_t wide;             /* blocks more than one column wide */
};
static void pack_block(void *arg, int op, int64_t sr, int64_t sc, int64_t tr, int64_t tc,
                       int64_t rows, int64_t cols) {
    struct pack *p = arg;
    const struct tess__redist_op *o = &p->ops[op];
    (void)tr, (void)tc;
    for (int64_t c = 0; c < cols; c++) {
        memcpy(p->dst + p->off, (const char *)o->X + (size_t)(sr + (sc + c) * o->ldx) * o->es,
               (size_t)rows * o->es);
        p->off += (size_t)rows * o->es;
    }
    p->r[op][p->r[op][0] < 0 ? 0 : 1] = sr;
    p->c[op][p->c[op][0] < 0 ? 0 : 1] = sc;
    p->wide += cols > 1;
}

static void fill(char *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (char)rnd(0, 255);
}

/* The send and receive datatypes and the block list put the same bytes in the same panel
 * places, with units of both kinds (a k range; a range of selected positions), for every
 * pair; the send type lists the blocks in the block list's order. */
TEST(types_match_block_list) {
    int64_t cases = 0, moved = 0, multi = 0;
    for (int it = 0; it < 400; it++) {
        int P = (int)rnd(1, 3), Q = (int)rnd(1, 3);
        size_t es = (size_t[]){4, 8, 16}[rnd(0, 2)];
        int64_t m = rnd(1, 30), n = rnd(1, 30), k = rnd(1, 30);
        char ta = rnd(0, 1) ? 'N' : 'T', tb = rnd(0, 1) ? 'N' : 'T';
        int64_t ia, ja, ib, jb, ic, jc;
        struct tess__comm_desc da = ta == 'N' ? rdesc(P, Q, m, k, &ia, &ja)
                                              : rdesc(P, Q, k, m, &ia, &ja);
        struct tess__comm_desc db = tb == 'N' ? rdesc(P, Q, k, n, &ib, &jb)
                                              : rdesc(P, Q, n, k, &ib, &jb);
        struct tess__comm_desc dc = rdesc(P, Q, m, n, &ic, &jc);
        struct tess__comm_grid g;
        memset(&g, 0, sizeof g);
        g.at.nprow = P, g.at.npcol = Q;
        struct tess__comm_bc cr = tess__comm_desc_rows(&dc, P), cc = tess__comm_desc_cols(&dc, Q);
        struct tess__redist_op ops[2];
        tess__redist_setup(&ops[0], &g, NULL, &da, ia, ja, es, ta == 'N' ? 1 : 0, k, m, &cr, ic, 0);
        tess__redist_setup(&ops[1], &g, NULL, &db, ib, jb, es, tb == 'N' ? 0 : 1, k, n, &cc, jc, 1);
        ASSERT_EQ(tess__redist_plan(&ops[0]), TESS_OK);
        ASSERT_EQ(tess__redist_plan(&ops[1]), TESS_OK);
        for (int i = 0; i < 2; i++) ops[i].in_place = tess__redist_in_place(&ops[i]);
        const struct tess__comm_desc *dx[2] = {&da, &db};
        MPI_Datatype elem;
        MPI_Type_contiguous((int)es, MPI_BYTE, &elem);
        MPI_Type_commit(&elem);
        for (int orow = 0; orow < P; orow++)
            for (int ocol = 0; ocol < Q; ocol++) {
                /* the owner's local arrays, random bytes */
                char *X[2];
                for (int i = 0; i < 2; i++) {
                    struct tess__comm_bc c = tess__comm_desc_cols(dx[i], Q);
                    size_t bytes = (size_t)dx[i]->lld *
                                   (size_t)TESS__MAX(1, tess__comm_bc_numroc(&c, ocol)) * es;
                    X[i] = malloc(bytes);
                    fill(X[i], bytes);
                    ops[i].X = X[i];
                    ops[i].ldx = dx[i]->lld;
                }
                for (int drow = 0; drow < P; drow++)
                    for (int dcol = 0; dcol < Q; dcol++) {
                        /* the destination's panels, one pass over all k */
                        int64_t sel[2] = {tess__redist_sel_count(&ops[0], drow),
                                          tess__redist_sel_count(&ops[1], dcol)};
                        size_t pb[2];
                        for (int i = 0; i < 2; i++) {
                            ops[i].ldbuf = ops[i].kdim == 1 ? TESS__MAX(1, sel[i]) : k;
                            pb[i] = (size_t)ops[i].ldbuf *
                                    (size_t)(ops[i].kdim == 1 ? k : TESS__MAX(1, sel[i])) * es;
                        }
                        char *p1 = malloc(pb[0] + pb[1]), *p2 = malloc(pb[0] + pb[1]);
                        memset(p1, 0x5a, pb[0] + pb[1]);
                        memset(p2, 0x5a, pb[0] + pb[1]);
                        /* a unit: a k range, or a range of selected positions with all k */
                        int64_t k0 = 0, k1 = k, s0 = 0, s1 = INT64_MAX;
                        if (rnd(0, 1)) {
                            k0 = rnd(0, k - 1), k1 = rnd(k0 + 1, k);
                        } else {
                            int64_t smax = TESS__MAX(1, TESS__MAX(sel[0], sel[1]));
                            s0 = rnd(0, smax - 1), s1 = rnd(s0 + 1, smax);
                        }
                        /* the MPI transport's way */
                        ops[0].buf = p1, ops[1].buf = p1 + pb[0];
                        MPI_Datatype ts, tr;
                        ASSERT_EQ(tess__redist_types(ops, 2, orow, ocol, drow, dcol, k0, k1, 0, s0,
                                                     s1, true, elem, &ts),
                                  TESS_OK);
                        ASSERT_EQ(tess__redist_types(ops, 2, orow, ocol, drow, dcol, k0, k1, 0, s0,
                                                     s1, false, elem, &tr),
                                  TESS_OK);
                        ASSERT_EQ(ts == MPI_DATATYPE_NULL, tr == MPI_DATATYPE_NULL);
                        if (ts != MPI_DATATYPE_NULL) {
                            MPI_Sendrecv(MPI_BOTTOM, 1, ts, 0, 3, MPI_BOTTOM, 1, tr, 0, 3,
                                         MPI_COMM_SELF, MPI_STATUS_IGNORE);
                            MPI_Type_free(&tr);
                            /* the GPU transport's pieces from another node: packed in the
                             * send type's order, unpacked by the block list */
                            ops[0].buf = p2, ops[1].buf = p2 + pb[0];
                            int bsz = 0, pos = 0;
                            MPI_Type_size(ts, &bsz);
                            char *packed = malloc((size_t)bsz), *want = malloc((size_t)bsz);
                            MPI_Pack(MPI_BOTTOM, 1, ts, packed, bsz, &pos, MPI_COMM_SELF);
                            ASSERT_EQ(pos, bsz);
                            MPI_Type_free(&ts);
                            struct pack pk = {
                                ops, want, 0, {{-1, -1}, {-1, -1}}, {{-1, -1}, {-1, -1}}, 0};
                            tess__redist_blocks(ops, 2, orow, ocol, drow, dcol, k0, k1, 0, s0, s1,
                                                pack_block, &pk);
                            ASSERT_EQ(pk.off, (size_t)bsz);
                            ASSERT_MSG(memcmp(packed, want, (size_t)bsz) == 0,
                                       "case %d: packed bytes are not the blocks in order", it);
                            struct unpack up = {ops, packed, 0};
                            tess__redist_blocks(ops, 2, orow, ocol, drow, dcol, k0, k1, 0, s0, s1,
                                                unpack_block, &up);
                            moved++;
                            /* one operand's blocks start at several rows and columns
                             * and some are wider than a column: block order differs from
                             * plain column order */
                            for (int i = 0; i < 2; i++)
                                if (pk.wide && pk.r[i][1] >= 0 && pk.r[i][1] != pk.r[i][0] &&
                                    pk.c[i][1] >= 0 && pk.c[i][1] != pk.c[i][0]) {
                                    multi++;
                                    break;
                                }
                            free(packed), free(want);
                        }
                        ASSERT_MSG(memcmp(p1, p2, pb[0] + pb[1]) == 0,
                                   "case %d (%dx%d, %c%c, es %zu, owner %d,%d, dest %d,%d): the "
                                   "panels differ",
                                   it, P, Q, ta, tb, es, orow, ocol, drow, dcol);
                        free(p1), free(p2);
                        cases++;
                    }
                free(X[0]), free(X[1]);
            }
        MPI_Type_free(&elem);
        tess__redist_free(&ops[0]);
        tess__redist_free(&ops[1]);
    }
    ASSERT_GT(moved, cases / 4);
    ASSERT_GT(multi, 100);
}

TEST_MPI_MAIN(1, 1)

#endif
