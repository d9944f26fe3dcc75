#pragma once
namespace ktune {
const char* version();  // "0.1.0"
}
