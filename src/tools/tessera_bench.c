/* src/tools/tessera_bench.c: tessera-bench, the comparison of issues 3 and 4 in one run: on
 * the same random operands, in-core cuBLAS (the ceiling), cuBLAS-XT and tessera, every run
 * timed and verified (the GEMM table: bench_gemm.c; --routine, every level-3 routine:
 * bench_level3.c; --sequence, sequences of GEMMs on held data: bench_seq.c; --routine potrf,
 * getrf, the Cholesky and LU factorizations against in-core cuSOLVER: bench_factor.c). This
 * file owns the options, the header (machine, versions, devices, knobs) and the CUDA error
 * checks; nothing here reaches inside the library.
 * Exit status: 0 every run verified, 1 a verification failed, 2 usage, 3 a row failed with an
 * error (CUDA, cuBLAS, tessera: the call is printed and the row skipped), 77 no GPU. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "tessera.h"

const char *const kind_names[K_NKINDS] = {
    "incore", "xt", "xt-pageable", "tess", "tess-pageable", "incore-copies", "cpu-blas"};
const char *const factor_names[FR_N] = {"potrf", "getrf"};

struct opts o;

/* ---- CUDA checks: every vendor call goes through one of these; a failure prints the call
 * with file:line and is remembered for the row's note (fail_msg) ------------------------------ */

int cu_check(cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError(); /* clear non-sticky errors */
    return fail_msg(what, cudaGetErrorString(e), file, line);
}

int cb_check(cublasStatus_t s, const char *what, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return 0;
    return fail_msg(what, cublasGetStatusString(s), file, line);
}

int is_pinned(const void *p) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

void tess_row_bytes(struct row *row) {
    int nd = tess_device_count();
    for (int d = 0; d < nd; d++) {
        tess_dev_stats_t s;
        if (TS(tess_device_stats(d, &s))) continue;
        row->h2d += (double)s.bytes_h2d / row->reps, row->d2h += (double)s.bytes_d2h / row->reps;
        row->p2p += (double)s.bytes_p2p / row->reps;
    }
    row->has_bytes = 1;
}

