/* src/lapack/args.c: what the factorization routines share (lapack.h): the leading argument
 * checks, the wording of an error from a call they made, the release of their own hold. */
#include "lapack.h"

int tess__la_check_head(const char *fn, int gen, int info_pos, tess_layout_t layout,
                        tess_uplo_t uplo, int64_t *info) {
    if (!info)
        return tess__fail(TESS_EINVAL, "%s: argument %d (info) must not be NULL", fn,
                          info_pos + gen);
    if (layout != TESS_ROW_MAJOR && layout != TESS_COL_MAJOR)
        return TESS__LA_BAD(1, "(layout = %d) must be TESS_ROW_MAJOR or TESS_COL_MAJOR",
                            (int)layout);
    if (uplo != TESS_UPPER && uplo != TESS_LOWER)
        return TESS__LA_BAD(2, "(uplo = %d) must be TESS_UPPER or TESS_LOWER", (int)uplo);
    return TESS_OK;
}

int tess__la_fail_in(const char *fn, int rc) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tess_last_error());
    return tess__fail(rc, "%s: %s", fn, msg);
}

int tess__la_release_own(const void *A, int rc, int64_t *info) {
    int64_t keep = *info;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tess_last_error());
    int rr = tess_release(A); /* written back: the host range is the result */
    if (rc)
        tess__fail(rc, "%s", msg);
    else if (rr)
        rc = rr;
    *info = rc ? 0 : keep;
    return rc;
}
