// What the hover says of a profile on save (captured_profile_origin): the launch as the user ran
// it, and, when ncu's pages were kept from an earlier profile of the same kernel on the same data,
// that this one cost no ncu run; never that for a fresh profile.
#include "engine/capture/capture_profile.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

TEST_CASE("profile on save: its origin names the launch, and says when ncu's pages were kept") {
  capture_result c;
  c.provenance = "launch 0 of transpose.cu 1000 700";
  c.capture.grid = {32, 22, 1};
  c.capture.block = {32, 32, 1};
  c.capture.time_ms = 0.00602;
  c.cached = true;
  const auto fresh = captured_profile_origin(c, false);
  CHECK(fresh == "launch 0 of transpose.cu 1000 700 (grid (32, 22, 1), block (32, 32, 1)), captured (cached) and replayed "
                 "alone under ncu; 0.0060 ms in the program");
  const auto kept = captured_profile_origin(c, true);
  CHECK(kept.find("replayed alone under ncu (ncu's pages kept from an earlier profile of this kernel on the same captured data)") !=
        std::string::npos);
  CHECK(kept.find("0.0060 ms in the program") != std::string::npos);
  CHECK(fresh.find("kept") == std::string::npos);
}
