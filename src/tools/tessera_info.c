/* src/tools/tessera_info.c: tessera-info prints the devices found (kind, memory, heap,
 * streams, links), the P2P matrix, the knob table with live values and the build. */
#include <stdio.h>

#include "tessera.h"

int main(void) {
    tess_print_info(stdout);
    tess_finalize();
    return 0;
}
