/* src/base/internal.h: what every layer of tessera shares inside the library: precision table,
 * scalars, status helpers, logging, clocks, the knob values (struct tess__config) and the
 * per-device counters. Nothing here owns threads or devices.
 */
#ifndef TESS_INTERNAL_H
#define TESS_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

#define TESS_MAX_DEVICES 32 /* devices of one node runtime (GPUs + CPU worker + emulated) */
#define TESS_MAX_STREAMS 8  /* streams per device */
#define TESS_COMM_STREAMS 2 /* more on emulated devices, the distributed layer's (xport_nccl.c) */
#define TESS_AUX_STREAMS 1  /* one more on every device: held tiles' write-behind (worker.c) */

/* ---- precisions: one generic path, typed by this table ---------------------------- */

/* One scalar of any precision, aligned for all of them (16 bytes: cuDoubleComplex and SSE
 * loads of a complex double need it). */
typedef union tess__scalar {
    float s;
    double d;
    float c[2];
    double z[2];
    _Alignas(16) unsigned char bytes[16];
} tess__scalar_t;

struct tess__dtype_info {
    const char *name; /* "s", "d", "c", "z" */
    size_t size;      /* bytes of one element */
    int complex_;     /* 1 for c and z */
    double flop_mul;  /* real flops per multiply-add pair: 2 real, 8 complex */
};
extern const struct tess__dtype_info tess__dtypes[4];

/* Scalars: load from the caller's pointer, compare, and constants 0 and 1. */
void tess__scalar_load(tess_dtype_t dt, tess__scalar_t *out, const void *p);
bool tess__scalar_is_zero(tess_dtype_t dt, const tess__scalar_t *x);
bool tess__scalar_is_one(tess_dtype_t dt, const tess__scalar_t *x);
const tess__scalar_t *tess__scalar_zero(void);
/* The constant one of precision dt. */
const tess__scalar_t *tess__scalar_one(tess_dtype_t dt);

/* Resolve the CPU BLAS (src/base/hostblas.h, which has the table): TESS_OK or TESS_ENOSYS naming
 * the library and TESSERA_CPU_BLAS. Declared here too so the runtime can start it. */
int tess__hostblas_load(void);

/* Host kernels (the CPU BLAS of hostblas.h, column-major). trans is 'N', 'T' or 'C'.
 * tess__host_gemm is tess__host_kernel with a GEMM kernel (same rules, status dropped). */
void tess__host_gemm(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                     const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                     const void *beta, void *C, int64_t ldc);
struct tess__kernel;
/* Any tile kernel (src/backend/backend.h) on host memory, through the CPU BLAS (its int
 * parameters, LP64). Dimensions and leading dimensions are 64-bit and never truncated: a
 * leading dimension beyond INT_MAX is served from a copy of the operand's block with a
 * small one (C copied back, only its referenced part), a dimension beyond INT_MAX by
 * splitting the call. The SYRK family scales its triangle of C by beta itself (netlib's
 * NaN/Inf rules; the CPU BLAS then runs with beta = 1), beta = 0 still not reading C.
 * TESS_OK, TESS_ENOMEM (no host memory for such a copy; C is not written, though a call
 * split into pieces may have finished earlier pieces), TESS_EINVAL
 * (negative sizes, or the order of a square operand beyond INT_MAX: such an operand cannot
 * be addressed) or TESS_ENOSYS (no CPU BLAS). */
int tess__host_kernel(const struct tess__kernel *k);
/* C = beta * C on an m x n host matrix; beta = 0 writes zeros without reading C. */
void tess__host_scale(tess_dtype_t dt, int64_t m, int64_t n, const tess__scalar_t *beta, void *C,
                      int64_t ldc);
/* C = beta * C on the triangle uplo ('U'/'L') of the n x n host matrix C, the other
 * triangle untouched; beta = 0 writes zeros without reading. herm: C is Hermitian (c/z):
 * the imaginary parts of its diagonal are not read and come out zero, beta is real (its
 * .c[0]/.z[0], the imaginary part must be 0). */
void tess__host_scale_tri(tess_dtype_t dt, char uplo, int64_t n, const tess__scalar_t *beta,
                          bool herm, void *C, int64_t ldc);

/* Bytes spanned by a column-major rows x cols array with leading dimension ld and
 * elements of es bytes ((cols - 1) ld + rows elements; rows, cols >= 1, ld >= rows):
 * true and *bytes when they can be addressed from X (at most PTRDIFF_MAX, and X + bytes
 * does not wrap), false otherwise. Checked arithmetic: never overflows. */
bool tess__span_ok(const void *X, int64_t rows, int64_t cols, int64_t ld, size_t es, size_t *bytes);

/* ---- status, messages, logging ----------------------------------------------------- */

/* Record a failure for tess_last_error (thread-local) and return status. Logged at
 * verbosity >= 2. */
int tess__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clear this thread's last-error message (start of each public call). */
void tess__clear_error(void);

