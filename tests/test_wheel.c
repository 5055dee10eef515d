/* tests/test_wheel.c: numpy's pip-wheel situation without numpy. Loads the extension
 * stand-in (tests/wheel_ext.c, linked to the wheel's BLAS stand-in tests/wheel_blas.c) with
 * dlopen RTLD_LOCAL, as python loads numpy's extension modules, and runs its checks. Run
 * under LD_PRELOAD=libtessera_blas.so by tests/test_dropin.sh (mode preload):
 * TEST_WHEEL_EXPECT=wheel: every call must run on the stand-in (the drop-in kept them on
 * the CPU); =tessera: none (the drop-in sent them to tessera). Exit 0 pass, 1 fail. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_wheel path/to/libtest_wheel_ext.so\n");
        return 1;
    }
    const char *e = getenv("TEST_WHEEL_EXPECT");
    int expect_wheel = !e || strcmp(e, "tessera") != 0;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "test_wheel: %s\n", dlerror());
        return 1;
    }
    int (*run)(int) = (int (*)(int))dlsym(h, "wheel_ext_run");
    if (!run) {
        fprintf(stderr, "test_wheel: %s\n", dlerror());
        return 1;
    }
    int f = run(expect_wheel);
    return f ? 1 : 0;
}
