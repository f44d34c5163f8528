// Resetting an object for reuse while keeping the memory of some of its members (strings, vectors):
// a small op's path reuses its entries, handles and requests instead of allocating them per op.
#pragma once

#include <utility>

namespace kolo {

// `obj` becomes a default-constructed T, except that each of `members` (a string or vector) keeps
// its buffer, emptied.
template <typename T, typename... Members>
void reset_keeping(T& obj, Members T::*... members) {
  T fresh;
  ((std::swap(fresh.*members, obj.*members), (fresh.*members).clear()), ...);
  obj = std::move(fresh);
}

}  // namespace kolo
