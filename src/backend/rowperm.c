/* src/backend/rowperm.c: row interchanges composed into one permutation (rowperm.h). The
 * composition follows where each touched row's content goes through the swaps in order,
 * O(k) time with the map reset entry by entry, so a reused scratch costs nothing per row
 * of the matrix after its first growth. */
#include "rowperm.h"

#include <stdlib.h>

#include "internal.h"

static int grow(int **a, int64_t n) {
    int *b = realloc(*a, (size_t)n * sizeof *b);
    if (!b) return TESS_ENOMEM;
    *a = b;
    return TESS_OK;
}

int tess__rowperm_compose(struct tess__rowperm *p, int64_t m, int64_t k, const int *ipiv, int *np) {
    *np = 0;
    if (p->map_n < m) {
        if (grow(&p->map, m)) return tess__fail(TESS_ENOMEM, "laswp: out of host memory");
        for (int64_t r = p->map_n; r < m; r++) p->map[r] = -1;
        p->map_n = m;
    }
    if (p->cap < 2 * k) {
        if (grow(&p->rows, 2 * k) || grow(&p->from, 2 * k))
            return tess__fail(TESS_ENOMEM, "laswp: out of host memory");
        p->cap = 2 * k;
    }
    int nt = 0;
    for (int64_t i = 0; i < k; i++) {
        int r[2] = {(int)i, ipiv[i] - 1}, x[2];
        for (int j = 0; j < 2; j++) {
            if (p->map[r[j]] < 0) {
                p->map[r[j]] = nt;
                p->rows[nt] = p->from[nt] = r[j];
                nt++;
            }
            x[j] = p->map[r[j]];
        }
        int f = p->from[x[0]];
        p->from[x[0]] = p->from[x[1]];
        p->from[x[1]] = f;
    }
    int n = 0;
    for (int t = 0; t < nt; t++) {
        p->map[p->rows[t]] = -1;
        if (p->from[t] != p->rows[t]) p->rows[n] = p->rows[t], p->from[n++] = p->from[t];
    }
    *np = n;
    return TESS_OK;
}

void tess__rowperm_free(struct tess__rowperm *p) {
    free(p->map);
    free(p->rows);
    free(p->from);
    p->map = p->rows = p->from = NULL;
    p->map_n = p->cap = 0;
}
