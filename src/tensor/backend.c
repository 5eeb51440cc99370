/* backend.c: device dispatch. The CUDA table is linked in only by `make CUDA=1`. */
#include "tensor/backend.h"

const char *tt_device_name(tt_device dev)
{
    switch (dev) {
    case TT_CPU: return "cpu";
    case TT_CUDA: return "cuda";
    default: return "unknown";
    }
}

const tt_backend *tt_backend_get(tt_device dev)
{
    switch (dev) {
    case TT_CPU: return &tt_cpu_backend;
    default:
        tt_fatal(__FILE__, __LINE__,
                 "no backend for device '%s' in this build. HINT: build with `make CUDA=1`",
                 tt_device_name(dev));
    }
}
