#pragma once
// The worker side of the protocol for a Backend in this process: `ktune worker` serves the
// built-in backends with it. Prepares run in parallel and are answered as they finish; measures
// run one at a time on their own thread, so prepares keep arriving while a config is timed.
#include <string>

#include "ktune/backend.h"

namespace ktune::worker {

struct ServeOptions {
  int device = 0;           // index into backend.devices()
  std::string kernel_spec;  // a user's kernel spec to offer beside the built-in families
  std::string worker_name = "ktune worker";
};

// Reads requests from `in_fd` and writes replies to `out_fd` until shutdown or EOF. Returns the
// process exit code: 0 after shutdown or EOF, 2 when ktune speaks another protocol version.
int serve(Backend& backend, const ServeOptions& options, int in_fd, int out_fd);

}  // namespace ktune::worker
