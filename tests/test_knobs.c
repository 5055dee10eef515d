/* tests/test_knobs.c: the TESSERA_* knobs at tess_init (src/base/knobs.c, node/tune.c,
 * src/base/hostblas.c). A value that is garbage, out of range or not whole is refused with
 * TESS_EINVAL and a message naming the knob and its value (integers checked in 64 bits,
 * byte counts, doubles, lists, the fault spec with its device indexes), good values are
 * taken, a tune file that is a device, huge, binary, truncated, another version's or
 * unreadable is ignored with a warning (printed only under TESSERA_VERBOSE) and never
 * hangs, and a CPU BLAS that is tessera's own drop-in fails the init instead of aborting.
 *
 * Every tess_init runs in a child process (run_init) with a deadline: a regression that
 * hangs or aborts fails its test instead of the whole run, and the CPU BLAS, resolved once
 * per process, is resolved afresh. The parent only parses (tess__config_load). Registered
 * with TESSERA_DEVICES=none TESSERA_CPU_WORKER=0 TESSERA_EMULATE_MEM=16M and
 * TESS_TEST_DROPIN, the path of the build's libtessera_blas.so.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"
#include "tessera.h"

#define DEADLINE_S 30.0 /* a child init that takes longer hangs */

/* What a child's tess_init did. */
struct outcome {
    int ended;      /* the child exited by itself before the deadline */
    int code;       /* its exit status, when it did */
    int sig;        /* the signal that ended it, 0 when none */
    int rc;         /* tess_init's status */
    int gemm_rc;    /* a 2 x 2 DGEMM after a successful init; its C right: 0 */
    char tuned[8];  /* the precisions the tile tuning has rates for ("sdcz" order) */
    char msg[512];  /* tess_last_error() after tess_init */
    char err[4096]; /* the start of the child's stderr */
};

/* The child's report through the pipe. */
struct report {
    int rc, gemm_rc;
    char tuned[8];
    char msg[512];
};

/* The precisions tess_print_info lists under the tile tuning. */
static void tuned_precisions(char out[8]) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    out[0] = 0;
    if (!f) return;
    tess_print_info(f);
    fclose(f);
    char *at = strstr(text, "GEMM tile tuning"), *end = at ? strstr(at, "\nknobs:") : NULL;
    int n = 0;
    for (const char *p = "sdcz"; at && end && *p; p++) {
        char line[8] = {'\n', ' ', ' ', *p, ' ', 0};
        char *hit = strstr(at, line);
        if (hit && hit < end) out[n++] = *p, out[n] = 0;
    }
    free(text);
}

/* tess_init with env ("NAME=value" ..., NULL) set in a child process, then a DGEMM when it
 * started; the child's stderr is kept. */
static struct outcome run_init(const char *const *env) {
    struct outcome o;
    memset(&o, 0, sizeof o);
    o.rc = o.gemm_rc = INT32_MIN;
    char errpath[] = "/tmp/tess-knobs-err-XXXXXX";
    int errfd = mkstemp(errpath), fd[2];
    if (errfd < 0 || pipe(fd)) TEST_FAIL_("mkstemp/pipe: %s", strerror(errno));
    unlink(errpath);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) TEST_FAIL_("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fd[0]);
        dup2(errfd, 2);
        for (const char *const *e = env; *e; e++) putenv((char *)*e);
        struct report r;
        memset(&r, 0, sizeof r);
        r.gemm_rc = INT32_MIN;
        r.rc = tess_init();
        snprintf(r.msg, sizeof r.msg, "%s", tess_last_error());
        if (!r.rc) {
            double A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4] = {0};
            r.gemm_rc = tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 2, 2, 2, 1.0, A, 2,
                                   B, 2, 0.0, C, 2);
            if (!r.gemm_rc && (C[0] != 1 || C[3] != 4)) r.gemm_rc = -1000;
            tuned_precisions(r.tuned);
            tess_finalize();
        }
        ssize_t w = write(fd[1], &r, sizeof r);
        /* _exit: the CUDA and BLAS libraries' exit-time destructors cost 0.1 s a child */
        _exit(w == (ssize_t)sizeof r ? 0 : 3);
    }
    close(fd[1]);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > DEADLINE_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            status = -1;
            break;
        }
        usleep(2000);
    }
    if (status != -1 && WIFEXITED(status)) o.ended = 1, o.code = WEXITSTATUS(status);
    if (status != -1 && WIFSIGNALED(status)) o.sig = WTERMSIG(status);
    struct report r;
    if (o.ended && read(fd[0], &r, sizeof r) == (ssize_t)sizeof r) {
        o.rc = r.rc;
        o.gemm_rc = r.gemm_rc;
        memcpy(o.tuned, r.tuned, sizeof o.tuned);
        memcpy(o.msg, r.msg, sizeof o.msg);
    }
    close(fd[0]);
    ssize_t n = pread(errfd, o.err, sizeof o.err - 1, 0);
    o.err[n > 0 ? n : 0] = 0;
    close(errfd);
    return o;
}

