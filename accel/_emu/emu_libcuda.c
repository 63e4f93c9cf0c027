/* The libcuda.so.1 stand-in.  It holds no code of its own: the driver API lives in the
 * libcudart.so.13 stand-in (emu_driver.c, on the emulator's one state) and this library depends on
 * it (DT_NEEDED, found beside it through $ORIGIN).  dlsym on a libcuda.so.1 handle -- how torch and
 * cuda.bindings reach the driver -- searches a library's dependencies too, and a program linked
 * against libcuda.so.1 finds the functions the same way at load time, so all of them see the same
 * devices, contexts, streams and events as accel.  The reference below keeps the dependency when the
 * linker drops unused ones (--as-needed). */
typedef int (*drv_fn)(int *);
int cuDriverGetVersion(int *);

__attribute__((used)) static const drv_fn needs_libcudart = cuDriverGetVersion;
