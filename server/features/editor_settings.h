// The daemon's settings as the features use them, read from the merged settings object
// (initializationOptions and workspace/didChangeConfiguration, "kblaster" section).
#pragma once

#include "engine/capture/program_capture.h"
#include "protocol/json_rpc.h"

#include <string>
#include <vector>

namespace kblaster::server {

/// Every setting the analysis, hover and optimize features read. Names in comments are the
/// keys under "kblaster" (VS Code: kblaster.KEY).
struct editor_settings {
  bool analyze = true;          // analysis.enabled: compile on open and save
  bool profile_on_save = true;  // profileOnSave: live profile when a GPU and a task allow
  int debounce_ms = 250;        // analysis.debounceMs
  std::string arch;             // arch: nvcc target, e.g. sm_90
  std::string ncu_path;         // ncuPath
  std::string kb_path;          // knowledgeBase
  std::string profile_replay;   // profile.replay: a recorded ncu details CSV served as the live profile
  std::string profile_replay_timeline;  // profile.replayTimeline: the program's recorded timeline beside it
  // optimize.*
  int breadth = 8, depth = 4, iterations = 2;
  int top_k = 3;                // optimize.topK
  std::string policy = "ucb";  // optimize.policy: ucb | weighted | mean | thompson | greedy
  long long seed = 1;           // optimize.seed: same seed and replayed results, same run
  long long budget_tokens = 0;
  double budget_gpu_seconds = 0, budget_wall_seconds = 0;
  int budget_candidates = 0;
  std::string replay_harness;   // optimize.replayHarness: recorded evaluations (no GPU needed); wins over a GPU
  double replay_pace = 0;       // optimize.replayPace: a replay waits this fraction of each recorded GPU time
  std::string harness;          // optimize.harness: the kblaster-harness executable; empty: found beside kblaster
  std::string output_dir;       // optimize.outputDir: where runs write reports; empty: beside the task
  // run.*: how the file's own program runs, for Optimize on a kernel of a program (a .cu with
  // main and no task): its launch of the kernel is captured and becomes the reference.
  std::vector<std::string> run_args;  // run.args
  std::string run_cwd;                // run.cwd; empty: the file's folder
  std::vector<std::string> run_env;   // run.env: {"NAME": "VALUE"}, as NAME=VALUE
  long run_launch = 0;                // run.launch: which launch of the kernel, from 0
  int run_timeout_s = 120;            // run.timeoutSeconds: the program's watchdog
  std::vector<std::string> run_command;  // run.command: your program, built by your build (the kernel's file need not define main)
  std::vector<std::string> run_build;    // run.build: the command that builds it, run first (e.g. ["make", "app"])
  std::vector<std::vector<std::string>> run_shapes;  // run.shapes: more argument lists a rewrite must also verify on
  // llm.*
  std::string llm_provider, llm_endpoint, llm_model, llm_key_env;
  std::string llm_replay;       // llm.replay: a cassette served instead of the model
  std::string llm_batch;        // llm.batch: files:DIR, openai:DIR or anthropic:DIR, a model that answers later
  bool llm_batch_wait = true;   // llm.batchWait: keep the run open and look for the answers (else: Optimize again)
  double llm_batch_poll_s = 60; // llm.batchPollSeconds: how often to look
};

/// Reads `settings`; a value of the wrong type or out of range keeps the default and adds a
/// sentence naming the key to `problems`.
editor_settings read_editor_settings(const protocol::json& settings, std::vector<std::string>* problems = nullptr);

/// How the run.* settings say a program is run and which launch is captured (the source and
/// the kernel are the caller's to fill in): Optimize and the profile on save share it.
engine::capture_request program_run_of(const editor_settings& settings);

}  // namespace kblaster::server
