#include "cpu/adasum_math.h"

#include <cfloat>
#include <cmath>

namespace kolo {

template <typename T>
void add_adasum_dots(const T* a, const T* b, int64_t n, AdasumDots* dots) {
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(a[i]);
    const double y = static_cast<double>(b[i]);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  dots->dot += dot;
  dots->a_norm2 += aa;
  dots->b_norm2 += bb;
}

AdasumCoefficients adasum_coefficients(const AdasumDots& d) {
  // Below sqrt(DBL_MIN) the division would overflow; such a vector is zero for this purpose.
  static const double kTiny = std::sqrt(DBL_MIN);
  AdasumCoefficients c;
  if (d.a_norm2 >= kTiny) c.a = 1.0 - d.dot / d.a_norm2 * 0.5;
  if (d.b_norm2 >= kTiny) c.b = 1.0 - d.dot / d.b_norm2 * 0.5;
  return c;
}

template <typename T>
void adasum_combine(const T* a, const T* b, T* out, int64_t n, const AdasumCoefficients& c) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(c.a * static_cast<double>(a[i]) + c.b * static_cast<double>(b[i]));
  }
}

template void add_adasum_dots<float>(const float*, const float*, int64_t, AdasumDots*);
template void add_adasum_dots<double>(const double*, const double*, int64_t, AdasumDots*);
template void adasum_combine<float>(const float*, const float*, float*, int64_t, const AdasumCoefficients&);
template void adasum_combine<double>(const double*, const double*, double*, int64_t, const AdasumCoefficients&);

}  // namespace kolo
