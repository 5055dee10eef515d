/* tessera.h: the public C API of tessera, level-3 BLAS on host-resident matrices run by a
 * tile runtime across every GPU (and the CPU cores) of a node.
 *
 * Owns: status codes, the persistent runtime's init/finalize, tess_?gemm, per-device
 * statistics, the knob table printer. Nothing here knows about devices or tiles.
 *
 * Matrices live in host memory (pinned or pageable) and stay there: the runtime moves tiles
 * to the devices itself. Every routine is synchronous: when it returns, C is final.
 * Calls from several host threads at once are safe.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESS_API __attribute__((visibility("default")))
#else
#define TESS_API
#endif

#define TESS_VERSION_MAJOR 0
#define TESS_VERSION_MINOR 1
#define TESS_VERSION_PATCH 0

/* One list makes the status enum and the messages (tess_strerror). */
#define TESS_STATUS_MAP(X)                                                   \
    X(OK, 0, "success")                                                      \
    X(EINVAL, -1, "invalid argument")                                        \
    X(ENOMEM, -2, "out of memory")                                           \
    X(EDEVICE, -3, "device, CUDA or cuBLAS failure")                         \
    X(ECOMM, -4, "MPI or NCCL failure")                                      \
    X(EAGAIN, -5, "in flight; poll again")                                   \
    X(ENODEV, -6, "no usable device")                                        \
    X(ENOSYS, -7, "not supported by this build")                             \
    X(EINTERNAL, -8, "internal error")

typedef enum tess_status {
#define TESS_X_(name, value, msg) TESS_##name = value,
    TESS_STATUS_MAP(TESS_X_)
#undef TESS_X_
} tess_status_t;

/* Message of a status code ("invalid argument"); never NULL. */
TESS_API const char *tess_strerror(int status);
/* Detail of the last failing call made by this thread, naming the argument or the device
 * ("tess_dgemm: argument 9 (lda = 3) must be >= max(1, m) = 5"); "" if none. */
TESS_API const char *tess_last_error(void);

/* CBLAS values, so CBLAS enums can be passed through unchanged. */
typedef enum tess_layout { TESS_ROW_MAJOR = 101, TESS_COL_MAJOR = 102 } tess_layout_t;
typedef enum tess_trans { TESS_NO_TRANS = 111, TESS_TRANS = 112, TESS_CONJ_TRANS = 113 } tess_trans_t;

/* Precisions: float, double, complex float, complex double (interleaved re, im). */
typedef enum tess_dtype { TESS_S = 0, TESS_D = 1, TESS_C = 2, TESS_Z = 3 } tess_dtype_t;

/* Start the runtime: read the knobs (TESSERA_* environment variables, see
 * docs/knobs.md), open the devices, create their streams and heaps. Reference counted:
 * each tess_init needs one tess_finalize. A routine called before tess_init starts the
 * runtime itself; it then lives until the matching finalize or process exit. */
TESS_API int tess_init(void);
/* Drop one reference; the last one joins the workers and frees every device resource. */
TESS_API int tess_finalize(void);

/* C = alpha * op(A) * op(B) + beta * C, op(X) = X, X^T or X^H; C is m x n, op(A) m x k,
 * op(B) k x n. Netlib semantics: beta = 0 means C is not read (it may hold NaN); alpha = 0
 * or k = 0 means A and B are not read. Invalid arguments return TESS_EINVAL and write
 * nothing. Complex scalars and matrices are passed by pointer to interleaved pairs. */
TESS_API int tess_sgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb,
                        int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                        int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                        int64_t ldc);
TESS_API int tess_dgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb,
                        int64_t m, int64_t n, int64_t k, double alpha, const double *A,
                        int64_t lda, const double *B, int64_t ldb, double beta, double *C,
                        int64_t ldc);
TESS_API int tess_cgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb,
                        int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                        int64_t lda, const void *B, int64_t ldb, const void *beta, void *C,
                        int64_t ldc);
TESS_API int tess_zgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb,
                        int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                        int64_t lda, const void *B, int64_t ldb, const void *beta, void *C,
                        int64_t ldc);
/* The same for any precision: alpha and beta point to one scalar of that precision. */
TESS_API int tess_gemm(tess_dtype_t dtype, tess_layout_t layout, tess_trans_t transa,
                       tess_trans_t transb, int64_t m, int64_t n, int64_t k, const void *alpha,
                       const void *A, int64_t lda, const void *B, int64_t ldb,
                       const void *beta, void *C, int64_t ldc);

/* Host memory for operands: page-locked (pinned) when a GPU is present, so tiles move at
 * the link's full rate; plain malloc otherwise. NULL when out of memory. Free it with
 * tess_free_host only. Any host memory works as an operand; this is only faster. */
TESS_API void *tess_malloc_host(size_t bytes);
TESS_API void tess_free_host(void *p);

/* Device kinds reported in statistics. */
typedef enum tess_dev_kind {
    TESS_DEV_CUDA = 1,     /* an NVIDIA GPU through CUDA + cuBLAS */
    TESS_DEV_CPU = 2,      /* the CPU worker: OpenBLAS on host memory, no copies */
    TESS_DEV_EMULATED = 3  /* a host device with its own capped arena (TESSERA_EMULATE) */
} tess_dev_kind_t;

/* Counters of one device since tess_init or the last tess_reset_stats. */
typedef struct tess_dev_stats {
    char name[64];
    tess_dev_kind_t kind;
    int failed;              /* the device failed and is left out */
    uint64_t tasks;          /* output tiles computed */
    uint64_t stolen;         /* of which taken from another device's reservation station */
    uint64_t steps;          /* tile kernels launched */
    double flops;            /* floating-point operations of those kernels */
    uint64_t bytes_h2d;      /* host to device */
    uint64_t bytes_d2h;      /* device to host */
    uint64_t bytes_p2p;      /* peer device to this device */
    uint64_t l1_hits;        /* operand tile already on this device */
    uint64_t l2_hits;        /* operand tile fetched from a peer device */
    uint64_t misses;         /* operand tile fetched from the host */
    uint64_t evictions;      /* cached tiles dropped to make room */
    double busy_s;           /* seconds with at least one tile kernel in flight */
    size_t mem_capacity;     /* bytes of the device heap */
    size_t mem_peak;         /* most heap bytes in use at once */
} tess_dev_stats_t;

/* Number of devices the runtime drives (starts the runtime if needed). */
TESS_API int tess_device_count(void);
/* Counters of device dev (0 <= dev < tess_device_count()). */
TESS_API int tess_device_stats(int dev, tess_dev_stats_t *out);
/* Zero every device's counters (not the failed flags). */
TESS_API void tess_reset_stats(void);

/* Print the knob table (name, live value, default, meaning) to f. */
TESS_API void tess_print_knobs(FILE *f);
/* Print the devices, their links and P2P topology, and the build configuration to f. */
TESS_API void tess_print_info(FILE *f);
/* Build configuration in one line ("cuda=yes nccl=yes mpi=no ..."). */
TESS_API const char *tess_build_config(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
