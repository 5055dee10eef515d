/* src/backend/host_ops.c: the host devices' hooks that queue work on a stream: copy2d,
 * gemm and the tile kernels. Each checks its arguments (stream, kind, pitches, shapes,
 * leading dimensions; on emulated devices where every operand lies: host_arena.c), copies
 * the scalars, and appends one op to the stream's FIFO: it returns at once, the stream
 * thread runs it (host_stream.c). A failed device answers TESS_EDEVICE. POTRF, GETRF and
 * LASWP are refused at the call (TESS_ENOSYS) when the CPU BLAS has no LAPACK routine for
 * them, so a missing routine never fails the device; POTRF's and GETRF's *info and GETRF's
 * pivots are written by the stream thread. LASWP's pivots are checked (1..m, k <= m) and
 * copied into the op at the call (the op owns the copy, op_free frees it): the caller may
 * reuse its array at once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_dev.h"
#include "hostblas.h" /* POTRF, GETRF, LASWP: is the LAPACK routine there */

/* Bytes spanned by `height` rows of `width` bytes at `pitch`; 0 on overflow (callers
 * have width, height > 0). */
static size_t extent(size_t pitch, size_t width, size_t height) {
    if (height > 1 && pitch > (SIZE_MAX - width) / (height - 1)) return 0;
    return (height - 1) * pitch + width;
}

int tess__hostdev_copy2d(void *bd, int stream, enum tess__copy_kind kind, void *dst, size_t dpitch,
                         const void *src, size_t spitch, size_t width, size_t height, void *peer) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "copy2d");
    int rc = check_stream(d, stream, "copy2d");
    if (rc) return rc;
    kind = (enum tess__copy_kind)(kind & ~TESS__COPY_NOWAIT); /* (a host copy never waits) */
    if ((unsigned)kind > TESS__P2P)
        return tess__fail(TESS_EINVAL, "%s: copy2d: bad kind %d", d->name, (int)kind);
    if (width == 0 || height == 0) return TESS_OK; /* nothing to move */
    if (!dst || !src)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: NULL pointer", d->name, kind_name(kind));
    if (height > 1 && (dpitch < width || spitch < width))
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: pitch (dst %zu, src %zu) < width %zu",
                          d->name, kind_name(kind), dpitch, spitch, width);
    size_t dext = extent(dpitch, width, height), sext = extent(spitch, width, height);
    if (!dext || !sext)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: extent overflows", d->name, kind_name(kind));
    struct dev *pd = peer;
    struct arena *pin = NULL;
    if (d->emu) {
        if (kind == TESS__P2P && (!pd || !pd->emu))
            return tess__fail(TESS_EINVAL, "%s: copy2d P2P: peer is not an emulated device",
                              d->name);
        if ((rc = tess__hostdev_check_copy(d, kind, dst, dext, src, sext, pd, &pin))) return rc;
    } else if (kind == TESS__P2P) {
        return tess__fail(TESS_EINVAL, "%s: copy2d P2P: the CPU worker has no peers", d->name);
    }
    struct op *op = tess__hostdev_op_new(OP_COPY);
    if (!op) {
        tess__hostdev_arena_unref(pin);
        return tess__fail(TESS_ENOMEM, "%s: copy2d: out of memory", d->name);
    }
    op->copy.kind = kind;
    op->copy.dst = dst;
    op->copy.dpitch = dpitch;
    op->copy.src = src;
    op->copy.spitch = spitch;
    op->copy.width = width;
    op->copy.height = height;
    op->copy.pin = pin;
    tess__hostdev_append(&d->s[stream], op);
    return TESS_OK;
}

static int upper_trans(char *t) {
    if (*t == 'n' || *t == 't' || *t == 'c') *t = (char)(*t - 'a' + 'A');
    return *t == 'N' || *t == 'T' || *t == 'C';
}