/* ---- options ---------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: tessera-bench [-n N[,N...]] [-p s,d,c,z] [-r reps] [--devices N]\n"
        "                     [--xt-blocks B[,B...]] [--skip ROW[,ROW...]] [--time-limit S]\n"
        "                     [--csv FILE] [--verify all|ends|none] [--threads T]\n"
        "  Times C = alpha A B + beta C (square, NN, alpha 1, beta 0.5) on the same random\n"
        "  host operands with in-core cuBLAS (the ceiling), cuBLAS-XT (pinned, per block;\n"
        "  pageable with its own pinning at the best block) and tessera (pinned, pageable);\n"
        "  for n <= 8192 also in-core cuBLAS timed with its copies and the CPU BLAS\n"
        "  (TESSERA_CPU_BLAS, default libopenblas.so.0), and tessera's ratio to the better.\n"
        "  -n            sizes (default 8192)\n"
        "  -p            precisions (default d)\n"
        "  -r            timed runs per row after one warm-up; the median is reported (3)\n"
        "  --devices     GPUs cuBLAS-XT uses: the first N of those tessera uses\n"
        "                (TESSERA_DEVICES; default all visible); in-core runs on the first\n"
        "  --xt-blocks   cuBLAS-XT block sizes (default 1024,8192,12288; 1024 is XT's own)\n"
        "  --skip        rows to leave out: incore, xt, xt-pageable, tess, tess-pageable,\n"
        "                incore-copies, cpu-blas (incore-copies runs with incore only)\n"
        "  --time-limit  seconds from start; rows that would pass it are cut or skipped\n"
        "  --csv         also write every row (and each tessera device) to FILE\n"
        "  --verify      check every run (all, default), the warm-up and the last run\n"
        "                (ends), or none; the probe check costs O(n^2) per run on the CPU\n"
        "  --threads     CPU threads for filling and checking (default: CPUs available)\n"
        "  Progress goes to stderr, the tables to stdout. Exit: 0 all verified, 1 a wrong\n"
        "  result, 2 usage, 3 a row failed with an error, 77 no GPU.\n"
        "\n"
        "       tessera-bench --routine R[,R...] [-n N[,N...]] [-p s,d,c,z] [--reps reps]\n"
        "                     [--side L|R] [--uplo L|U] [--trans N|T|C] [--diag N|U]\n"
        "                     [--xt-blocks B[,B...]] [--skip incore,xt,tess] [--time-limit S]\n"
        "                     [--csv FILE] [--verify all|ends|none] [--threads T] [--devices N]\n"
        "                     [--cpu-lapack]\n"
        "  Level 3: for each precision, size and routine R (gemm, symm, hemm, syrk, herk,\n"
        "  syr2k, her2k, trmm, trsm, or all; hemm/herk/her2k in c and z only), on the same\n"
        "  random pinned host operands (square: m = n = k = N): in-core cuBLAS (operands\n"
        "  on the first GPU, _64 API), cuBLAS-XT (one row per block) and tessera; one\n"
        "  warm-up and reps timed runs per row, the median reported, every run checked by a\n"
        "  probe-vector oracle in long double (semantics of the routine: triangles, sides,\n"
        "  transposes, unit diagonal, Hermitian diagonals; SYRK-like: the other triangle of\n"
        "  C byte for byte; TRSM: the residual op(A) X t - alpha B t). TFLOP/s by the\n"
        "  LAPACK working-note counts (GEMM 2mnk, SYMM 2m^2n, SYRK n^2k, SYR2K 2n^2k,\n"
        "  TRMM/TRSM m^2n; side R with n; complex x4). With trmm it also checks whether\n"
        "  cuBLAS TRMM with C == B (in place) gives the right answer, for every option.\n"
        "  --side/--uplo/--trans/--diag  options of the routines that have them (L, L, N, N);\n"
        "                --trans is TRMM/TRSM's transa and SYRK-like trans (T is read as C for\n"
        "                herk/her2k, C as T for complex syrk/syr2k)\n"
        "  --xt-blocks   cuBLAS-XT blocks; 0 or default = XT's own (default default,8192,12288)\n"
        "  --reps        the same as -r\n"
        "  Without a GPU it exits 77; TESSERA_BENCH_NO_GPU=1 runs the tessera rows anyway\n"
        "  (on the CPU worker or TESSERA_EMULATE devices: a test of the bench and oracle).\n"
        "  potrf, getrf (factorizations: not level 3, not in all; may join level-3 routines\n"
        "  in the list; both: potrf, then getrf): per precision and size, on a random\n"
        "  pinned host matrix (seeded; the same in every row and run), rows in-core\n"
        "  (cuSOLVER's 64-bit API on the first GPU, the matrix copied there before each run,\n"
        "  the call timed), tessera (on a pinned host copy reset before each run, the whole\n"
        "  call timed) and, for n <= 8192 or with --cpu-lapack, the CPU LAPACK of\n"
        "  TESSERA_CPU_BLAS; one warm-up and reps runs, the median and tessera / in-core.\n"
        "  Each run is checked (--verify) on the first GPU by column blocks in the memory\n"
        "  left free (on the host without a GPU): info 0 and a residual <= 10 (a failed run\n"
        "  prints FAIL, exit 1).\n"
        "  potrf: Cholesky of a Hermitian positive definite matrix (entries in [-0.5, 0.5],\n"
        "  n added to the real diagonal), --uplo L (default) or U; cusolverDnXpotrf,\n"
        "  tess_?potrf, ?potrf_; TFLOP/s from n^3/3 (complex x4); the check\n"
        "  ||A0 - L L^H||_F / (||A0||_F n u) on the triangle and a positive diagonal, and\n"
        "  tessera must leave the other triangle as it was.\n"
        "  getrf: LU with partial pivoting of a general matrix (entries in [-0.5, 0.5]);\n"
        "  cusolverDnXgetrf (int64 pivots on the GPU), tess_getrf, ?getrf_; TFLOP/s from\n"
        "  2 n^3/3 (complex x4); the check: pivots LAPACK's (i <= ipiv(i) <= n) and\n"
        "  ||P^T A0 - L U||_F / (||A0||_F n u) (the interchanges applied to A0 by\n"
        "  cusolverDn<t>laswp); each row's pivots are compared with in-core's (the CPU's\n"
        "  without a GPU) and the entries that differ reported (informational).\n"
        "  --skip incore,tess,cpu-blas leaves rows out; --csv FILE gets the rows of both\n"
        "  (the routine column), with level-3 routines too FILE.potrf.csv, FILE.getrf.csv.\n"
        "  --cpu-lapack  potrf, getrf: the CPU LAPACK row at every n (slow at large n)\n"
        "\n"
        "       tessera-bench --sequence update|small [-n N[,N...]] [-p s,d,c,z] [--reps reps]\n"
        "                     [--nb NB] [--calls K] [--hold-tile T] [--skip incore,tess]\n"
        "                     [--verify all|ends|none] [--threads T] [--devices N]\n"
        "  Sequences of GEMMs on the same pinned random host data (issue 23), each row one\n"
        "  warm-up sequence (checked) and reps timed ones, the median reported, TFLOP/s\n"
        "  from the flops of the calls and the ratio to in-core cuBLAS:\n"
        "  update  C n x n, A n x NB, B NB x n; for j = NB, 2 NB, ... < n:\n"
        "          C[j:, j:] -= A[j:, :] B[:, j:] ((n - 1) / NB calls; n default 32768)\n"
        "  small   C, A, B n x n (default 1024): K times C = A B + C (K default 1000)\n"
        "  Rows: in-core cuBLAS on the first GPU (operands uploaded before the clock, the\n"
        "  calls on one stream, cudaDeviceSynchronize after the last; the baseline);\n"
        "  tessera stateless (update only: tess_gemm on the host arrays); tessera held\n"
        "  (update: tess_hold(C), and a row with C, A, B held, before the clock, the calls\n"
        "  and tess_sync(C) timed, tess_release after; small: C, A, B held for the row,\n"
        "  each timed loop ending with tess_sync(C)); held rows also give the host time of\n"
        "  the call loop alone (GEMMs on held A, B, C return once queued). The warm-up's\n"
        "  result is checked by the probe oracle on the whole sequence and, for tessera,\n"
        "  against in-core's entry by entry.\n"
        "  --nb         the update's panel width (512)\n"
        "  --calls      small's calls per sequence (1000)\n"
        "  --hold-tile  tess_hold's tile (0: the runtime's choice; default 0)\n"
        "  --skip       incore (no baseline, no comparison), tess (no stateless row)\n"
        "  --time-limit, --csv, --xt-blocks and the level-3 options do not apply.\n");
}

/* Parse "a,b,c" of positive integers into out; count or -1. */
static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || n == max || (*end && *end != ',')) return -1;
        out[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int parse_args(int argc, char **argv) {
    enum {
        O_DEVICES = 256,
        O_BLOCKS,
        O_SKIP,
        O_TIME,
        O_CSV,
        O_VERIFY,
        O_THREADS,
        O_ROUTINE,
        O_SIDE,
        O_UPLO,
        O_TRANS,
        O_DIAG,
        O_SEQUENCE,
        O_NB,
        O_CALLS,
        O_HOLD_TILE,
        O_CPU_LAPACK
    };
    static const struct option longopts[] = {{"devices", required_argument, 0, O_DEVICES},
                                             {"xt-blocks", required_argument, 0, O_BLOCKS},
                                             {"skip", required_argument, 0, O_SKIP},
                                             {"time-limit", required_argument, 0, O_TIME},
                                             {"csv", required_argument, 0, O_CSV},
                                             {"verify", required_argument, 0, O_VERIFY},
                                             {"threads", required_argument, 0, O_THREADS},
                                             {"help", no_argument, 0, 'h'},
                                             {"routine", required_argument, 0, O_ROUTINE},
                                             {"reps", required_argument, 0, 'r'},
                                             {"side", required_argument, 0, O_SIDE},
                                             {"uplo", required_argument, 0, O_UPLO},
                                             {"trans", required_argument, 0, O_TRANS},
                                             {"diag", required_argument, 0, O_DIAG},
                                             {"sequence", required_argument, 0, O_SEQUENCE},
                                             {"nb", required_argument, 0, O_NB},
                                             {"calls", required_argument, 0, O_CALLS},
                                             {"hold-tile", required_argument, 0, O_HOLD_TILE},
                                             {"cpu-lapack", no_argument, 0, O_CPU_LAPACK},
                                             {0, 0, 0, 0}};
    static const char *const routine_names[R_N] = {"gemm",  "symm",  "hemm", "syrk", "herk",
                                                   "syr2k", "her2k", "trmm", "trsm"};
    int64_t tmp[MAX_LIST];
    int c, ndev_opt = 0, cnt;
    const char *xt_blocks = NULL; /* parsed after the loop: level 3 also takes 0 / default */
    o.side = 'L', o.uplo = 'L', o.trans = 'N', o.diag = 'N';
    o.sizes[0] = 8192, o.nsizes = 1;
    o.precs[0] = TESS_D, o.nprecs = 1;
    o.reps = 3;
    o.blocks[0] = 1024, o.blocks[1] = 8192, o.blocks[2] = 12288, o.nblocks = 3;
    cpu_set_t cpus; /* the CPUs this process may run on (a cpuset may hide some) */
    long nproc = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus)
                                                               : sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = nproc < 1 ? 1 : nproc > MAX_THREADS ? MAX_THREADS : (int)nproc;
    o.seq_nb = 512, o.calls = 1000;
    int other = 0; /* options the sequences do not take */
    while ((c = getopt_long(argc, argv, "n:p:r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if ((cnt = parse_list(optarg, o.sizes, MAX_LIST)) < 1) goto bad;
            o.nsizes = cnt, o.sizes_given = 1;
            break;
        case 'p': {
            o.nprecs = 0;
            for (const char *s = optarg; *s; s++) {
                const char *at = strchr("sdcz", *s);
                if (*s == ',') continue;
                if (!at || o.nprecs == 4) goto bad;
                o.precs[o.nprecs++] = (tess_dtype_t)(at - "sdcz");
            }
            if (!o.nprecs) goto bad;
            break;
        }
        case 'r':
            o.reps = atoi(optarg);
            if (o.reps < 1 || o.reps > MAX_REPS) goto bad;
            break;
        case O_DEVICES:
            ndev_opt = atoi(optarg);
            if (ndev_opt < 1) goto bad;
            break;
        case O_BLOCKS: xt_blocks = optarg, other = 1; break;
        case O_SEQUENCE:
            if (!strcmp(optarg, "update"))
                o.sequence = SEQ_UPDATE;
            else if (!strcmp(optarg, "small"))
                o.sequence = SEQ_SMALL;
            else
                goto bad;
            break;
        case O_NB:
        case O_CALLS:
        case O_HOLD_TILE: {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            if (end == optarg || *end || v < (c == O_HOLD_TILE ? 0 : 1) || v > 1 << 30) goto bad;
            *(c == O_NB ? &o.seq_nb : c == O_CALLS ? &o.calls : &o.hold_tile) = v;
            break;
        }
        case O_ROUTINE: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int r = 0;
                if (!strcmp(t, "all")) {
                    o.routines = (1u << R_N) - 1;
                    continue;
                }
                int f = 0; /* the factorizations: not level 3, bench_factor.c */
                while (f < FR_N && strcmp(t, factor_names[f])) f++;
                if (f < FR_N) {
                    o.factors |= 1u << f;
                    continue;
                }
                while (r < R_N && strcmp(t, routine_names[r])) r++;
                if (r == R_N) {
                    fprintf(stderr, "tessera-bench: --routine: unknown routine '%s'\n", t);
                    goto bad;
                }
                o.routines |= 1u << r;
            }
            if (!o.routines && !o.factors) goto bad;
            break;
        }
        case O_SIDE:
        case O_UPLO:
        case O_TRANS:
        case O_DIAG: {
            const char *allowed = c == O_SIDE    ? "LR"
                                  : c == O_UPLO  ? "LU"
                                  : c == O_TRANS ? "NTC"
                                                 : "NU";
            char v = optarg[0] >= 'a' && optarg[0] <= 'z' ? (char)(optarg[0] - 32) : optarg[0];
            if (!v || optarg[1] || !strchr(allowed, v)) goto bad;
            *(c == O_SIDE    ? &o.side
              : c == O_UPLO  ? &o.uplo
              : c == O_TRANS ? &o.trans
                             : &o.diag) = v;
            other = 1;
            break;
        }
        case O_SKIP: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < K_NKINDS && strcmp(t, kind_names[k])) k++;
                if (k == K_NKINDS) {
                    fprintf(stderr, "tessera-bench: --skip: unknown row '%s'\n", t);
                    goto bad;
                }
                o.skip[k] = 1;
            }
            break;
        }
        case O_CPU_LAPACK: o.cpu_lapack = 1, other = 1; break;
        case O_TIME: o.time_limit = atof(optarg), other = 1; break;
        case O_CSV: o.csv = optarg, other = 1; break;
        case O_VERIFY:
            if (!strcmp(optarg, "all"))
                o.verify = V_ALL;
            else if (!strcmp(optarg, "ends"))
                o.verify = V_ENDS;
            else if (!strcmp(optarg, "none"))
                o.verify = V_NONE;
            else
                goto bad;
            break;
        case O_THREADS:
            o.threads = atoi(optarg);
            if (o.threads < 1 || o.threads > MAX_THREADS) goto bad;
            break;
        case 'h': usage(stdout); exit(0);
        default: goto bad;
        }
    }
    if (optind != argc) goto bad;
    if (o.sequence && (o.routines || o.factors || other)) {
        fprintf(stderr, "tessera-bench: --sequence takes neither --routine, --time-limit, --csv, "
                        "--xt-blocks, --cpu-lapack nor --side/--uplo/--trans/--diag\n");
        goto bad;
    }
    if (o.routines && !xt_blocks) /* level 3: XT's own block and the two the GEMM run liked */
        o.blocks[0] = 0, o.blocks[1] = 8192, o.blocks[2] = 12288, o.nblocks = 3;
    if (xt_blocks && o.routines) {
        o.nblocks = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", xt_blocks);
        for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = !strcmp(t, "default") ? 0 : strtol(t, &end, 10);
            if (strcmp(t, "default") && (end == t || *end || v < 0 || v > 1 << 20)) goto bad;
            if (o.nblocks == MAX_LIST) goto bad;
            o.blocks[o.nblocks++] = (int)v;
        }
        if (!o.nblocks) goto bad;
    } else if (xt_blocks) {
        if ((cnt = parse_list(xt_blocks, tmp, MAX_LIST)) < 1) goto bad;
        for (int i = 0; i < cnt; i++) {
            if (tmp[i] > 1 << 20) goto bad;
            o.blocks[i] = (int)tmp[i];
        }
        o.nblocks = cnt;
    }
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > ((int64_t)1 << 31) - 1) goto bad;
    return ndev_opt;
