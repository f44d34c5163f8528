// horovodrun's --config-file: a YAML file of sections (params, autotune, timeline, stall_check,
// library_options, logging) of "key: value" lines, and a top-level controller. Each key stands for
// one of horovodrun's options, read here into the setting that option sets (launcher/setting_flags.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kolo {
namespace launcher {

// The settings `text` asks for, in the file's order (a disabled stall check last, so that it wins over
// the check's times, as in Horovod). A key with no value (null, ~ or nothing) sets nothing. False, with
// the line and the problem in `error`, for what is not horovodrun's format or not one of its keys.
bool read_config_file(const std::string& text, std::vector<std::pair<std::string, std::string>>* settings,
                      std::string* error);

}  // namespace launcher
}  // namespace kolo
