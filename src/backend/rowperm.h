/* src/backend/rowperm.h: LAPACK's row interchanges (LASWP's ipiv: rows i and ipiv[i] - 1
 * swapped for i = 0 .. k - 1 in order) composed into the one permutation of the rows they
 * change, for a backend that moves those rows in a single pass (cuda.c with cuda_rows.cu).
 * A struct tess__rowperm is scratch reused across compositions by one thread at a time. */
#ifndef TESS_BACKEND_ROWPERM_H
#define TESS_BACKEND_ROWPERM_H

#include <stdint.h>

/* map[r] is row r's index in rows/from during a composition and -1 otherwise (restored
 * before tess__rowperm_compose returns); rows[t] receives the content of from[t]. */
struct tess__rowperm {
    int *map; /* [map_n] */
    int64_t map_n;
    int *rows, *from; /* [cap] */
    int64_t cap;
};

/* The k swaps of an m-row matrix (1 <= ipiv[i] <= m, k <= m <= INT_MAX, checked by the
 * caller) as *np <= 2 k moves: row p->rows[t] := row p->from[t] of before, t < *np, the
 * rows whose content changes, sources and destinations the same set. TESS_ENOMEM (with
 * the message) if the scratch cannot grow; p unchanged but still usable then. */
int tess__rowperm_compose(struct tess__rowperm *p, int64_t m, int64_t k, const int *ipiv, int *np);

/* Frees the scratch and zeroes p. */
void tess__rowperm_free(struct tess__rowperm *p);

#endif
