#!/usr/bin/env bash
# tests/test_install.sh: installs the build tree into a temporary prefix, then builds a
# consumer project against it twice, through find_package(tessera) and through
# pkg-config, and runs both. Args: build dir, source dir.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/tessera.h"
test -x "$tmp/prefix/bin/tessera-info"
test -n "$(find "$tmp/prefix" -name 'libtessera_blas.so*' | head -1)"  # the drop-in library
cmake -S "$src/tests/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm" >/dev/null
TESSERA_DEVICES=none LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64:${LD_LIBRARY_PATH:-}" "$tmp/cm/consumer"
pcdir=$(dirname "$(find "$tmp/prefix" -name tessera.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs tessera)
cc -o "$tmp/consumer-pc" "$src/tests/consumer/consumer.c" $flags
TESSERA_DEVICES=none LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib64:${LD_LIBRARY_PATH:-}" "$tmp/consumer-pc"
echo "install: ok"