enum { TESS__LOG_WARN = 1, TESS__LOG_INFO = 2, TESS__LOG_DEBUG = 3 };
/* Print to stderr when level <= TESSERA_VERBOSE. The library is silent at 0. */
void tess__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern int tess__verbose;

/* Monotonic seconds. */
double tess__now(void);
/* hostmem.c: a large host copy with non-temporal stores (x86-64; memcpy elsewhere), and the
 * fence that orders those stores before a flag or an atomic that publishes them. */
void tess__copy_nt(void *dst, const void *src, size_t n);
void tess__copy_nt_fence(void);
/* Whether tess_malloc_host pins its memory where a GPU is visible: compiled with CUDA, as
 * every layer must be in a CUDA build (test_host_backend checks it against the build). */
bool tess__hostmem_pins(void);

/* ---- knobs: one table in src/base/knobs.c, mirrored in docs/knobs.md ------------------- */

struct tess__config {
    char devices[128];   /* TESSERA_DEVICES: "all", "none" or a list of GPU ordinals "0,1" */
    int64_t tile;        /* TESSERA_TILE: tile edge in elements, 0 = automatic */
    int tune;            /* TESSERA_TUNE: 0 fixed rule, 1 measured model (file), 2 measure again */
    char tune_file[256]; /* TESSERA_TUNE_FILE: where the measurements are kept */
    int streams;         /* TESSERA_STREAMS: streams (concurrent tasks) per GPU */
    int64_t dev_mem;     /* TESSERA_DEVICE_MEM: heap bytes per GPU, 0 = all free but a margin */
    int64_t
        staging; /* TESSERA_STAGING: pinned staging bytes per GPU for pageable operands, 0 = off */
    int staging_threads; /* TESSERA_STAGING_THREADS: staging threads (all GPUs), 0 = min(8, cores/2) */
    int cpu_worker;      /* TESSERA_CPU_WORKER: -1 auto, 0 off, 1 on */
    int rs_size;         /* TESSERA_RS: reservation-station slots per device */
    int balance;      /* TESSERA_BALANCE: end-game placement by projected finish (node/balance.c) */
    int dataflow;     /* TESSERA_DATAFLOW: TRSM by step-level dependencies (level3/trxm.c) */
    int hold_check;   /* TESSERA_HOLD_CHECK: check the contract of held data (node/hold.c) */
    int write_behind; /* TESSERA_WRITE_BEHIND: idle dirty held tiles written back early */
    int spin_us;      /* TESSERA_SPIN_US: GPU workers poll this long before a blocking wait */
    int p2p;          /* TESSERA_P2P: allow peer-to-peer tile fetches */
    int recover;      /* TESSERA_RECOVER: bounce write-backs, finished peer copies only */
    int pin_threads;  /* TESSERA_PIN: pin each worker thread to a core */
    int emulate;      /* TESSERA_EMULATE: number of emulated host devices */
    int64_t emu_mem;  /* TESSERA_EMULATE_MEM: arena bytes per emulated device */
    double emu_link_gbs;  /* TESSERA_EMULATE_LINK: emulated link GB/s, 0 = unthrottled */
    char emu_gflops[128]; /* TESSERA_EMULATE_GFLOPS: per-device flop rate list, "" = unthrottled */
    char emu_fault[128];  /* TESSERA_FAULT: "dev:k[,dev:k]" device index dev fails at its k-th op */
    int emu_jitter_us;    /* TESSERA_EMULATE_JITTER: random delay before each op, microseconds */
    int emu_streams;      /* TESSERA_EMULATE_STREAMS: streams per emulated device */
    int emu_shared;       /* TESSERA_EMULATE_SHARED: one compute engine per emulated device */
    int verbose;          /* TESSERA_VERBOSE: 0 silent, 1 warnings, 2 info, 3 debug */
    char trace[256];      /* TESSERA_TRACE: write a Chrome/Perfetto trace to this file */
    int summary;          /* TESSERA_SUMMARY: print per-device counters at finalize */
    char cpu_blas[256];   /* TESSERA_CPU_BLAS: the CPU BLAS library dlopen'ed (hostblas.c) */
    /* the drop-in library libtessera_blas.so (src/blas/) */
    int blas_force; /* TESSERA_BLAS_FORCE: 1 = every level-3 call to the runtime */
    /* the crossover model (src/blas/model.h): which calls the devices win */
    char blas_cpu_gflops[64]; /* TESSERA_BLAS_CPU_GFLOPS: CPU BLAS rate, "v" or "s,d,c,z" */
    char blas_dev_gflops[64]; /* TESSERA_BLAS_DEV_GFLOPS: devices' rate, "v" or "s,d,c,z" */
    double blas_dev_half;     /* TESSERA_BLAS_DEV_HALF: dimension at half the device rate */
    double blas_link_gbs;     /* TESSERA_BLAS_LINK_GBS: host <-> devices GB/s, pageable */
    double blas_overhead_us;  /* TESSERA_BLAS_OVERHEAD_US: fixed cost of one tessera call */
    double blas_margin;       /* TESSERA_BLAS_MARGIN: the devices must win by this factor */
    int blas_emulated;        /* TESSERA_BLAS_EMULATED: emulated devices count as GPUs */
    int64_t blas_potrf_n;     /* TESSERA_BLAS_POTRF_N: ?potrf_/?posv_ to the GPUs from this n */
    int64_t blas_getrf_n;     /* TESSERA_BLAS_GETRF_N: ?getrf_/?gesv_ to the GPUs from this n */
    int blas_verbose;         /* TESSERA_BLAS_VERBOSE: 1 = one summary line at exit */
    /* the distributed GEMM (comm/pgemm.c) */
    int64_t pgemm_mem;      /* TESSERA_PGEMM_MEM: panel bytes per rank, 0 = automatic */
    int64_t pgemm_chunk;    /* TESSERA_PGEMM_CHUNK: bytes received per exchange step */
    int pgemm_nccl;         /* TESSERA_PGEMM_NCCL: use NCCL inside a node when possible */
    int pgemm_nccl_streams; /* TESSERA_PGEMM_NCCL_STREAMS: 2 = pack on its own stream */
    int pgemm_pack_d2d;     /* TESSERA_PGEMM_PACK_D2D: pack from the own panel when it holds it */
    char pgemm_variant[8];  /* TESSERA_PGEMM_VARIANT: auto, c, a, b */
    int pgemm_node_ranks; /* TESSERA_PGEMM_NODE_RANKS: ranks per node for the GPU transport, 0 = real nodes */
    /* the ScaLAPACK glue libtessera_scalapack.so (scalapack_glue/route.c, trsm.c) */
    int scalapack_force;          /* TESSERA_SCALAPACK_FORCE: 1 = every call with work to tessera */
    int64_t scalapack_min_dim;    /* TESSERA_SCALAPACK_MIN_DIM: least min(m, n, k) for tessera */
    int64_t scalapack_min_volume; /* TESSERA_SCALAPACK_MIN_VOLUME: least m n k for tessera */
    int64_t scalapack_trsm_block; /* TESSERA_SCALAPACK_TRSM_BLOCK: p?trsm_'s inverted blocks */
    int scalapack_verbose; /* TESSERA_SCALAPACK_VERBOSE: 1 = summary at exit, 2 = per routine */
};

