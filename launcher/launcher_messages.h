// kolorun's own lines on standard error start "kolorun: ", to tell them from mpirun's and the ranks'.
// Each line leaves in one write(2): the ranks share kolorun's standard error, and a line written piece by piece
// could be split by theirs.
#pragma once

#include <unistd.h>

#include <sstream>
#include <string>

namespace kolo {
namespace launcher {

class Line {
 public:
  Line() { text_ << "kolorun: "; }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  ~Line() {
    const std::string s = text_.str();
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::write(STDERR_FILENO, s.data() + done, s.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  template <typename T>
  Line& operator<<(const T& value) {
    text_ << value;
    return *this;
  }

 private:
  std::ostringstream text_;
};

// say() << "what happened\n"; the line is written when the statement ends.
inline Line say() { return Line(); }

}  // namespace launcher
}  // namespace kolo
