/* backend.c: device dispatch. The CUDA table is linked in only by `make CUDA=1`; the guard
 * device is always there (the tests use it, and so can anyone checking new code above
 * src/tensor with --set device=guard). */
#include "tensor/backend.h"

#ifdef TT_WITH_CUDA
#include "tensor/cuda/cuda.h"
#endif

#include <stdio.h>

const char *tt_device_name(tt_device dev)
{
    switch (dev) {
    case TT_CPU: return "cpu";
    case TT_CUDA: return "cuda";
    case TT_GUARD: return "guard";
    default: return "unknown";
    }
}

/* NULL when the build has no backend for dev */
static const tt_backend *lookup(tt_device dev)
{
    switch (dev) {
    case TT_CPU: return tt_cpu_table();
    case TT_GUARD: return &tt_guard_backend;
#ifdef TT_WITH_CUDA
    case TT_CUDA: return &tt_cuda_backend;
#endif
    default: return NULL;
    }
}

const tt_backend *tt_backend_get(tt_device dev)
{
    const tt_backend *be = lookup(dev);
    if (!be)
        tt_fatal(__FILE__, __LINE__,
                 "no backend for device '%s' in this build. HINT: build with `make CUDA=1`",
                 tt_device_name(dev));
    return be;
}

void *tt_tensor_host_copy(const tt_backend *be, const tt_tensor *t)
{
    size_t bytes = tt_tensor_bytes(t);
    void *host = tt_xmalloc(bytes ? bytes : 1);
    be->to_host(host, t->data, bytes);
    return host;
}

const tt_backend *tt_backend_open(tt_device dev, char *err, size_t errlen)
{
    const tt_backend *be = lookup(dev);
    if (!be) {
        tt_errorf(err, errlen, "device \"%s\": this build has no %s backend. HINT: build with "
                  "`make CUDA=1`, or set \"device\": \"cpu\"", tt_device_name(dev),
                  tt_device_name(dev));
        return NULL;
    }
    return be->available(err, errlen) ? NULL : be;
}
