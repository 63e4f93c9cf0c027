#!/bin/sh
# Regenerates the fatbins of this folder from add.cu with nvcc (CUDA 13.0.88 made the committed ones):
# each is the .nv_fatbin section of an object file, i.e. what __cudaRegisterFatBinary's wrapper points to.
#   add_zstd.fatbin     nvcc's default: compute_90 PTX compressed with zstd (flag 0x8000) + sm_90 SASS
#   add_lz4.fatbin      -compress-mode=speed -compress-all: both entries LZ4 blocks (flag 0x2000)
#   add_plain.fatbin    -compress-mode=none: PTX text and the ELF as they are
#   add_multi.fatbin    compute_80 and compute_90 PTX (LZ4), no SASS
#   add_sass.fatbin     sm_90 SASS only (LZ4-compressed ELF): no PTX
set -e
cd "$(dirname "$0")"
t=$(mktemp -d)
build() {  # name, nvcc options...
    out=$1; shift
    nvcc "$@" -c add.cu -o "$t/$out.o"
    objcopy -O binary --only-section=.nv_fatbin "$t/$out.o" "$out.fatbin"
}
build add_zstd -arch=sm_90
build add_lz4 -arch=sm_90 -Xfatbin=-compress-mode=speed -Xfatbin=-compress-all
build add_plain -arch=sm_90 -Xfatbin=-compress-mode=none
build add_multi -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90 \
    -Xfatbin=-compress-mode=speed
build add_sass -gencode arch=compute_90,code=sm_90 -Xfatbin=-compress-mode=speed -Xfatbin=-compress-all
rm -rf "$t"
