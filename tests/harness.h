/* tests/harness.h: the one test runner. A test file holds TEST(name) { ... } functions and
 * ends with TEST_MAIN(); each test says in a comment above it what behaviour it checks.
 * ASSERT* stop the current test and mark it failed, printing both values. A program exits
 * 0 when every test passed, 1 otherwise, 77 (CTest's skip code) when it called SKIP().
 * Usage: prog [name-substring] runs the matching tests only. A program run under several
 * setups of the runtime names them in a table and ends with TEST_CONFIG_MAIN (below).
 */
#ifndef TESS_TEST_HARNESS_H
#define TESS_TEST_HARNESS_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
struct test_case {
    const char *name;
    test_fn fn;
};
#define TEST_MAX 512
static struct test_case test_cases_[TEST_MAX];
static int test_ncases_;
static jmp_buf test_jmp_;
static int test_skipped_ __attribute__((unused));

#define TEST(id_)                                                   \
    static void test_##id_(void);                                   \
    __attribute__((constructor)) static void test_reg_##id_(void) { \
        if (test_ncases_ < TEST_MAX) {                              \
            test_cases_[test_ncases_].name = #id_;                  \
            test_cases_[test_ncases_++].fn = test_##id_;            \
        }                                                           \
    }                                                               \
    static void test_##id_(void)

#define TEST_FAIL_(...)                                   \
    do {                                                  \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                     \
        fprintf(stderr, "\n");                            \
        longjmp(test_jmp_, 1);                            \
    } while (0)

#define ASSERT(cond)                                         \
    do {                                                     \
        if (!(cond)) TEST_FAIL_("ASSERT(%s) failed", #cond); \
    } while (0)
#define ASSERT_MSG(cond, ...)                 \
    do {                                      \
        if (!(cond)) TEST_FAIL_(__VA_ARGS__); \
    } while (0)
#define ASSERT_EQ(a, b)                                                              \
    do {                                                                             \
        long long a_ = (long long)(a), b_ = (long long)(b);                          \
        if (a_ != b_) TEST_FAIL_("ASSERT_EQ(%s, %s): %lld != %lld", #a, #b, a_, b_); \
    } while (0)
#define ASSERT_NE(a, b)                                                       \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ == b_) TEST_FAIL_("ASSERT_NE(%s, %s): both %lld", #a, #b, a_); \
    } while (0)
#define ASSERT_GT(a, b)                                                                \
    do {                                                                               \
        long long a_ = (long long)(a), b_ = (long long)(b);                            \
        if (!(a_ > b_)) TEST_FAIL_("ASSERT_GT(%s, %s): %lld <= %lld", #a, #b, a_, b_); \
    } while (0)
#define ASSERT_OK(expr)                                       \
    do {                                                      \
        int s_ = (expr);                                      \
        if (s_ != 0) TEST_FAIL_("%s returned %d", #expr, s_); \
    } while (0)
/* Skip the whole program (exit 77) with a reason. */
#define SKIP(...)                     \
    do {                              \
        fprintf(stderr, "SKIP: ");    \
        fprintf(stderr, __VA_ARGS__); \
        fprintf(stderr, "\n");        \
        test_skipped_ = 1;            \
        longjmp(test_jmp_, 2);        \
    } while (0)

static int test_main_(int argc, char **argv) {
    volatile int failed = 0, ran = 0; /* volatile: live across longjmp */
    for (volatile int i = 0; i < test_ncases_; i++) {
        if (argc > 1 && !strstr(test_cases_[i].name, argv[1])) continue;
        ran++;
        int r = setjmp(test_jmp_);
        if (r == 0) {
            test_cases_[i].fn();
            fprintf(stderr, "ok   %s\n", test_cases_[i].name);
        } else if (r == 2) {
            return 77;
        } else {
            fprintf(stderr, "FAIL %s\n", test_cases_[i].name);
            failed++;
        }
    }
    fprintf(stderr, "%d passed, %d failed\n", ran - failed, failed);
    return failed ? 1 : (ran ? 0 : 1);
}
#define TEST_MAIN() \
    int main(int argc, char **argv) { return test_main_(argc, argv); }

/* ---- configurations ------------------------------------------------------------------------
 * A table of setups, each a struct whose first members are `const char *name` and
 * `const char *knobs` ("VAR=value VAR=value ...", no spaces inside a value), followed by what
 * that setup must show. TEST_CONFIG_MAIN(table, cur) is the program's main: `prog CONFIG
 * [name-substring]` sets CONFIG's knobs with setenv (overwriting; the runtime reads its knobs
 * at tess_init), points cur at CONFIG's entry and runs the tests. When the first argument
 * names no configuration, cur stays NULL and the tests run under the environment as it is
 * (the argument, if any, is the name filter). CTest registers prog:CONFIG with the argument
 * CONFIG (tess_add_test's CONFIGS in tests/CMakeLists.txt). */
__attribute__((unused)) static void test_set_knobs_(const char *knobs) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", knobs);
    char *save = NULL;
    for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = '\0';
        setenv(kv, eq + 1, 1);
    }
}

#define TEST_CONFIG_MAIN(table_, cur_)                                                   \
    int main(int argc, char **argv) {                                                    \
        for (size_t i_ = 0; argc > 1 && i_ < sizeof(table_) / sizeof((table_)[0]); i_++) \
            if (!strcmp(argv[1], (table_)[i_].name)) {                                   \
                (cur_) = &(table_)[i_];                                                  \
                fprintf(stderr, "configuration %s: %s\n", (cur_)->name, (cur_)->knobs);  \
                test_set_knobs_((cur_)->knobs);                                          \
                argv[1] = argv[0];                                                       \
                return test_main_(argc - 1, argv + 1);                                   \
            }                                                                            \
        return test_main_(argc, argv);                                                   \
    }

#endif