/* The child ran to its end (no hang, no signal, exit 0). */
#define ASSERT_ENDED(o, what)                                                                      \
    ASSERT_MSG((o).ended && (o).code == 0, "%s: child %s (signal %d, exit %d); stderr:\n%s", what, \
               (o).ended ? "failed"                                                                \
               : (o).sig ? "was killed"                                                            \
                         : "hung past the deadline",                                               \
               (o).sig, (o).code, (o).err)

/* tess_init with the knob name=value (and extra, NULL-terminated) is TESS_EINVAL naming
 * both, and says what is accepted. One emulated device: the init would succeed without
 * the bad value. */
static void expect_refused(const char *name, const char *value, const char *extra) {
    char kv[256];
    snprintf(kv, sizeof kv, "%s=%s", name, value);
    const char *env[] = {"TESSERA_EMULATE=1", kv, extra, NULL};
    if (!strcmp(name, "TESSERA_EMULATE")) env[0] = kv, env[1] = extra, env[2] = NULL;
    struct outcome o = run_init(env);
    ASSERT_ENDED(o, kv);
    ASSERT_MSG(o.rc == TESS_EINVAL, "%s: tess_init returned %d (%s), not TESS_EINVAL", kv, o.rc,
               o.msg);
    char quoted[256];
    snprintf(quoted, sizeof quoted, "%s=\"%s\"", name, value);
    ASSERT_MSG(strstr(o.msg, quoted) && strstr(o.msg, "accepted"),
               "%s: message does not name the knob, its value and what it accepts: %s", kv, o.msg);
    ASSERT_MSG(!o.err[0], "%s: the library printed without TESSERA_VERBOSE:\n%s", kv, o.err);
}

/* Integer knobs: values beyond int that used to wrap into range (2^32 + 1 -> 1 device,
 * BALANCE "0 or 1", STAGING_THREADS = -2^63), beyond int64, out of the table's range, or
 * with leading or trailing garbage (blanks included) are refused. */
TEST(integer_knobs_range_checked_in_64_bits) {
    expect_refused("TESSERA_EMULATE", "4294967297", NULL);
    expect_refused("TESSERA_BALANCE", "4294967297", NULL);
    expect_refused("TESSERA_STAGING_THREADS", "-9223372036854775808", NULL);
    expect_refused("TESSERA_TILE", "4294967297", NULL);
    expect_refused("TESSERA_TILE", "99999999999999999999", NULL);
    expect_refused("TESSERA_STREAMS", "9", NULL);
    expect_refused("TESSERA_TUNE", "3", NULL);
    expect_refused("TESSERA_RS", "0", NULL);
    expect_refused("TESSERA_VERBOSE", "1x", NULL);
    expect_refused("TESSERA_EMULATE_STREAMS", "0x2", NULL);
    expect_refused("TESSERA_EMULATE_JITTER", " 5", NULL);
    expect_refused("TESSERA_EMULATE_JITTER", "5 ", NULL);
    expect_refused("TESSERA_P2P", "1.0", NULL);
    expect_refused("TESSERA_CPU_WORKER", "2", NULL);
}

/* Byte knobs: NaN, infinity, 1e30 (which mapped 2^63 bytes), a leading blank or hex (3 and
 * 16 bytes: "device heap: out of host memory"), negative, unknown suffixes and values out
 * of range are refused at tess_init naming the knob, not by the allocator. */
TEST(byte_knobs_refused_naming_the_knob) {
    const char *bad[] = {"nan", "inf",    "1e30", " 3",   "0x10",   "3", "-1M",
                         "16Q", "16MiBx", "2T",   "16 M", "1.5.0M", "M", ""};
    for (int i = 0; bad[i][0]; i++) expect_refused("TESSERA_EMULATE_MEM", bad[i], NULL);
    expect_refused("TESSERA_STAGING", "9223372036854775807K", NULL);
    expect_refused("TESSERA_PGEMM_CHUNK", "0", NULL);
}