bad:
    usage(stderr);
    exit(2);
}

/* --routine: the level-3 routines asked, then the factorizations (whose status counts every row
 * of both). */
static int bench_routines(void) {
    int rc = o.routines ? bench_level3() : 0;
    return o.factors && rc != 2 ? bench_factor() : rc;
}

/* The GPUs tessera uses, as TESSERA_DEVICES selects them: all visible, or an ordinal list. */
static int tessera_gpus(int visible, int *out) {
    const char *s = getenv("TESSERA_DEVICES");
    int n = 0;
    if (!s || !*s || !strcmp(s, "all")) {
        for (int i = 0; i < visible && n < MAX_GPUS; i++) out[n++] = i;
        return n;
    }
    if (!strcmp(s, "none")) return 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            end++;
        else if (v >= 0 && v < visible && n < MAX_GPUS) {
            int dup = 0;
            for (int i = 0; i < n; i++) dup |= out[i] == (int)v;
            if (!dup) out[n++] = (int)v;
        }
        s = end;
        while (*s == ' ' || *s == ',') s++;
    }
    return n;
}

static void print_header(int argc, char **argv, int visible) {
    char host[256] = "?", date[64] = "?", cpu[256] = "?", line[512];
    time_t t = time(NULL);
    struct tm tm;
    gethostname(host, sizeof host - 1);
    if (gmtime_r(&t, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && p) {
            snprintf(cpu, sizeof cpu, "%s", p + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    }
    if (f) fclose(f);
    printf("tessera-bench:");
    for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
    printf("\n%s  host %s  cpu %s x %ld  host memory %.0f GB available\n", date, host, cpu,
           sysconf(_SC_NPROCESSORS_ONLN), mem_available() * 1e-9);
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv), (void)cudaRuntimeGetVersion(&rt);
    printf("tessera %d.%d.%d (%s)  CUDA driver %d runtime %d  cuBLAS %d.%d.%d\n",
           TESS_VERSION_MAJOR, TESS_VERSION_MINOR, TESS_VERSION_PATCH, tess_build_config(), drv, rt,
           CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
    for (int i = 0; i < visible; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        printf("  cuda:%d %s, %.1f GiB, %d SMs, pci %04x:%02x\n", i, p.name,
               p.totalGlobalMem / 1073741824.0, p.multiProcessorCount, (unsigned)p.pciDomainID,
               (unsigned)p.pciBusID);
    }
    printf("cuBLAS-XT devices:");
    for (int i = 0; i < o.ndev; i++) printf(" %d", o.dev[i]);
    printf("  in-core on cuda:%d  tessera: TESSERA_DEVICES=%s\n", o.dev[0],
           getenv("TESSERA_DEVICES") ? getenv("TESSERA_DEVICES") : "(all)");
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "TESSERA_", 8)) printf("  env %s\n", *e);
    printf("verify: %s, probe grid on %d threads; time limit: ",
           o.verify == V_ALL    ? "every run"
           : o.verify == V_ENDS ? "warm-up and last run"
                                : "off",
           o.threads);
    if (o.time_limit > 0)
        printf("%.0f s\n", o.time_limit);
    else
        printf("none\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    t_start = now();
    int ndev_opt = parse_args(argc, argv);

    int visible = 0;
    cudaError_t e = cudaGetDeviceCount(&visible);
    int no_gpu = 0;
    if ((e != cudaSuccess || visible < 1) && getenv("TESSERA_BENCH_NO_GPU") &&
        !strcmp(getenv("TESSERA_BENCH_NO_GPU"), "1")) {
        /* testing the bench and its oracle without a GPU: the tessera rows (and, in the
         * GEMM table, the CPU BLAS row) only, tessera on whatever devices the runtime finds
         * (the CPU worker, emulated devices) */
        (void)cudaGetLastError();
        fprintf(stderr, "tessera-bench: no CUDA GPU; TESSERA_BENCH_NO_GPU=1: tessera and CPU "
                        "rows only\n");
        o.ndev = 0;
        print_header(argc, argv, 0);
        if (o.sequence) return bench_seq();
        if (o.routines || o.factors) return bench_routines();
        o.skip[K_INCORE] = o.skip[K_INCORE_COPY] = o.skip[K_XT] = o.skip[K_XT_PAGE] = 1;
        no_gpu = 1;
    }
    if (!no_gpu && (e != cudaSuccess || visible < 1)) {
        fprintf(stderr, "tessera-bench: no CUDA GPU present (%s); nothing to compare\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    int gpus[MAX_GPUS], ngpus = no_gpu ? 0 : tessera_gpus(visible, gpus);
    if (!no_gpu && ngpus < 1) {
        fprintf(stderr, "tessera-bench: TESSERA_DEVICES=%s leaves tessera no GPU\n",
                getenv("TESSERA_DEVICES"));
        return 77;
    }
    if (ndev_opt > ngpus) {
        fprintf(stderr, "tessera-bench: --devices %d, but tessera uses %d GPUs\n", ndev_opt, ngpus);
        return 2;
    }
    if (!no_gpu) {
        o.ndev = ndev_opt ? ndev_opt : ngpus;
        memcpy(o.dev, gpus, sizeof gpus);
        print_header(argc, argv, visible);
        if (o.sequence) return bench_seq();                   /* --sequence: sequences of GEMMs */
        if (o.routines || o.factors) return bench_routines(); /* --routine: level 3, factors */
    }

    return bench_gemm();
}
