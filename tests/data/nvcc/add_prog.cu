// An nvcc-built host program (tests/test_emu_nvcc_program.py): -cudart shared, PTX in its fatbin.
#include <cstdio>
#include <cuda_runtime.h>
__device__ int gscale = 3;
__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = (a[i] + b[i]) * gscale;
}
#define CHECK(x) do { cudaError_t e_ = (x); if (e_) { printf("FAIL %s: %s\n", #x, cudaGetErrorName(e_)); return 1; } } while (0)
static int same(const float *c, const float *a, const float *b, int n, int s) {
    for (int i = 0; i < n; i++) if (c[i] != (a[i] + b[i]) * s) return 0;
    return 1;
}
int main() {
    const int n = 1000;
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) { a[i] = i; b[i] = 0.5f; }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * 4)); CHECK(cudaMalloc(&db, n * 4)); CHECK(cudaMalloc(&dc, n * 4));
    CHECK(cudaMemcpy(da, a, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, n * 4, cudaMemcpyHostToDevice));
    add<<<(n + 127) / 128, 128>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
    int direct = same(c, a, b, n, 3);
    int s = 5, back = 0;
    CHECK(cudaMemcpyToSymbol(gscale, &s, sizeof s));
    CHECK(cudaMemcpyFromSymbol(&back, gscale, sizeof back));
    add<<<(n + 127) / 128, 128>>>(da, db, dc, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
    int symbol = same(c, a, b, n, 5) && back == 5;
    void *addr = 0; size_t size = 0;
    CHECK(cudaGetSymbolAddress(&addr, gscale));
    CHECK(cudaGetSymbolSize(&size, gscale));
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, add));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add, 128, 0));
    add<<<1, 2048>>>(da, db, dc, n);
    cudaError_t bad = cudaGetLastError();
    cudaStream_t st; cudaGraph_t g; cudaGraphExec_t x;
    CHECK(cudaStreamCreate(&st));
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    add<<<(n + 127) / 128, 128, 0, st>>>(da, db, dc, n);
    CHECK(cudaStreamEndCapture(st, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (int i = 0; i < n; i++) a[i] = 2 * i;
    CHECK(cudaMemcpy(da, a, n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dc, 0, n * 4));
    CHECK(cudaGraphLaunch(x, st));
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
    int replay = same(c, a, b, n, 5);
    /* an explicit kernel node (cudaGraphAddKernelNode), its parameters copied when added */
    int nn = n;
    void *args[] = { &da, &db, &dc, &nn };
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add;
    kp.gridDim = dim3((n + 127) / 128);
    kp.blockDim = dim3(128);
    kp.kernelParams = args;
    cudaGraph_t g2; cudaGraphExec_t x2; cudaGraphNode_t node;
    CHECK(cudaGraphCreate(&g2, 0));
    CHECK(cudaGraphAddKernelNode(&node, g2, NULL, 0, &kp));
    nn = 0;
    CHECK(cudaGraphInstantiate(&x2, g2, 0));
    CHECK(cudaMemset(dc, 0, n * 4));
    CHECK(cudaGraphLaunch(x2, st));
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaMemcpy(c, dc, n * 4, cudaMemcpyDeviceToHost));
    int node_ok = same(c, a, b, n, 5);
    printf("direct %d symbol %d size %zu regs %d ptx %d blocks %d bad %s replay %d node %d\n", direct, symbol, size,
           fa.numRegs > 0, fa.ptxVersion, blocks, cudaGetErrorName(bad), replay, node_ok);
    return 0;
}
