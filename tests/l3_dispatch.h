/* tests/l3_dispatch.h: the level-3 routines as data, for the tests that call all of them
 * (test_level3.c, test_fuzz_l3.c and the files that include it): the routine enum, one
 * call's arguments, and the routine x precision dispatch written once, to tessera
 * (l3_call: the generic tess_X or the typed tess_?X entry) and to the CBLAS (l3_cblas).
 * Arguments are ints where invalid values must be passable (argument-error tests).
 */
#ifndef TESS_TESTS_L3_DISPATCH_H
#define TESS_TESTS_L3_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ref.h"
#include "tessera.h"

enum l3_routine {
    L3_GEMM,
    L3_SYMM,
    L3_HEMM,
    L3_SYRK,
    L3_HERK,
    L3_SYR2K,
    L3_HER2K,
    L3_TRMM,
    L3_TRSM,
    L3_NR
};
extern const char *const l3_rname[L3_NR]; /* "gemm", "symm", ... */

static inline bool l3_herm(enum l3_routine r) {
    return r == L3_HEMM || r == L3_HERK || r == L3_HER2K;
}
/* the SYRK family */
static inline bool l3_rk(enum l3_routine r) { return r >= L3_SYRK && r <= L3_HER2K; }
static inline bool l3_rank2(enum l3_routine r) { return r == L3_SYR2K || r == L3_HER2K; }
static inline bool l3_tr(enum l3_routine r) { return r == L3_TRMM || r == L3_TRSM; }
static inline bool l3_sm(enum l3_routine r) { return r == L3_SYMM || r == L3_HEMM; }
/* operand B exists (GEMM, SYMM/HEMM, SYR2K/HER2K); TRMM/TRSM's B is the output here */
static inline bool l3_has_b(enum l3_routine r) { return r == L3_GEMM || l3_sm(r) || l3_rank2(r); }
/* HERK's alpha and beta, HER2K's beta are of the real type */
static inline bool l3_real_alpha(enum l3_routine r) { return r == L3_HERK; }
static inline bool l3_real_beta(enum l3_routine r) { return r == L3_HERK || r == L3_HER2K; }
/* the trans values routine r accepts in precision dt (SYRK family; the others take all) */
static inline bool l3_trans_ok(enum l3_routine r, tess_dtype_t dt, tess_trans_t t) {
    if (l3_herm(r) && l3_rk(r)) return t != TESS_TRANS;
    if (l3_rk(r) && ref_is_complex(dt)) return t != TESS_CONJ_TRANS;
    return true;
}

/* One call's arguments. TRMM/TRSM: the in-place B is C/ldc here, B/ldb unused. GEMM: ta =
 * transa, tb = transb; SYRK family: ta = trans; TRMM/TRSM: ta = transa. */
struct l3_args {
    enum l3_routine r;
    tess_dtype_t dt;
    int typed; /* the typed entry tess_?X (real scalars by value) instead of tess_X */
    int layout, side, uplo, ta, tb, diag;
    int64_t m, n, k; /* SYRK family: n, k; SYMM/HEMM/TRMM/TRSM: m, n; GEMM: m, n, k */
    const void *alpha;
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    const void *beta;
    void *C;
    int64_t ldc;
};

/* Call tessera; its status (-100 for a routine x precision that does not exist). A NULL
 * real scalar is passed to a typed entry as 0. */
int l3_call(const struct l3_args *a);

/* The same call on the CBLAS (valid arguments only; CBLAS enum values equal tessera's).
 * Real precisions read TESS_CONJ_TRANS as TESS_TRANS. */
void l3_cblas(const struct l3_args *a);

#endif
