/* src/blas/defaults.h: the built-in defaults of the drop-in's crossover model (src/blas/model.h),
 * as knob strings: the knob table of src/base/knobs.c takes them from here, and tessera-info and
 * docs/knobs.md show them.
 *
 * Measured: tessera-crossover on nvidia-h100-x1 (1 x H100 80GB HBM3, 16 cores, the
 * machine's pthreads OpenBLAS), 2026-11-22, `--time-limit 100` (jobs/gpu-check.sh with
 * GPU_CHECK_CROSSOVER_S=100), the block it prints under "C snippet" pasted as it came; the
 * measured and fitted crossovers are in docs/benchmarks.md. Square GEMMs go to the GPU from
 * about m = n = k = 776 (s), 689 (d), 482 (c), 396 (z). Another machine: run
 * tessera-crossover there and set the TESSERA_BLAS_* knobs it prints. */
#ifndef TESS_BLAS_DEFAULTS_H
#define TESS_BLAS_DEFAULTS_H

#define TESS__BLAS_DEF_CPU_GFLOPS "1230,667,1303,625"
#define TESS__BLAS_DEF_DEV_GFLOPS "48490,15161,39366,31975"
#define TESS__BLAS_DEF_DEV_HALF "126"
#define TESS__BLAS_DEF_LINK_GBS "24.2"
#define TESS__BLAS_DEF_OVERHEAD_US "292"
#define TESS__BLAS_DEF_MARGIN "1.28"

#endif /* TESS_BLAS_DEFAULTS_H */
