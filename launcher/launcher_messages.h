// kolorun's own lines on standard error start "kolorun: ", to tell them from mpirun's and the ranks'.
#pragma once

#include <iostream>

namespace kolo {
namespace launcher {

inline std::ostream& say() { return std::cerr << "kolorun: "; }

}  // namespace launcher
}  // namespace kolo
