// Result<T>: a value or an Error (GCC 12 has no std::expected). Status = Result<void>.
#pragma once

#include <cassert>
#include <utility>
#include <variant>

#include "core/error.h"

namespace tnk {

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace tnk

#define TNK_CONCAT_INNER(a, b) a##b
#define TNK_CONCAT(a, b) TNK_CONCAT_INNER(a, b)

// Returns the error of `expr` (a Status) from the enclosing function.
#define TNK_RETURN_IF_ERROR(expr)                                 \
  do {                                                            \
    auto tnk_status_ = (expr);                                    \
    if (!tnk_status_.ok()) return std::move(tnk_status_).error(); \
  } while (0)

// `TNK_ASSIGN_OR_RETURN(auto x, f());` declares x from f()'s value or returns its error.
#define TNK_ASSIGN_OR_RETURN(lhs, expr) TNK_ASSIGN_OR_RETURN_IMPL(TNK_CONCAT(tnk_result_, __LINE__), lhs, expr)
#define TNK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).error();   \
  lhs = std::move(tmp).value()