/* Fill cfg from the environment (defaults for unset or empty knobs). Returns TESS_EINVAL
 * with a message naming the variable, its value and what it accepts (the table's syntax
 * and range) when one is refused. */
int tess__config_load(struct tess__config *cfg);
/* The knobs' parser for values outside the table, so that every TESSERA_* variable has one
 * syntax (docs/knobs.md). tess__parse_int: a decimal integer, the whole string, in lo..hi:
 * 0 and *out, or < 0 (refused). tess__parse_list: "x[,x...]", 1..nmax decimal numbers,
 * each finite and in lo..hi (> lo when lo_open), into out: their count, or < 0.
 * tess__knob_env_int: getenv(name) through tess__parse_int (def when unset or empty):
 * TESS_OK, or TESS_EINVAL naming the variable, its value and the range (*out = def); for
 * readers of their own knobs such as the ScaLAPACK glue's TESSERA_SCALAPACK_*. */
int tess__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
int tess__parse_list(const char *s, double lo, double hi, bool lo_open, double *out, int nmax);
int tess__knob_env_int(const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out);
/* Value of entry i of a list of numbers (tess__parse_list) such as TESSERA_EMULATE_GFLOPS:
 * the only value of a one-value list whatever i, def beyond the list or when it is refused. */
double tess__list_double(const char *list, int i, double def);
/* TESSERA_FAULT ("dev:k[,dev:k]", "pin:N", "xport:U"; checked by tess__config_load): N for
 * key (a device index such as "1", "pin" or "xport"), 0 when it has none. */
long long tess__fault_at(const char *spec, const char *key);
/* TESSERA_FAULT names no device index at or beyond ndev (the runtime's devices, once
 * opened): TESS_OK, or TESS_EINVAL naming the knob. */
int tess__fault_check(const char *spec, int ndev);

/* ---- per-device counters (updated with relaxed atomics by workers and the cache) ---- */

struct tess__counters {
    _Atomic uint64_t tasks, stolen, steps;
    _Atomic uint64_t bytes_h2d, bytes_d2h, bytes_p2p;
    _Atomic uint64_t l1_hits, l2_hits, misses, evictions, writebacks;
    _Atomic uint64_t flops_x1k; /* flops / 1000, to stay integral */
    _Atomic uint64_t busy_ns;
    _Atomic size_t mem_peak;
};
#define TESS__COUNT(c, field, v) atomic_fetch_add_explicit(&(c)->field, (v), memory_order_relaxed)

#define TESS__MIN(a, b) ((a) < (b) ? (a) : (b))
#define TESS__MAX(a, b) ((a) > (b) ? (a) : (b))
/* ceil(a / b) for a >= 0, b > 0, without computing a + b - 1 (no overflow near INT64_MAX). */
#define TESS__CEILDIV(a, b) ((a) / (b) + ((a) % (b) != 0))

#endif /* TESS_INTERNAL_H */
