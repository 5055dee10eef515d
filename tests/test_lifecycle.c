/* tests/test_lifecycle.c: the runtime's life against the calls that use it: tess_finalize
 * and tess_init while other threads are inside calls, calls after the last finalize (the
 * runtime starts again, as before tess_init), and fork after the runtime started, also
 * while another thread calls (the child starts a runtime of its own; the parent's goes
 * on). Every call must return TESS_OK with a right C; a crash, a sanitizer report or a hang
 * (turned into a failure by a watchdog: alarm here, a bounded waitpid for a child) is the
 * failure.
 *
 * Registered with emulated devices (tests/CMakeLists.txt: TESSERA_EMULATE=3, 16 MiB each,
 * no CPU worker), label runtime, so it runs under ThreadSanitizer too (but for the fork
 * tests, which ThreadSanitizer cannot follow; nor can AddressSanitizer's allocator a fork
 * while other threads allocate).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* A hang becomes a failure with a word on stderr, not a CI timeout. */
static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "  test_lifecycle: watchdog: a call or tess_finalize hung\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

static void watchdog(unsigned seconds) {
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

/* One DGEMM case of the test: beta != 0 (C is read), 96 x 80 x 72 (several tiles of the
 * fixed rule's 64 on three devices). */
static struct ref_gemm_case dcase(uint64_t seed) {
    struct ref_gemm_case c;
    memset(&c, 0, sizeof c);
    c.dt = TESS_D;
    c.layout = TESS_COL_MAJOR;
    c.ta = TESS_NO_TRANS;
    c.tb = TESS_TRANS;
    c.m = 96, c.n = 80, c.k = 72;
    c.pad_c = 3;
    c.alpha[0] = 1.25;
    c.beta[0] = -0.5;
    c.flags = REF_TYPED;
    c.seed = seed;
    return c;
}

/* Run the case set up in d once more: C from its initial copy, call, verify. 0 if right. */
static int run_again(struct ref_gemm_data *d, char *msg, size_t len) {
    memcpy(d->C, d->C0, d->nc * sizeof(double));
    int rc = ref_gemm_call(d);
    if (rc) {
        snprintf(msg, len, "status %d (%s): %s", rc, tess_strerror(rc), tess_last_error());
        return 1;
    }
    return ref_gemm_verify(d, msg, len);
}

struct caller {
    int id;
    atomic_int *stop;
    long calls;
    int failed;
    char msg[512];
};

static void *caller_main(void *arg) {
    struct caller *c = arg;
    struct ref_gemm_case rc = dcase(1000 + (uint64_t)c->id);
    struct ref_gemm_data d;
    ref_gemm_setup(&rc, &d);
    while (!atomic_load(c->stop) && !c->failed) {
        if (run_again(&d, c->msg, sizeof c->msg)) c->failed = 1;
        c->calls++;
    }
    ref_gemm_free(&d);
    return NULL;
}

#define NCALLERS 3

/* tess_finalize and tess_init on the main thread while three threads call tess_dgemm in
 * a loop: every call returns TESS_OK with a right C (a call in flight keeps its runtime
 * until it returns; a call after the last finalize starts the runtime again, as a call
 * before tess_init does), and nothing is used after it was freed. The main thread stops
 * and starts the runtime every millisecond or two (plus the start's time) for 1.5 s and 20
 * rounds at least; the second tess_finalize of a round drops the reference of a start a
 * caller made in between. */
TEST(finalize_while_calls_run) {
    watchdog(60);
    atomic_int stop = 0;
    struct caller c[NCALLERS];
    pthread_t th[NCALLERS];
    ASSERT_OK(tess_init());
    for (int i = 0; i < NCALLERS; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].id = i;
        c[i].stop = &stop;
        ASSERT_OK(pthread_create(&th[i], NULL, caller_main, &c[i]));
    }
    double t0 = now_s(), t;
    long rounds = 0;
    uint64_t rng = 42;
    /* 1.5 s and 20 rounds at least (a loaded machine starts a runtime slowly), 6 s at most */
    while ((t = now_s() - t0) < 6.0 && rounds < 400 && (t < 1.5 || rounds < 20)) {
        sleep_us(ref_rand_int(&rng, 0, 2000));
        int fin = tess_finalize();
        int fin2 = tess_finalize();
        sleep_us(ref_rand_int(&rng, 0, 500));
        int init = tess_init();
        rounds++;
        if (fin || fin2 || init) {
            atomic_store(&stop, 1);
            for (int i = 0; i < NCALLERS; i++) pthread_join(th[i], NULL);
            ASSERT_MSG(0, "round %ld: tess_finalize %d, %d, tess_init %d (%s)", rounds, fin, fin2,
                       init, tess_last_error());
        }
    }
    atomic_store(&stop, 1);
    long calls = 0;
    for (int i = 0; i < NCALLERS; i++) {
        pthread_join(th[i], NULL);
        calls += c[i].calls;
    }
    for (int i = 0; i < NCALLERS; i++)
        ASSERT_MSG(!c[i].failed, "caller %d, call %ld: %s", i, c[i].calls, c[i].msg);
    fprintf(stderr, "  %ld finalize/init rounds, %ld calls\n", rounds, calls);
    ASSERT_GT(rounds, 4);
    ASSERT_GT(calls, NCALLERS);
    for (int i = 0; i < 4; i++) ASSERT_OK(tess_finalize());
    alarm(0);
}