/* Doubles and lists of doubles: garbage, trailing characters, NaN and infinities (a NaN
 * rate or link silently meant "unthrottled"), negative values, empty items and lists of
 * the wrong length are refused. */
TEST(double_knobs_refuse_nan_and_garbage) {
    const char *link[] = {"nan", "inf", "-1", "abc", "1.5x", "0x10", ""};
    for (int i = 0; link[i][0]; i++) expect_refused("TESSERA_EMULATE_LINK", link[i], NULL);
    const char *gflops[] = {"abc", "nan", "2x",  "1,2,x", "1,,2", "1,",
                            ",1",  "-1",  "inf", "1, 2",  ""};
    for (int i = 0; gflops[i][0]; i++) expect_refused("TESSERA_EMULATE_GFLOPS", gflops[i], NULL);
    expect_refused("TESSERA_BLAS_CPU_GFLOPS", "1,2", NULL); /* one value or four */
    expect_refused("TESSERA_BLAS_DEV_GFLOPS", "0", NULL);   /* > 0 */
    expect_refused("TESSERA_BLAS_MARGIN", "-nan", NULL);
}

/* TESSERA_FAULT is checked at tess_init: an unknown key, a count that is no number, zero
 * or negative, a trailing or repeated entry, and a device index beyond the devices that
 * exist (7 of 2; 1 of 1) are TESS_EINVAL; before, each injected nothing and a mistyped
 * fault test passed without testing. */
TEST(fault_spec_checked_at_init) {
    const char *bad[] = {"abc",   "0:abc",  "foo:3", "0:0",  "0:-1", "0:3,", "0:3,0:4",
                         "pin:x", "xport:", ":3",    "-1:3", "0:3x", "99:3", ""};
    for (int i = 0; bad[i][0]; i++) expect_refused("TESSERA_FAULT", bad[i], NULL);
    expect_refused("TESSERA_FAULT", "7:3", "TESSERA_EMULATE=2");
    const char *one[] = {"TESSERA_EMULATE=1", "TESSERA_FAULT=1:3", NULL};
    struct outcome o = run_init(one);
    ASSERT_ENDED(o, "TESSERA_FAULT=1:3 with one device");
    ASSERT_MSG(o.rc == TESS_EINVAL && strstr(o.msg, "TESSERA_FAULT") && strstr(o.msg, "1:3"),
               "TESSERA_FAULT=1:3 with one device: %d (%s)", o.rc, o.msg);
}

/* Parse the environment in this process (no runtime): TESS_OK expected. */
static struct tess__config parsed(const char *name, const char *value) {
    struct tess__config cfg;
    setenv(name, value, 1);
    int rc = tess__config_load(&cfg);
    unsetenv(name);
    if (rc) TEST_FAIL_("%s=%s refused: %s", name, value, tess_last_error());
    return cfg;
}

/* Good values are taken with their meaning: byte suffixes (either case, KiB/KB), whole
 * numbers, fractions of a unit, lists, fault specs, auto/on/off; the defaults parse; a
 * one-value rate list applies to every device, a longer one per device. A start with a
 * valid fault spec on two devices succeeds. */
