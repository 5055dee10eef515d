/* tests/test_rowperm.c: LASWP's swaps composed into one row permutation (src/backend/
 * rowperm.c), against the swaps applied one by one: LU-like pivots, pivots anywhere,
 * swaps that undo each other, the identity, and one scratch reused across sizes (its map
 * must come back clean). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "backend/rowperm.h"

/* Compose ipiv (k swaps of m rows) with p and check the moves against the swaps done one
 * by one on the row numbers; returns np. */
static int check(struct tess__rowperm *p, int m, int k, const int *ipiv) {
    int *seq = malloc((size_t)m * sizeof *seq), *got = malloc((size_t)m * sizeof *got);
    char *seen = calloc((size_t)m, 1);
    for (int r = 0; r < m; r++) seq[r] = got[r] = r;
    for (int i = 0; i < k; i++) {
        int t = seq[i];
        seq[i] = seq[ipiv[i] - 1];
        seq[ipiv[i] - 1] = t;
    }
    int np = -1;
    ASSERT_OK(tess__rowperm_compose(p, m, k, ipiv, &np));
    ASSERT(np >= 0 && np <= 2 * k && np <= m);
    for (int t = 0; t < np; t++) {
        ASSERT(p->rows[t] >= 0 && p->rows[t] < m && p->from[t] >= 0 && p->from[t] < m);
        ASSERT(p->rows[t] != p->from[t]); /* only rows that change */
        ASSERT(!(seen[p->rows[t]] & 1));  /* each destination once */
        seen[p->rows[t]] |= 1;
        seen[p->from[t]] |= 2;
        got[p->rows[t]] = p->from[t];
    }
    for (int r = 0; r < m; r++) {
        ASSERT_EQ(got[r], seq[r]);
        ASSERT(seen[r] == 0 || seen[r] == 3); /* sources and destinations: one set */
    }
    for (int64_t r = 0; r < p->map_n; r++) ASSERT_EQ(p->map[r], -1);
    free(seq);
    free(got);
    free(seen);
    return np;
}

TEST(rowperm_against_swaps) {
    struct tess__rowperm p = {0};
    unsigned seed = 11;
    int sizes[][2] = {{1, 1},   {2, 2},       {7, 3},   {64, 64},     {1000, 256},
                      {300, 1}, {4096, 1024}, {50, 17}, {2000, 2000}, {9, 0}};
    for (int rep = 0; rep < 3; rep++) {
        for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
            int m = sizes[c][0], k = sizes[c][1];
            int *ipiv = malloc((size_t)(k + 1) * sizeof *ipiv);
            /* LU's pivots: ipiv[i] - 1 >= i; then anywhere in 1..m */
            for (int i = 0; i < k; i++) ipiv[i] = i + 1 + (int)(rand_r(&seed) % (unsigned)(m - i));
            check(&p, m, k, ipiv);
            for (int i = 0; i < k; i++) ipiv[i] = 1 + (int)(rand_r(&seed) % (unsigned)m);
            check(&p, m, k, ipiv);
            free(ipiv);
        }
    }
    tess__rowperm_free(&p);
    ASSERT(!p.map && !p.rows && !p.from && p.map_n == 0 && p.cap == 0);
}

TEST(rowperm_identity_and_undo) {
    struct tess__rowperm p = {0};
    int id[5] = {1, 2, 3, 4, 5};
    ASSERT_EQ(check(&p, 5, 5, id), 0);
    int undo[4] = {3, 2, 1, 4}; /* 0<->2, 1<->1, 2<->0 undoes the first, 3<->3 */
    ASSERT_EQ(check(&p, 6, 4, undo), 0);
    int cyc[3] = {2, 3, 3}; /* 0<->1, 1<->2: a 3-cycle */
    ASSERT_EQ(check(&p, 3, 3, cyc), 3);
    int one[2] = {5, 2}; /* 0<->4, 1<->1 */
    ASSERT_EQ(check(&p, 8, 2, one), 2);
    tess__rowperm_free(&p);
}

TEST_MAIN()
