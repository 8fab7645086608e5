// The reference probe's reader and the sentences it is reported in (the harness's side and the
// request itself are tested against the real harness in tests/harness/reference_probe_test.cpp).
#include "engine/evaluate/reference_probe.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace kblaster::engine;

namespace {

// A reply as kblaster-harness writes it (harness/degenerate.cpp), with the request's extras.
nlohmann::json reply(bool constant, bool y_ignored) {
  nlohmann::json out{{"label", "output 0"}, {"constant", constant}, {"spread", 0.0}};
  if (constant) out["value"] = 0.0;
  nlohmann::json inputs = nlohmann::json::array();
  if (constant) {
    inputs.push_back({{"label", "input 0 (x)"}, {"checked", false}, {"why", "every output is constant"}});
  } else {
    inputs.push_back({{"label", "input 0 (x)"}, {"checked", true}, {"ignored", false}, {"change", 1.5}});
    inputs.push_back({{"label", "input 1 (y)"}, {"checked", true}, {"ignored", y_ignored}, {"change", 0.0}});
  }
  return {{"id", 3}, {"device", "cpu"}, {"seconds", {{"probe", 0.1}}}, {"draws", 3},
          {"outputs", nlohmann::json::array({out})}, {"inputs", inputs}};
}

}  // namespace

TEST_CASE("reference probe: a constant output") {
  const auto p = reference_probe_from_json(reply(true, false));
  CHECK(p.ran());
  CHECK(p.draws == 3);
  REQUIRE(p.outputs.size() == 1);
  CHECK(p.outputs[0].constant);
  CHECK(p.outputs[0].value == 0.0);
  CHECK(p.constant_output());
  CHECK(p.degenerate());
  CHECK(p.summary() == "degenerate: output constant over the declared inputs");
  REQUIRE(p.findings().size() == 1);
  CHECK(p.findings()[0] == "the reference's output 0 is always 0 (every element, on 3 draws of the declared inputs): "
                           "a kernel that writes 0 passes verification without computing anything");
  CHECK_FALSE(p.inputs[0].checked);
  CHECK(p.inputs[0].why == "every output is constant");
}

TEST_CASE("reference probe: an ignored input, and a healthy task") {
  const auto p = reference_probe_from_json(reply(false, true));
  CHECK_FALSE(p.constant_output());
  CHECK(p.degenerate());
  CHECK(p.summary() == "degenerate: output does not depend on input 1 (y)");
  REQUIRE(p.findings().size() == 1);
  CHECK(p.findings()[0].find("do not depend on input 1 (y)") != std::string::npos);

  const auto healthy = reference_probe_from_json(reply(false, false));
  CHECK_FALSE(healthy.degenerate());
  CHECK(healthy.summary().empty());
  CHECK(healthy.findings().empty());
}

TEST_CASE("reference probe: several outputs are named, a near-constant one says its spread") {
  auto j = reply(false, false);
  j["outputs"].push_back({{"label", "output 1"}, {"constant", true}, {"spread", 2e-7}});
  const auto p = reference_probe_from_json(j);
  CHECK(p.summary() == "degenerate: output 1 constant over the declared inputs");
  REQUIRE(p.findings().size() == 1);
  CHECK(p.findings()[0].find("the same on 3 draws") != std::string::npos);
  CHECK(p.findings()[0].find("2e-07") != std::string::npos);
}

TEST_CASE("reference probe: JSON round trip, errors, bad fields") {
  for (const bool constant : {true, false}) {
    const auto p = reference_probe_from_json(reply(constant, !constant));
    const auto j = to_json(p);
    CHECK(j["degenerate"] == true);
    CHECK(j["summary"] == p.summary());
    const auto back = reference_probe_from_json(j);
    CHECK(to_json(back) == j);
  }
  // The harness's error reply, and a stored probe that did not run.
  const auto e = reference_probe_from_json({{"verdict", "error"}, {"check", "torch"}, {"reason", "shape mismatch"}});
  CHECK_FALSE(e.ran());
  CHECK(e.error == "shape mismatch");
  CHECK_FALSE(e.degenerate());
  CHECK(reference_probe_from_json(to_json(e)).error == "shape mismatch");
  // A missing or mistyped field is named.
  auto bad = reply(true, false);
  bad["outputs"][0]["constant"] = "yes";
  CHECK_THROWS_AS(reference_probe_from_json(bad), std::runtime_error);
  bad = reply(true, false);
  bad.erase("inputs");
  CHECK_THROWS_WITH_AS(reference_probe_from_json(bad), doctest::Contains("inputs"), std::runtime_error);
}