int tess__hostdev_gemm(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m,
                       int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                       const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "gemm");
    int rc = check_stream(d, stream, "gemm");
    if (rc) return rc;
    if ((unsigned)dt > TESS_Z || !upper_trans(&ta) || !upper_trans(&tb) || m < 0 || n < 0 ||
        k < 0 || !alpha || !beta)
        return tess__fail(TESS_EINVAL,
                          "%s: gemm: bad argument (dt %d, ta '%c', tb '%c', "
                          "m %lld, n %lld, k %lld)",
                          d->name, (int)dt, ta, tb, (long long)m, (long long)n, (long long)k);
    int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
    int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
    if (lda < TESS__MAX(1, ar) || ldb < TESS__MAX(1, br) || ldc < TESS__MAX(1, m))
        return tess__fail(TESS_EINVAL,
                          "%s: gemm: leading dimension too small (lda %lld, "
                          "ldb %lld, ldc %lld)",
                          d->name, (long long)lda, (long long)ldb, (long long)ldc);
    size_t es = tess__dtypes[dt].size;
    if (d->emu && m > 0 && n > 0) {
        if ((rc = tess__hostdev_check_operand(d, "C", C, m, n, ldc, es))) return rc;
        if (k > 0) {
            if ((rc = tess__hostdev_check_operand(d, "A", A, ar, ac, lda, es))) return rc;
            if ((rc = tess__hostdev_check_operand(d, "B", B, br, bc, ldb, es))) return rc;
        }
    }
    struct op *op = tess__hostdev_op_new(OP_GEMM);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: gemm: out of memory", d->name);
    op->gemm.dt = dt;
    op->gemm.ta = ta;
    op->gemm.tb = tb;
    op->gemm.m = m;
    op->gemm.n = n;
    op->gemm.k = k;
    memcpy(&op->gemm.alpha, alpha, es);
    memcpy(&op->gemm.beta, beta, es);
    op->gemm.A = A;
    op->gemm.lda = lda;
    op->gemm.B = B;
    op->gemm.ldb = ldb;
    op->gemm.C = C;
    op->gemm.ldc = ldc;
    tess__hostdev_append(&d->s[stream], op);
    return TESS_OK;
}

/* Stored shapes (rows x cols) of A, B and C of a tile kernel (backend.h); B absent: 0 x 0. */
static void kernel_shapes(const struct tess__kernel *k, int64_t sh[3][2]) {
    int64_t side_dim = k->side == 'L' ? k->m : k->n;
    int64_t ar = k->ta == 'N' ? k->n : k->k, ac = k->ta == 'N' ? k->k : k->n;
    memset(sh, 0, sizeof(int64_t) * 6);
    switch (k->kind) {
    case TESS__K_SYMM:
    case TESS__K_HEMM:
        sh[0][0] = sh[0][1] = side_dim, sh[1][0] = sh[2][0] = k->m, sh[1][1] = sh[2][1] = k->n;
        break;
    case TESS__K_SYRK:
    case TESS__K_HERK: sh[0][0] = ar, sh[0][1] = ac, sh[2][0] = sh[2][1] = k->n; break;
    case TESS__K_SYR2K:
    case TESS__K_HER2K:
        sh[0][0] = sh[1][0] = ar, sh[0][1] = sh[1][1] = ac, sh[2][0] = sh[2][1] = k->n;
        break;
    case TESS__K_POTRF: /* in place on C, n x n */ sh[2][0] = sh[2][1] = k->n; break;
    case TESS__K_GETRF: /* in place on C, m x n */
    case TESS__K_LASWP: sh[2][0] = k->m, sh[2][1] = k->n; break;
    default: /* TRMM, TRSM: in place on C */
        sh[0][0] = sh[0][1] = side_dim, sh[2][0] = k->m, sh[2][1] = k->n;
        break;
    }
}

