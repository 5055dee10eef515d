/* tessera_scalapack.h: what libtessera_scalapack.so exports besides the PBLAS level-3 entry
 * points (p?gemm_, p?symm_, p?hemm_, p?syrk_, p?herk_, p?syr2k_, p?her2k_, p?trmm_,
 * p?trsm_, which keep PBLAS's own prototypes): where this process's calls went.
 * docs/scalapack.md has the routing; a program needs this header only to read the counters
 * (or dlsym "tess_scalapack_counters" when the library is preloaded).
 */
#ifndef TESSERA_SCALAPACK_H
#define TESSERA_SCALAPACK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESS_SCALAPACK_API __attribute__((visibility("default")))
#else
#define TESS_SCALAPACK_API
#endif

/* Counters of this process since it started (or the last reset). Flops are the whole
 * (global) operation's nominal count, counted on every process that took part in the call,
 * the same whichever way it went: GEMM 2mnk, SYMM/HEMM 2mnk_a, SYRK/HERK n(n+1)k,
 * SYR2K/HER2K 2n(n+1)k, TRMM/TRSM mnk_a (four times that complex; 0 when alpha = 0). */
typedef struct tess_scalapack_counters {
    uint64_t tessera_calls; /* computed through tessera's distributed GEMM */
    double tessera_flops;
    uint64_t reference_calls; /* passed to the reference routine underneath */
    double reference_flops;
    uint64_t quick_returns; /* nothing to compute (PBLAS's quick return), nothing called */
    uint64_t arg_errors;    /* bad arguments reported to the program's PB_Cabort */
    uint64_t fallbacks;     /* tessera failed with the output's input intact: run again
                                  by the reference (also counted in reference_calls) */
    uint64_t device_calls;  /* of tessera_calls: distributed factorizations whose panels
                                  stayed on the devices (p?potrf_, docs/scalapack.md) */
} tess_scalapack_counters_t;

/* Fill *out for routine: NULL or "" for every routine; "pdgemm" (any case, an optional
 * trailing '_') for one; "gemm" for a routine in every precision. Returns 0, or -1 for an
 * unknown name or out = NULL. */
TESS_SCALAPACK_API int tess_scalapack_counters(const char *routine, tess_scalapack_counters_t *out);
/* Zero every counter. */
TESS_SCALAPACK_API void tess_scalapack_reset_counters(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_SCALAPACK_H */
