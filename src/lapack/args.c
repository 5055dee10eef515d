/* src/lapack/args.c: the argument checks the factorization routines share (lapack.h). */
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
