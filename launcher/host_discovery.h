// Elastic mode's hosts: what a --host-discovery-script prints, run and parsed.
#pragma once

#include <string>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

// A script's output: one host a line, "host:slots" or "host" (`default_slots`, --slots-per-host); blank
// lines are skipped. On error returns false with the problem ("line 2: bad slot count in 'x:y'...") in
// `error`.
bool parse_discovered_hosts(const std::string& text, std::vector<Host>* hosts, std::string* error,
                            int default_slots = 1);

// Runs `script` through /bin/sh -c (stdout read, stderr left to the terminal) and parses what it
// prints. A script that fails, prints something malformed or outlives `timeout_seconds` (it is
// then killed, with whatever it started): false, with "host discovery script SCRIPT: problem".
bool discover_hosts(const std::string& script, std::vector<Host>* hosts, std::string* error, int default_slots = 1,
                    double timeout_seconds = 10);

}  // namespace launcher
}  // namespace kolo
