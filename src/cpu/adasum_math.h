// The arithmetic of Adasum's pairwise step on one tensor's elements, shared by every Adasum
// collective: dot product and squared norms (accumulated in double, as the coefficients need), the
// coefficients, and the combination. The algorithm around it (which pairs, which slices) is the
// collective's.
#pragma once

#include <cstdint>

namespace kolo {

struct AdasumDots {
  double dot = 0.0;      // a . b
  double a_norm2 = 0.0;  // |a|^2
  double b_norm2 = 0.0;  // |b|^2
};

struct AdasumCoefficients {
  double a = 1.0;
  double b = 1.0;
};

// Adds the dot product and squared norms of a[0..n) and b[0..n) to *dots.
template <typename T>
void add_adasum_dots(const T* a, const T* b, int64_t n, AdasumDots* dots);

// 1 - a.b / 2|a|^2 and 1 - a.b / 2|b|^2; a vector of (almost) zero norm keeps coefficient 1, so that
// combining with zeros (a joined rank) leaves the other vector as it is.
AdasumCoefficients adasum_coefficients(const AdasumDots& dots);

// out[i] = c.a * a[i] + c.b * b[i] (in double, rounded once); out may be a or b.
template <typename T>
void adasum_combine(const T* a, const T* b, T* out, int64_t n, const AdasumCoefficients& c);

}  // namespace kolo
