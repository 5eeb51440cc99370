/* real.h: the one floating-point type of the runtime.
 *
 * The library is compiled twice from the same sources: float32 for training and float64
 * (-DTT_DOUBLE) for the gradient checks, so the code that is checked is the code that trains.
 * Write constants as R(0.5) and call the r* math macros so both builds stay warning-free under
 * -Wdouble-promotion. */
#ifndef TT_REAL_H
#define TT_REAL_H

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef TT_DOUBLE
typedef double real;
#define TT_REAL_NAME "f64"
#define R_EXP exp
#define R_LOG log
#define R_SQRT sqrt
#define R_ERF erf
#define R_FABS fabs
#else
typedef float real;
#define TT_REAL_NAME "f32"
#define R_EXP expf
#define R_LOG logf
#define R_SQRT sqrtf
#define R_ERF erff
#define R_FABS fabsf
#endif

#define R(x) ((real)(x))
#define R_INF ((real)INFINITY)

#ifdef __cplusplus
}
#endif

#endif