int tess__hostdev_kernel(void *bd, int stream, const struct tess__kernel *k) {
    struct dev *d = bd;
    if (k->kind == TESS__K_GEMM)
        return tess__hostdev_gemm(bd, stream, k->dt, k->ta, k->tb, k->m, k->n, k->k, k->alpha, k->A,
                                  k->lda, k->B, k->ldb, k->beta, k->C, k->ldc);
    if (!live(d)) return dead(d, "kernel");
    int rc = check_stream(d, stream, "kernel");
    if (rc) return rc;
    char ta = k->ta ? k->ta : 'N';
    bool potrf = k->kind == TESS__K_POTRF; /* no scalars, A or B; C n x n, uplo 'L'/'U' */
    bool getrf = k->kind == TESS__K_GETRF; /* no scalars, A or B; C m x n, ipiv written */
    bool laswp = k->kind == TESS__K_LASWP; /* no scalars, A or B; C m x n, ipiv read */
    bool lapack = potrf || getrf || laswp;
    int64_t mn = TESS__MIN(k->m, k->n);
    if ((unsigned)k->dt > TESS_Z || (unsigned)k->kind > TESS__K_LASWP || !upper_trans(&ta) ||
        k->m < 0 || k->n < 0 || k->k < 0 || (!lapack && !k->alpha) ||
        (!lapack && k->kind != TESS__K_TRMM && k->kind != TESS__K_TRSM && !k->beta) ||
        (potrf && ((k->uplo != 'L' && k->uplo != 'U') || (k->n > 0 && !k->C))) ||
        (getrf && mn > 0 && (!k->C || !k->ipiv)) ||
        (getrf && (k->m > INT_MAX || k->n > INT_MAX)) || /* LAPACK's ints */
        (laswp && (k->k > k->m || k->k > INT_MAX || (k->k > 0 && !k->ipiv) ||
                   (k->k > 0 && k->n > 0 && !k->C))))
        return tess__fail(TESS_EINVAL, "%s: kernel %d: bad argument", d->name, (int)k->kind);
    if (lapack) {
        char who[80];
        const char *kname = potrf ? "potrf" : getrf ? "getrf" : "laswp";
        snprintf(who, sizeof who, "%s: kernel %s", d->name, kname);
        tess__potrf_fn *pf;
        tess__getrf_fn *gf;
        tess__laswp_fn *lf;
        rc = potrf   ? tess__hostblas_potrf((int)k->dt, who, &pf)
             : getrf ? tess__hostblas_getrf((int)k->dt, who, &gf)
                     : tess__hostblas_laswp((int)k->dt, who, &lf);
        if (rc) return rc;
    }
    if (laswp)
        for (int64_t i = 0; i < k->k; i++)
            if (k->ipiv[i] < 1 || k->ipiv[i] > k->m)
                return tess__fail(TESS_EINVAL, "%s: kernel laswp: ipiv[%lld] = %d not in 1..%lld",
                                  d->name, (long long)i, k->ipiv[i], (long long)k->m);
    size_t es = tess__dtypes[k->dt].size;
    int64_t sh[3][2];
    kernel_shapes(k, sh);
    const void *ptr[3] = {k->A, k->B, k->C};
    const int64_t ld[3] = {k->lda, k->ldb, k->ldc};
    static const char *name[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        if (sh[i][0] <= 0 || sh[i][1] <= 0) continue;
        if (ld[i] < sh[i][0])
            return tess__fail(TESS_EINVAL, "%s: kernel %d: ld%s %lld < %lld", d->name, (int)k->kind,
                              name[i], (long long)ld[i], (long long)sh[i][0]);
        if (d->emu &&
            (rc = tess__hostdev_check_operand(d, name[i], ptr[i], sh[i][0], sh[i][1], ld[i], es)))
            return rc;
    }
    int *piv = NULL; /* LASWP: the pivots as they are now, owned by the op */
    if (laswp && k->k > 0 && !(piv = malloc((size_t)k->k * sizeof *piv)))
        return tess__fail(TESS_ENOMEM, "%s: kernel: out of memory", d->name);
    struct op *op = tess__hostdev_op_new(OP_KERNEL);
    if (!op) {
        free(piv);
        return tess__fail(TESS_ENOMEM, "%s: kernel: out of memory", d->name);
    }
    op->kern.k = *k;
    op->kern.k.ta = ta;
    if (laswp) {
        if (piv) memcpy(piv, k->ipiv, (size_t)k->k * sizeof *piv);
        op->kern.k.ipiv = piv;
    }
    if (k->alpha) memcpy(&op->kern.alpha, k->alpha, es);
    if (k->beta) memcpy(&op->kern.beta, k->beta, es);
    tess__hostdev_append(&d->s[stream], op);
    return TESS_OK;
}
