# Precompiled headers. Most of a ktune source's compile time went to parsing the same third-party
# headers again and again: nlohmann/json.hpp (0.5 MB of templates), <QtTest> (all of QtCore) and
# the widgets' Qt, CLI11, and the standard library under them (a test file was 8 MB preprocessed,
# 27 kB of it its own). Each group of targets below parses them once. Every source still includes
# what it uses: -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds the same, only slower.

# What ktune's Qt-free libraries share (nlohmann/json.hpp comes in through ktune/registry.h,
# run_store.h, worker_protocol.h, ...).
set(KTUNE_PCH_CORE <algorithm> <chrono> <cmath> <cstdint> <cstring> <filesystem> <fstream> <functional> <map>
                   <memory> <mutex> <optional> <set> <sstream> <string> <string_view> <thread> <variant> <vector>
                   <nlohmann/json.hpp>)
# The Qt Test suites (tests/core, tests/cli; tests/widgets adds KTUNE_PCH_QT_WIDGETS).
set(KTUNE_PCH_QT_TEST ${KTUNE_PCH_CORE} <QtTest>)
# The workbench's widgets and charts.
set(KTUNE_PCH_QT_WIDGETS <QtWidgets> <QtCharts>)

# ktune_suite_precompiled_headers(OWNER_VAR TARGET HEADERS...): a suite's executables, built with
# the same flags, share one precompiled header of HEADERS: the first (OWNER_VAR empty, set to it
# here) makes it, the others reuse it.
function(ktune_suite_precompiled_headers owner_var target)
  if(${owner_var})
    target_precompile_headers(${target} REUSE_FROM ${${owner_var}})
  else()
    target_precompile_headers(${target} PRIVATE ${ARGN})
    set(${owner_var} ${target} PARENT_SCOPE)
  endif()
endfunction()

# ktune_share_precompiled_headers(FROM TARGETS...): TARGETS reuse FROM's precompiled headers,
# those that this build compiles with FROM's flags (a library's private definitions may differ:
# the headers do not read them).
function(ktune_share_precompiled_headers from)
  foreach(t ${ARGN})
    if(TARGET ${t})
      target_precompile_headers(${t} REUSE_FROM ${from})
    endif()
  endforeach()
endfunction()
