/* The libnvidia-ml.so.1 stand-in.  Like libcuda.so.1 (emu_libcuda.c) it holds no code of its own: NVML
 * lives in the libcudart.so.13 stand-in (emu_nvml.c, on the emulator's one state) and this library
 * depends on it (DT_NEEDED, found beside it through $ORIGIN), so dlsym on a libnvidia-ml.so.1 handle --
 * how nvidia-ml-py, cuda.bindings and torch reach NVML -- finds the same devices and allocations as the
 * CUDA runtime and driver.  The reference below keeps the dependency under --as-needed. */
typedef int (*nvml_fn)(void);
int nvmlInit_v2(void);

__attribute__((used)) static const nvml_fn needs_libcudart = nvmlInit_v2;
