/* src/blas/defaults.h: the built-in defaults of the drop-in's crossover model (src/blas/model.h),
 * as knob strings: the knob table of src/knobs.c takes them from here, and tessera-info and
 * docs/knobs.md show them.
 *
 * PLACEHOLDERS, to be replaced by the H100 measurement: run tessera-crossover on the H100 and
 * paste the block it prints under "C snippet" over the six #define lines below (and the same
 * values into the tables of docs/dropin.md and docs/knobs.md). Until then they are
 * deliberately conservative: a CPU BLAS faster than any 16-core host reaches, devices slower
 * than one H100, a slow link, a large per-call overhead and a margin of 2, so that only very
 * large calls go to the devices (square GEMMs from about n = 12000 in s and d, 6000 in c and z). */
#ifndef TESS_BLAS_DEFAULTS_H
#define TESS_BLAS_DEFAULTS_H

#define TESS__BLAS_DEF_CPU_GFLOPS "4000,2000,4000,2000"
#define TESS__BLAS_DEF_DEV_GFLOPS "20000,10000,20000,10000"
#define TESS__BLAS_DEF_DEV_HALF "512"
#define TESS__BLAS_DEF_LINK_GBS "4"
#define TESS__BLAS_DEF_OVERHEAD_US "5000"
#define TESS__BLAS_DEF_MARGIN "2"

#endif /* TESS_BLAS_DEFAULTS_H */
