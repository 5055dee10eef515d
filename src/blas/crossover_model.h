/* src/blas/crossover_model.h: the drop-in's crossover model, the formula alone: does a level-3
 * call run faster on the CPU BLAS or on the devices through tessera? For a call of precision
 * p with F flops, D bytes of operands over the host links (each once; C out, and in when
 * beta != 0) and smallest dimension d = min(m, n, inner):
 *   cpu(call) = F / cpu_rate[p]
 *   dev(call) = overhead + max(F / (dev_rate[p] d / (d + dev_half)), D / link)
 * and the call goes to the devices when margin * dev(call) < cpu(call). cpu_rate: the best
 * the CPU BLAS reached here; dev_rate: all devices on large operands; dev_half: where they
 * reach half of it; link: pageable host-device GB/s; overhead: one call's fixed cost.
 * Header-only and self-contained (public types only): the drop-in decides with it (model.h
 * adds the call kinds and the knobs) and tessera-crossover fits its parameters with the same
 * formula (tests/check_layers.py lets a tool include a header that includes only the public
 * ones). */
#ifndef TESS_BLAS_CROSSOVER_MODEL_H
#define TESS_BLAS_CROSSOVER_MODEL_H

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "tessera.h"

struct tess__blas_model {
    double cpu_gflops[4]; /* s, d, c, z: the CPU BLAS's rate, GFLOP/s */
    double dev_gflops[4]; /* s, d, c, z: the devices' rate on large operands, GFLOP/s */
    double dev_half;      /* smallest dimension at which the devices reach half their rate */
    double link_gbs;      /* host <-> devices, pageable operands, GB/s (1e9 bytes) */
    double overhead_us;   /* fixed cost of one tessera call, microseconds */
    double margin;        /* the devices must win by this factor */
};

/* The cost of one call: real flops, operand bytes moved, smallest dimension. */
struct tess__blas_cost {
    double flops, bytes, dmin;
};

/* The shapes the cost tells apart: GEMM; SYMM/HEMM (A inner x inner); SYRK/HERK and SYR2K/
 * HER2K (C a triangle); TRMM/TRSM (A a triangle, B read and written). */
enum tess__blas_shape {
    TESS__SHAPE_GEMM,
    TESS__SHAPE_SYMM,
    TESS__SHAPE_RANK,
    TESS__SHAPE_RANK2,
    TESS__SHAPE_TRI
};

/* The cost of a level-3 call (column-major form): m, n, k as in the call; inner the inner
 * dimension (k for GEMM and the SYRK family, m for a left-sided SYMM/HEMM/TRMM/TRSM, n for a
 * right one); read_c: beta != 0 (always for TRMM/TRSM). Flops: 2 per multiply-add, 8 complex. */
static inline struct tess__blas_cost tess__blas_shape_cost(enum tess__blas_shape shape,
                                                           tess_dtype_t dt, double m, double n,
                                                           double k, double inner, int read_c) {
    const int cplx = dt == TESS_C || dt == TESS_Z;
    const double es = dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8, mul = cplx ? 8 : 2;
    struct tess__blas_cost c = {0, 0, 0};
    double cout; /* elements of C written */
    switch (shape) {
    case TESS__SHAPE_GEMM:
        c.flops = m * n * k * mul;
        c.bytes = m * k + k * n;
        cout = m * n;
        c.dmin = fmin(fmin(m, n), k);
        break;
    case TESS__SHAPE_SYMM:
        c.flops = m * n * inner * mul;
        c.bytes = inner * inner + m * n;
        cout = m * n;
        c.dmin = fmin(m, n);
        break;
    case TESS__SHAPE_RANK:
    case TESS__SHAPE_RANK2: {
        int two = shape == TESS__SHAPE_RANK2;
        c.flops = 0.5 * n * (n + 1) * k * mul * (two ? 2 : 1);
        c.bytes = n * k * (two ? 2 : 1);
        cout = 0.5 * n * (n + 1);
        c.dmin = fmin(n, k);
        break;
    }
    case TESS__SHAPE_TRI:
    default:
        c.flops = 0.5 * m * n * inner * mul;
        c.bytes = 0.5 * inner * (inner + 1);
        cout = m * n;
        read_c = 1;
        c.dmin = fmin(m, n);
        break;
    }
    c.bytes = (c.bytes + cout * (read_c ? 2 : 1)) * es;
    return c;
}

/* Seconds on the CPU BLAS and on the devices, by the model. */
static inline double tess__blas_model_cpu(const struct tess__blas_model *md, tess_dtype_t dt,
                                          const struct tess__blas_cost *c) {
    return c->flops / (md->cpu_gflops[dt] * 1e9);
}
static inline double tess__blas_model_dev(const struct tess__blas_model *md, tess_dtype_t dt,
                                          const struct tess__blas_cost *c) {
    double eff = c->dmin / (c->dmin + md->dev_half);
    double compute = eff > 0 ? c->flops / (md->dev_gflops[dt] * 1e9 * eff) : INFINITY;
    double move = c->bytes / (md->link_gbs * 1e9);
    return md->overhead_us * 1e-6 + fmax(compute, move);
}
/* 1: the call goes to the devices. */
static inline int tess__blas_model_to_dev(const struct tess__blas_model *md, tess_dtype_t dt,
                                          const struct tess__blas_cost *c) {
    return md->margin * tess__blas_model_dev(md, dt, c) < tess__blas_model_cpu(md, dt, c);
}

/* "v" or "s,d,c,z": positive finite numbers into out[4]. 0, or -1 when it cannot be parsed. */
static inline int tess__blas_model_list(const char *s, double out[4]) {
    double v[4];
    int n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !(x > 0) || !isfinite(x) || n == 4) return -1;
        v[n++] = x;
        while (*end == ' ') end++;
        if (!*end) break;
        if (*end != ',') return -1;
        p = end + 1;
    }
    if (n != 1 && n != 4) return -1;
    for (int i = 0; i < 4; i++) out[i] = v[n == 1 ? 0 : i];
    return 0;
}

#endif /* TESS_BLAS_CROSSOVER_MODEL_H */