TEST(good_values_accepted) {
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "16M").emu_mem, 16 << 20);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "16m").emu_mem, 16 << 20);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "16MiB").emu_mem, 16 << 20);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "16KB").emu_mem, 16 << 10);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "8192").emu_mem, 8192);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "1.5G").emu_mem, 3LL << 29);
    ASSERT_EQ(parsed("TESSERA_EMULATE_MEM", "1T").emu_mem, 1LL << 40);
    ASSERT_EQ(parsed("TESSERA_DEVICE_MEM", "2G").dev_mem, 2LL << 30);
    ASSERT_EQ(parsed("TESSERA_STAGING", "0").staging, 0);
    ASSERT_EQ(parsed("TESSERA_TILE", "65536").tile, 65536);
    ASSERT_EQ(parsed("TESSERA_EMULATE", "31").emulate, 31);
    ASSERT_EQ(parsed("TESSERA_STAGING_THREADS", "+12").staging_threads, 12);
    ASSERT_EQ(parsed("TESSERA_CPU_WORKER", "on").cpu_worker, 1);
    ASSERT_EQ(parsed("TESSERA_CPU_WORKER", "auto").cpu_worker, -1);
    ASSERT(parsed("TESSERA_EMULATE_LINK", "1.5").emu_link_gbs == 1.5);
    ASSERT(parsed("TESSERA_BLAS_MARGIN", "2e-1").blas_margin == 0.2);
    struct tess__config c = parsed("TESSERA_EMULATE_GFLOPS", "0.1,0,8");
    ASSERT(tess__list_double(c.emu_gflops, 0, -1) == 0.1);
    ASSERT(tess__list_double(c.emu_gflops, 1, -1) == 0);
    ASSERT(tess__list_double(c.emu_gflops, 2, -1) == 8);
    ASSERT(tess__list_double(c.emu_gflops, 3, -1) == -1);
    c = parsed("TESSERA_EMULATE_GFLOPS", "4");
    ASSERT(tess__list_double(c.emu_gflops, 5, -1) == 4);
    c = parsed("TESSERA_BLAS_CPU_GFLOPS", "1,1,100,100");
    ASSERT(tess__list_double(c.blas_cpu_gflops, 3, -1) == 100);
    c = parsed("TESSERA_FAULT", "0:40,1:3");
    ASSERT_EQ(tess__fault_at(c.emu_fault, "0"), 40);
    ASSERT_EQ(tess__fault_at(c.emu_fault, "1"), 3);
    ASSERT_EQ(tess__fault_at(c.emu_fault, "2"), 0);
    ASSERT_EQ(tess__fault_at(c.emu_fault, "pin"), 0);
    c = parsed("TESSERA_FAULT", "pin:3,xport:2");
    ASSERT_EQ(tess__fault_at(c.emu_fault, "pin"), 3);
    ASSERT_EQ(tess__fault_at(c.emu_fault, "xport"), 2);
    ASSERT_EQ(tess__fault_at(c.emu_fault, "0"), 0);
    const char *env[] = {"TESSERA_EMULATE=2", "TESSERA_FAULT=0:40,1:3",
                         "TESSERA_EMULATE_GFLOPS=0,0", "TESSERA_EMULATE_LINK=0", NULL};
    struct outcome o = run_init(env);
    ASSERT_ENDED(o, "good values");
    ASSERT_MSG(o.rc == TESS_OK && o.gemm_rc == TESS_OK, "good values: init %d gemm %d (%s)", o.rc,
               o.gemm_rc, o.msg);
}

/* The parser's entry points for knobs outside the table (the ScaLAPACK glue's): the same
 * integer syntax and range checks, the default when unset, and a message naming the
 * variable; the list routine counts and refuses as the table does. */
TEST(parser_for_other_readers) {
    int64_t v = 0;
    unsetenv("TESSERA_SCALAPACK_MIN_DIM");
    ASSERT_OK(tess__knob_env_int("TESSERA_SCALAPACK_MIN_DIM", 256, 1, 1 << 30, &v));
    ASSERT_EQ(v, 256);
    setenv("TESSERA_SCALAPACK_MIN_DIM", "512", 1);
    ASSERT_OK(tess__knob_env_int("TESSERA_SCALAPACK_MIN_DIM", 256, 1, 1 << 30, &v));
    ASSERT_EQ(v, 512);
    const char *bad[] = {"4294967297", " 5", "5x", "0", ""};
    for (int i = 0; bad[i][0]; i++) {
        setenv("TESSERA_SCALAPACK_MIN_DIM", bad[i], 1);
        ASSERT_EQ(tess__knob_env_int("TESSERA_SCALAPACK_MIN_DIM", 256, 1, 1 << 30, &v),
                  TESS_EINVAL);
        ASSERT_EQ(v, 256);
        ASSERT_MSG(strstr(tess_last_error(), "TESSERA_SCALAPACK_MIN_DIM"), "%s", tess_last_error());
    }
    unsetenv("TESSERA_SCALAPACK_MIN_DIM");
    double x[4];
    ASSERT_EQ(tess__parse_list("1,2.5,3e2", 0, 1e9, false, x, 4), 3);
    ASSERT(x[0] == 1 && x[1] == 2.5 && x[2] == 300);
    ASSERT(tess__parse_list("1,2,3,4,5", 0, 1e9, false, x, 4) < 0);
    ASSERT(tess__parse_list("0", 0, 1e9, true, x, 4) < 0);
    ASSERT(tess__parse_list("nan", -INFINITY, INFINITY, false, x, 4) < 0);
    ASSERT(tess__parse_int("-9223372036854775809", INT64_MIN, INT64_MAX, &v) < 0);
}

