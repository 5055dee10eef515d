/* src/blas/model.h: the drop-in's use of its crossover model (crossover_model.h: the formula,
 * shared with tessera-crossover, which fits the parameters): the cost of a call by its kind
 * (blas.h), and the model's parameters from the TESSERA_BLAS_* knobs (src/base/knobs.c,
 * defaults in dropin_defaults.h). Header-only: route.c decides with it.
 */
#ifndef TESS_BLAS_MODEL_H
#define TESS_BLAS_MODEL_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "blas.h"
#include "crossover_model.h"

#include "dropin_defaults.h" /* TESS__BLAS_DEF_*: the knobs' built-in defaults */

/* The cost of a level-3 call of one kind (crossover_model.h: tess__blas_shape_cost). */
static inline struct tess__blas_cost tess__blas_cost(enum tess__blas_kind kind, tess_dtype_t dt,
                                                     double m, double n, double k, double inner,
                                                     int read_c) {
    enum tess__blas_shape shape = TESS__SHAPE_TRI;
    switch (kind) {
    case TESS__BLAS_GEMM: shape = TESS__SHAPE_GEMM; break;
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM: shape = TESS__SHAPE_SYMM; break;
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK: shape = TESS__SHAPE_RANK; break;
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: shape = TESS__SHAPE_RANK2; break;
    default: break;
    }
    return tess__blas_shape_cost(shape, dt, m, n, k, inner, read_c);
}

/* The model from the knob values (struct tess__config, knobs.c): 0, or -1 with a message
 * naming the knob in err. */
static inline int tess__blas_model_load(struct tess__blas_model *md, const struct tess__config *cfg,
                                        char *err, size_t errsz) {
    if (tess__blas_model_list(cfg->blas_cpu_gflops, md->cpu_gflops))
        return snprintf(err, errsz,
                        "TESSERA_BLAS_CPU_GFLOPS=\"%s\" must be one positive "
                        "number or four (s,d,c,z)",
                        cfg->blas_cpu_gflops),
               -1;
    if (tess__blas_model_list(cfg->blas_dev_gflops, md->dev_gflops))
        return snprintf(err, errsz,
                        "TESSERA_BLAS_DEV_GFLOPS=\"%s\" must be one positive "
                        "number or four (s,d,c,z)",
                        cfg->blas_dev_gflops),
               -1;
    md->dev_half = cfg->blas_dev_half;
    md->link_gbs = cfg->blas_link_gbs;
    md->overhead_us = cfg->blas_overhead_us;
    md->margin = cfg->blas_margin;
    if (!(md->dev_half >= 0) || !isfinite(md->dev_half))
        return snprintf(err, errsz, "TESSERA_BLAS_DEV_HALF must be >= 0"), -1;
    if (!(md->link_gbs > 0) || !isfinite(md->link_gbs))
        return snprintf(err, errsz, "TESSERA_BLAS_LINK_GBS must be > 0"), -1;
    if (!(md->overhead_us >= 0) || !isfinite(md->overhead_us))
        return snprintf(err, errsz, "TESSERA_BLAS_OVERHEAD_US must be >= 0"), -1;
    if (!(md->margin > 0) || !isfinite(md->margin))
        return snprintf(err, errsz, "TESSERA_BLAS_MARGIN must be > 0"), -1;
    return 0;
}

#endif /* TESS_BLAS_MODEL_H */
