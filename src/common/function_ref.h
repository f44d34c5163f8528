// A non-owning reference to a callable, for a parameter called before the call returns: unlike
// std::function, it never allocates (a lambda capturing more than two pointers makes std::function
// allocate, once per call on a small op's path).
#pragma once

#include <type_traits>
#include <utility>

namespace kolo {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // `f` must outlive every call through this reference (a temporary lambda lives until the end of the
  // full expression that passes it).
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): takes lambdas as std::function does
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace kolo