/* The ScaLAPACK glue's knobs are rows of the table: parsed by tess__config_load with the
 * same syntax (a bad value refused naming the knob), listed by tessera-info with what they
 * accept. */
TEST(scalapack_knobs_in_the_table) {
    struct tess__config cfg;
    ASSERT_OK(tess__config_load(&cfg));
    ASSERT_EQ(cfg.scalapack_force, 0);
    ASSERT_EQ(cfg.scalapack_min_dim, 256);
    ASSERT_EQ(cfg.scalapack_min_volume, 1073741824);
    ASSERT_EQ(cfg.scalapack_trsm_block, 2048);
    ASSERT_EQ(cfg.scalapack_verbose, 0);
    setenv("TESSERA_SCALAPACK_MIN_DIM", "512", 1);
    setenv("TESSERA_SCALAPACK_MIN_VOLUME", "9223372036854775807", 1);
    ASSERT_OK(tess__config_load(&cfg));
    ASSERT_EQ(cfg.scalapack_min_dim, 512);
    ASSERT_EQ(cfg.scalapack_min_volume, INT64_MAX);
    unsetenv("TESSERA_SCALAPACK_MIN_DIM");
    unsetenv("TESSERA_SCALAPACK_MIN_VOLUME");
    const char *knob[] = {"TESSERA_SCALAPACK_FORCE", "TESSERA_SCALAPACK_MIN_DIM",
                          "TESSERA_SCALAPACK_MIN_VOLUME", "TESSERA_SCALAPACK_TRSM_BLOCK",
                          "TESSERA_SCALAPACK_VERBOSE"};
    const char *bad[] = {"2", "4294967296", "-1", "0", "3"};
    for (int i = 0; i < 5; i++) {
        const char *vals[2] = {"5x", bad[i]};
        for (int j = 0; j < 2; j++) {
            const char *v = vals[j];
            setenv(knob[i], v, 1);
            ASSERT_EQ(tess__config_load(&cfg), TESS_EINVAL);
            char quoted[96];
            snprintf(quoted, sizeof quoted, "%s=\"%s\"", knob[i], v);
            ASSERT_MSG(strstr(tess_last_error(), quoted), "%s", tess_last_error());
        }
        unsetenv(knob[i]);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ASSERT(f != NULL);
    tess_print_knobs(f);
    fclose(f);
    const char *row = strstr(text, "TESSERA_SCALAPACK_TRSM_BLOCK");
    ASSERT_MSG(row && strstr(row, "integer 1..2147483647"), "%s", text);
    free(text);
}

/* ---- the tune file ---------------------------------------------------------------------- */

static char tmpdir[64];

static const char *tmp_path(const char *name) {
    static char buf[4][128];
    static int next;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/tess-knobs-XXXXXX");
        if (!mkdtemp(tmpdir)) TEST_FAIL_("mkdtemp: %s", strerror(errno));
    }
    char *b = buf[next++ % 4];
    snprintf(b, 128, "%s/%s", tmpdir, name);
    return b;
}

/* The folder of tmp_path, removed with what is left in it. */
static void tmp_done(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (tmpdir[0] && system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", tmpdir);
    tmpdir[0] = 0;
}

static void write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "w");
    ASSERT(f && fwrite(text, 1, n, f) == n && fclose(f) == 0);
}

/* tess_init on one emulated device reading the tune file at path (TESSERA_TUNE, 1: read
 * only), warnings on or off. */
static struct outcome init_with_tune_file(const char *path, const char *tune, int verbose) {
    char file[256], tn[32];
    snprintf(file, sizeof file, "TESSERA_TUNE_FILE=%s", path);
    snprintf(tn, sizeof tn, "TESSERA_TUNE=%s", tune);
    const char *env[] = {"TESSERA_EMULATE=1", file, tn,
                         verbose ? "TESSERA_VERBOSE=1" : "TESSERA_VERBOSE=0", NULL};
    return run_init(env);
}

/* The init ended, started and computed, and warned that the file was ignored (the words
 * given) naming the knob. */