/* A call after the last tess_finalize starts the runtime again (as before tess_init) and
 * is right; one tess_finalize stops that runtime, a second one is harmless. */
TEST(call_after_finalize_restarts) {
    watchdog(60);
    char msg[512];
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_device_count(), 3);
    ASSERT_OK(tess_finalize());
    struct ref_gemm_case rc = dcase(7);
    struct ref_gemm_data d;
    ref_gemm_setup(&rc, &d);
    int bad = run_again(&d, msg, sizeof msg);
    ref_gemm_free(&d);
    ASSERT_MSG(!bad, "call after tess_finalize: %s", msg);
    ASSERT_EQ(tess_device_count(), 3);
    ASSERT_OK(tess_finalize());
    ASSERT_OK(tess_finalize());
    alarm(0);
}

/* Wait up to 20 s for child pid; on timeout kill it. 1 if it ended by itself. */
static int wait_child(pid_t pid, int *status) {
    double t0 = now_s();
    while (now_s() - t0 < 20.0) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid) return 1;
        if (w < 0 && errno != EINTR) return 0;
        sleep_us(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, status, 0);
    return 0;
}

/* A child: run the case once more and leave with 0 if right (a message otherwise);
 * _exit: the parent's runtime copied into the child is left as it is (leaked). */
static void child_run(struct ref_gemm_data *d, int calls) {
    char msg[512];
    int st = 0;
    for (int i = 0; i < calls && !st; i++)
        if (run_again(d, msg, sizeof msg)) {
            fprintf(stderr, "  child, call %d: %s\n", i + 1, msg);
            st = 1;
        }
    if (!st && tess_device_count() != 3) st = 2;
    tess_finalize();
    _exit(st);
}

/* fork after tess_init and a call: the child's tess_dgemm starts a runtime of its own and
 * is right within 20 s (the parent's worker threads do not exist in the child; it used to
 * wait for them forever), and the parent's next call is right too. The parent waits for
 * the child with a bounded waitpid loop and kills it on timeout. */
TEST(fork_after_init) {
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot follow a child of a multi-threaded process that starts threads
     * (it stops it, or with die_after_fork=0 finds the parent's thread ids reused): the
     * other builds run this test */
    fprintf(stderr, "  (not under ThreadSanitizer)\n");
    return;
#endif
    watchdog(90);
    char msg[512];
    ASSERT_OK(tess_init());
    struct ref_gemm_case rc = dcase(11);
    struct ref_gemm_data d;
    ref_gemm_setup(&rc, &d);
    int bad = run_again(&d, msg, sizeof msg);
    ASSERT_MSG(!bad, "parent, before fork: %s", msg);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        alarm(0);
        child_run(&d, 2);
    }
    int status = 0, done = wait_child(pid, &status);
    bad = run_again(&d, msg, sizeof msg);
    ref_gemm_free(&d);
    ASSERT_MSG(done, "the child's call did not finish within 20 s (killed)");
    ASSERT_MSG(WIFEXITED(status), "child died of signal %d",
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ASSERT_MSG(WEXITSTATUS(status) == 0, "child exit status %d", WEXITSTATUS(status));
    ASSERT_MSG(!bad, "parent, after fork: %s", msg);
    ASSERT_OK(tess_finalize());
    alarm(0);
}

/* fork while another thread calls tess_dgemm in a loop, twelve times: each child's call
 * starts a runtime of its own and is right within 20 s, though a thread of the parent's
 * (which the child does not have) may have held a lock of the runtime or of the emulated
 * devices at the fork (the first call hung on such a lock, ev_mu, in about one fork in
 * four); the parent's calls stay right. */
TEST(fork_while_calls_run) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    /* the sanitizers' allocators are not fork-safe while other threads allocate: a child
     * of AddressSanitizer's hung in its malloc (in the test's own check, after its tessera
     * call returned); ThreadSanitizer as above */
    fprintf(stderr, "  (not under the sanitizers)\n");
    return;
#endif
    watchdog(150);
    ASSERT_OK(tess_init());
    atomic_int stop = 0;
    struct caller bg;
    memset(&bg, 0, sizeof bg);
    bg.id = 7;
    bg.stop = &stop;
    pthread_t th;
    ASSERT_OK(pthread_create(&th, NULL, caller_main, &bg));
    struct ref_gemm_case rc = dcase(21);
    struct ref_gemm_data d;
    ref_gemm_setup(&rc, &d);
    int forks = 0, done = 1, status = 0;
    uint64_t rng = 5;
    for (; forks < 12 && done && WIFEXITED(status) && WEXITSTATUS(status) == 0; forks++) {
        sleep_us(ref_rand_int(&rng, 0, 3000)); /* somewhere in the caller's call */
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) {
            alarm(0);
            child_run(&d, 1);
        }
        done = wait_child(pid, &status);
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    ref_gemm_free(&d);
    ASSERT_MSG(done, "fork %d: the child's call did not finish within 20 s (killed)", forks);
    ASSERT_MSG(WIFEXITED(status), "fork %d: child died of signal %d", forks,
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ASSERT_MSG(WEXITSTATUS(status) == 0, "fork %d: child exit status %d", forks,
               WEXITSTATUS(status));
    ASSERT_EQ(forks, 12);
    ASSERT_MSG(!bg.failed, "the parent's caller, call %ld: %s", bg.calls, bg.msg);
    ASSERT_GT(bg.calls, 0);
    ASSERT_OK(tess_finalize());
    alarm(0);
}

TEST_MAIN()
