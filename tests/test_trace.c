/* tests/test_trace.c: TESSERA_TRACE writes a Chrome trace-event file when the runtime stops:
 * named tracks per device worker and stream, and intervals for the copies in, the kernels
 * and the write-backs of the call's tiles; TESSERA_SUMMARY prints the per-device table.
 * Registered with TESSERA_TRACE=<file> TESSERA_SUMMARY=1 on two emulated devices. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p++) n++;
    return n;
}

/* One DGEMM of 5 x 5 tiles leaves one worker interval per task and a kernel interval per
 * k step on the stream tracks, with loads and write-backs, in valid trace-event JSON. */
TEST(trace_file_has_tracks_and_intervals) {
    const char *path = getenv("TESSERA_TRACE");
    if (!path || !*path) SKIP("TESSERA_TRACE is not set");
    remove(path);
    int n = 5 * 16;
    double *A = calloc((size_t)n * n, sizeof *A), *B = calloc((size_t)n * n, sizeof *B);
    double *C = calloc((size_t)n * n, sizeof *C);
    for (int i = 0; i < n * n; i++) A[i] = B[i] = C[i] = (double)(i % 7) - 3.0;
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, n, n, n, 1.0, A, n, B, n,
                         0.5, C, n));
    ASSERT_OK(tess_finalize());
    char *s = slurp(path);
    ASSERT_MSG(s, "no trace file at %s", path);
    ASSERT(strncmp(s, "{\"displayTimeUnit\"", 18) == 0);
    ASSERT(s[strlen(s) - 2] == '}');
    ASSERT_EQ(count(s, "\"worker (tasks)\""), 2);
    ASSERT_GT(count(s, "\"stream 0\""), 0);
    ASSERT_EQ(count(s, "\"tid\": 0, \"ts\""), 25);      /* one worker interval per task */
    ASSERT_EQ(count(s, "\"name\": \"gemm C("), 125);    /* 25 tasks x 5 k steps */
    ASSERT_EQ(count(s, "\"name\": \"D2H C("), 25);      /* each C tile written back once */
    ASSERT_EQ(count(s, "\"name\": \"H2D load C("), 25); /* and loaded once (beta != 0) */
    ASSERT_GT(count(s, "\"name\": \"H2D a C(") + count(s, "\"name\": \"P2P a C("), 0);
    ASSERT_EQ(count(s, "\"dur\": -"), 0);
    free(s);
    free(A), free(B), free(C);
}

/* "%r" in TESSERA_TRACE is the launcher's rank (one file per rank of an mpirun job), "%%" a
 * "%": rank 3 of an Open MPI launch writes <dir>/trace_r3_%.json, nothing at the literal
 * name. */
TEST(trace_file_per_rank) {
    const char *path = getenv("TESSERA_TRACE");
    if (!path || !*path) SKIP("TESSERA_TRACE is not set");
    char dir[400], spec[512], want[512], literal[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(spec, sizeof spec, "%s/trace_r%%r_%%%%.json", dir);
    snprintf(want, sizeof want, "%s/trace_r3_%%.json", dir);
    snprintf(literal, sizeof literal, "%s/trace_r%%r_%%%%.json", dir);
    remove(want);
    remove(literal);
    char *saved = strdup(path);
    setenv("TESSERA_TRACE", spec, 1);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    int n = 2 * 16;
    double *A = calloc((size_t)n * n, sizeof *A), *C = calloc((size_t)n * n, sizeof *C);
    ASSERT_OK(tess_init());
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, n, n, n, 1.0, A, n, A, n,
                         0.0, C, n));
    ASSERT_OK(tess_finalize());
    setenv("TESSERA_TRACE", saved, 1);
    unsetenv("OMPI_COMM_WORLD_RANK");
    free(saved);
    char *s = slurp(want);
    ASSERT_MSG(s, "no trace file at %s", want);
    ASSERT_EQ(count(s, "\"name\": \"gemm C("), 8); /* 4 tasks x 2 k steps */
    free(s);
    FILE *f = fopen(literal, "r");
    ASSERT_MSG(!f, "a trace at the unexpanded name %s", literal);
    free(A), free(C);
}

TEST_MAIN()