static void expect_ignored(const struct outcome *o, const char *path, const char *words) {
    ASSERT_ENDED(*o, path);
    ASSERT_MSG(o->rc == TESS_OK && o->gemm_rc == TESS_OK, "%s: init %d, gemm %d (%s)", path, o->rc,
               o->gemm_rc, o->msg);
    ASSERT_MSG(strstr(o->err, "TESSERA_TUNE_FILE") && strstr(o->err, words),
               "%s: no warning with \"%s\" naming TESSERA_TUNE_FILE; stderr:\n%s", path, words,
               o->err);
}

/* A tune file that is a device never ends (/dev/zero, /dev/full read zeros forever): the
 * init returns, ignores it with a warning under TESSERA_VERBOSE=1 and prints nothing at
 * 0; before, tess_init never returned. */
TEST(tune_file_device_does_not_hang) {
    const char *dev[] = {"/dev/zero", "/dev/full"};
    for (int i = 0; i < 2; i++) {
        struct outcome o = init_with_tune_file(dev[i], "1", 1);
        expect_ignored(&o, dev[i], "not a regular file");
        ASSERT_MSG(!o.tuned[0], "%s: rates read from a device: %s", dev[i], o.tuned);
        o = init_with_tune_file(dev[i], "1", 0);
        ASSERT_ENDED(o, dev[i]);
        ASSERT_MSG(o.rc == TESS_OK && !o.err[0], "%s quiet: init %d, stderr:\n%s", dev[i], o.rc,
                   o.err);
    }
}

static const char line_d[] = "emulated d 1e9 64:2e9 128:3e9\n";

/* A 100 MB file of random bytes (a well-formed line of ours planted after them) is over
 * the size limit: ignored whole, with a warning, read no further; under TESSERA_TUNE=2 the
 * measurement replaces it with a file of this version. A small file holding NUL bytes is
 * ignored too. Before, the whole file was read line by line and the planted line taken. */
TEST(tune_file_huge_or_binary_ignored) {
    const char *path = tmp_path("random");
    FILE *f = fopen(path, "w");
    ASSERT(f);
    static uint64_t chunk[1 << 17]; /* 1 MiB */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int mb = 0; mb < 100; mb++) {
        for (size_t i = 0; i < sizeof chunk / sizeof chunk[0]; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            chunk[i] = x;
        }
        ASSERT(fwrite(chunk, 1, sizeof chunk, f) == sizeof chunk);
    }
    ASSERT(fprintf(f, "\n%s", line_d) > 0 && fclose(f) == 0);
    struct outcome o = init_with_tune_file(path, "1", 1);
    expect_ignored(&o, path, "larger than");
    ASSERT_MSG(!o.tuned[0], "rates taken from a 100 MB random file: %s", o.tuned);
    o = init_with_tune_file(path, "2", 1);
    expect_ignored(&o, path, "larger than");
    ASSERT_MSG(!strcmp(o.tuned, "sdcz"), "TESSERA_TUNE=2 measured %s", o.tuned);
    struct stat st;
    char head[64] = {0};
    f = fopen(path, "r");
    ASSERT(f && stat(path, &st) == 0 && fread(head, 1, sizeof head - 1, f) > 0);
    fclose(f);
    ASSERT_MSG(st.st_size < 4096 && !strncmp(head, "# tessera tune file, format 2:", 30),
               "not replaced: %lld bytes, starting \"%.30s\"", (long long)st.st_size, head);
    unlink(path);

    static const char nul[] = "emulated d 1e9 64:2e9\n\0garbage\n";
    path = tmp_path("nul");
    write_file(path, nul, sizeof nul - 1);
    o = init_with_tune_file(path, "1", 1);
    expect_ignored(&o, path, "NUL");
    ASSERT_MSG(!o.tuned[0], "rates taken from a file with NUL bytes: %s", o.tuned);
    tmp_done();
}

/* A truncated file (its last line without a newline) keeps its complete lines and drops
 * the cut one, with a warning; before, the cut line was taken as if whole. */
TEST(tune_file_truncated_line_dropped) {
    const char *path = tmp_path("truncated");
    char text[256];
    int n = snprintf(text, sizeof text,
                     "# tessera tune file, format 2: header\n%semulated s 1e9 64:2", line_d);
    write_file(path, text, (size_t)n);
    struct outcome o = init_with_tune_file(path, "1", 1);
    expect_ignored(&o, path, "truncated");
    ASSERT_MSG(!strcmp(o.tuned, "d"), "precisions read: \"%s\", not \"d\"", o.tuned);
    tmp_done();
}

/* A file written by another version (a first line that is not this version's header,
 * the previous format's included) is ignored with a warning; before, its lines were read
 * as if they were this version's. */
