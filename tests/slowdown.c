/* tests/slowdown.c: throttled emulated devices for the tests whose assertions need given
 * devices to take part in a call (tests/slowdown.h says why). */
#include "slowdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *env_dup(const char *name) {
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void env_put(const char *name, char *v) {
    if (v)
        setenv(name, v, 1);
    else
        unsetenv(name);
    free(v);
}

void slow_down(int nemu, int64_t tile, unsigned fast, struct knobs_saved *sv) {
    sv->gflops = env_dup("TESSERA_EMULATE_GFLOPS");
    sv->pin = env_dup("TESSERA_PIN");
    if (!sv->gflops || !*sv->gflops) {
        double t = (double)tile;
        double gflops = 2.0 * t * t * t / SLOW_KERNEL_S / 1e9;
        char list[512] = "";
        for (int i = 0; i < nemu && strlen(list) + 32 < sizeof list; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.6g", i ? "," : "",
                     (fast >> i) & 1u ? 0.0 : gflops);
        if (list[0]) setenv("TESSERA_EMULATE_GFLOPS", list, 1);
    }
    setenv("TESSERA_PIN", "0", 1);
    fprintf(stderr, "  slowed down: TESSERA_EMULATE_GFLOPS=%s TESSERA_PIN=0\n",
            getenv("TESSERA_EMULATE_GFLOPS") ? getenv("TESSERA_EMULATE_GFLOPS") : "");
}

void slow_restore(struct knobs_saved *sv) {
    env_put("TESSERA_EMULATE_GFLOPS", sv->gflops);
    env_put("TESSERA_PIN", sv->pin);
    sv->gflops = sv->pin = NULL;
}
