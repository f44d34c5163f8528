// A strict JSON syntax check, enough to tell that a trace file parses (tests only).
#pragma once

#include <cctype>
#include <string>

namespace kolo {
namespace testing {

class JsonCheck {
 public:
  // True when `text` is one JSON value (with optional surrounding whitespace).
  static bool valid(const std::string& text) {
    JsonCheck c(text);
    c.ws();
    if (!c.value()) return false;
    c.ws();
    return c.i_ == text.size();
  }

 private:
  explicit JsonCheck(const std::string& t) : t_(t) {}
  void ws() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool value() {
    ws();
    if (i_ >= t_.size()) return false;
    const char c = t_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    for (const char* word : {"true", "false", "null"}) {
      if (t_.compare(i_, std::string(word).size(), word) == 0) {
        i_ += std::string(word).size();
        return true;
      }
    }
    return false;
  }
  bool object() {
    ++i_;
    if (eat('}')) return true;
    do {
      ws();
      if (!string() || !eat(':') || !value()) return false;
    } while (eat(','));
    return eat('}');
  }
  bool array() {
    ++i_;
    if (eat(']')) return true;
    do {
      if (!value()) return false;
    } while (eat(','));
    return eat(']');
  }
  bool string() {
    if (i_ >= t_.size() || t_[i_] != '"') return false;
    for (++i_; i_ < t_.size(); ++i_) {
      const char c = t_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') ++i_;
    }
    return false;
  }
  bool number() {
    const size_t start = i_;
    if (t_[i_] == '-') ++i_;
    while (i_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[i_])) || t_[i_] == '.' || t_[i_] == 'e' ||
                              t_[i_] == 'E' || t_[i_] == '+' || t_[i_] == '-')) {
      ++i_;
    }
    return i_ > start;
  }

  const std::string& t_;
  size_t i_ = 0;
};

}  // namespace testing
}  // namespace kolo