TEST(tune_file_other_version_ignored) {
    const char *heads[] = {"# tessera tune file, format 99: <kind> ...\n",
                           "# tessera tile-kernel rates (node/tune.c): <kind> <precision> ...\n"};
    const char *path = tmp_path("version");
    for (int i = 0; i < 2; i++) {
        char text[256];
        int n = snprintf(text, sizeof text, "%s%s", heads[i], line_d);
        write_file(path, text, (size_t)n);
        struct outcome o = init_with_tune_file(path, "1", 1);
        expect_ignored(&o, path, "another version");
        ASSERT_MSG(!o.tuned[0], "rates taken from another version's file: %s", o.tuned);
    }
    /* this version's header: read */
    char text[256];
    int n = snprintf(text, sizeof text, "# tessera tune file, format 2: x\n%s", line_d);
    write_file(path, text, (size_t)n);
    struct outcome o = init_with_tune_file(path, "1", 1);
    ASSERT_ENDED(o, path);
    ASSERT_MSG(o.rc == TESS_OK && !strcmp(o.tuned, "d") && !o.err[0],
               "this version's file: init %d, precisions \"%s\", stderr:\n%s", o.rc, o.tuned,
               o.err);
    tmp_done();
}

/* A path that cannot be read (a folder; a file without read permission, unless root) is
 * ignored with a warning and, under TESSERA_TUNE=2, not replaced; before, nothing said so.
 * A path that does not exist is the first start: silent. */
TEST(tune_file_unreadable_ignored) {
    const char *dir = tmp_path("folder");
    ASSERT(mkdir(dir, 0700) == 0);
    struct outcome o = init_with_tune_file(dir, "1", 1);
    expect_ignored(&o, dir, "not a regular file");
    o = init_with_tune_file(dir, "2", 1);
    expect_ignored(&o, dir, "not a regular file");
    struct stat st;
    ASSERT(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    rmdir(dir);
    if (geteuid() != 0) {
        const char *path = tmp_path("noperm");
        write_file(path, line_d, sizeof line_d - 1);
        ASSERT(chmod(path, 0) == 0);
        o = init_with_tune_file(path, "1", 1);
        expect_ignored(&o, path, "ignored");
        unlink(path);
    }
    o = init_with_tune_file(tmp_path("absent"), "1", 1);
    ASSERT_ENDED(o, "absent file");
    ASSERT_MSG(o.rc == TESS_OK && !o.err[0], "absent file: init %d, stderr:\n%s", o.rc, o.err);
    tmp_done();
}

/* ---- the CPU BLAS ----------------------------------------------------------------------- */

/* tess_init with TESSERA_CPU_BLAS=lib and the CPU worker fails with TESS_ENOSYS naming the
 * knob and the library, and the process goes on. */
static void expect_cpu_blas_refused(const char *lib, const char *words) {
    char kv[512];
    snprintf(kv, sizeof kv, "TESSERA_CPU_BLAS=%s", lib);
    const char *env[] = {kv, "TESSERA_CPU_WORKER=1", NULL};
    struct outcome o = run_init(env);
    ASSERT_ENDED(o, kv);
    ASSERT_MSG(o.rc == TESS_ENOSYS && strstr(o.msg, "TESSERA_CPU_BLAS") && strstr(o.msg, lib) &&
                   strstr(o.msg, words),
               "%s: tess_init %d, gemm %d, message: %s", kv, o.rc, o.gemm_rc, o.msg);
    ASSERT_MSG(!o.err[0], "%s: the library printed:\n%s", kv, o.err);
}

/* TESSERA_CPU_BLAS naming tessera's own drop-in (libtessera_blas.so, whose CBLAS calls
 * come back into tessera): the init fails naming the knob; before, it started and the
 * first CPU call aborted the program (exit 134). A missing library and one without the
 * CBLAS routines fail the same way. */
TEST(cpu_blas_dropin_refused) {
    const char *dropin = getenv("TESS_TEST_DROPIN");
    ASSERT_MSG(dropin && *dropin, "TESS_TEST_DROPIN (the build's libtessera_blas.so) is unset");
    expect_cpu_blas_refused(dropin, "tessera's own");
    expect_cpu_blas_refused("/nonexistent/libtess-none.so", "cannot be loaded");
    expect_cpu_blas_refused("libm.so.6", "has no cblas_");
}

TEST_MAIN()
