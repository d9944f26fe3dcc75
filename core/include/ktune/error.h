#pragma once
// Errors inside the core are exceptions with messages a user can act on. Front ends map them:
// the CLI to exit codes (InputError -> 2), the GUI to a message box.
#include <stdexcept>
#include <string>

namespace ktune {

// Something the user gave us is wrong: a malformed file, an impossible space, an unknown kernel.
// The message names the culprit and what to do about it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run itself could not go on (device lost, disk full). Distinct from a failing config,
// which is a recorded Trial and never an exception that escapes the tuner.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ktune
