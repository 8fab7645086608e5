-- kblaster.refusals: what the plugin says when the daemon refuses a command, in Neovim's terms
-- and with Neovim's commands. The daemon's error carries a typed `data.refusal`
-- (server/features/refusal.h: untrusted, no_task, task_unreadable, not_saved, no_gpu, no_model);
-- its plain `message` is for clients that know none of them. Also what a profile that profiled
-- nothing live says (kblaster.profile's liveSkippedReason).

local M = {}

local function action(data)
  if data.command == 'kblaster.profile' then
    return 'Profiling'
  end
  local verb = data.command == 'kblaster.applyTechnique' and 'Applying a technique to' or 'Optimize'
  return data.kernel and (verb .. ' ' .. data.kernel) or verb
end

local function tail(uri)
  if type(uri) ~= 'string' then
    return 'the file'
  end
  return vim.fn.fnamemodify(vim.uri_to_fname(uri), ':t')
end

local function clause(detail)
  return ((detail or ''):gsub('%.+$', ''))
end

--- The words for a refused command: 'kblaster: ...' with the command that removes the cause,
--- or nil when `err` is no refusal (the caller then shows err.message).
function M.message(err)
  local data = type(err) == 'table' and err.data or nil
  if type(data) ~= 'table' or type(data.refusal) ~= 'string' then
    return nil
  end
  local kernel = data.kernel or '<kernel>'
  local r = data.refusal
  if r == 'untrusted' then
    return string.format('kblaster: %s needs a trusted project (KernelBlaster builds and runs its code): :KblasterTrust',
      action(data))
  elseif r == 'no_task' and type(data.taskFile) == 'string' then
    -- The file's task file is another kernel's: no second one beside it.
    return string.format('kblaster: %s needs a reference to measure against: %s is the task of another kernel of %s; set '
      .. 'settings.kblaster.run.command to the program that launches it', action(data), vim.fn.fnamemodify(data.taskFile, ':t'),
      tail(data.file))
  elseif r == 'no_task' then
    return string.format('kblaster: %s needs a reference to measure against: :KblasterCreateTask %s, or set '
      .. 'settings.kblaster.run.command to the program that launches it', action(data), kernel)
  elseif r == 'task_unreadable' then
    -- The kernel's own task (the file's other kernels are not blocked by it), and where to fix it.
    return string.format('kblaster: the task of %s (%s) cannot be read: %s%s', kernel, tail(data.file), clause(data.detail),
      type(data.taskFile) == 'string' and (': :edit ' .. data.taskFile) or '')
  elseif r == 'not_saved' then
    return string.format('kblaster: :write %s first: its program is built and run from the file on disk', tail(data.file))
  elseif r == 'no_gpu' then
    -- The GPU first, then what works here: the project opened where a GPU is, or the shipped
    -- example replayed (:KblasterReplayExample).
    local example = type(data.example) == 'string' and data.example ~= ''
      and string.format(', or :KblasterReplayExample to replay the example %s (a run recorded on a GPU, labelled as replayed)',
        data.example) or ''
    return string.format('kblaster: %s needs an NVIDIA GPU to measure on: %s. Open the project on a machine with one '
      .. '(ssh there and start Neovim)%s; recorded results: settings.kblaster.optimize.replayHarness', action(data),
      clause(data.detail) ~= '' and clause(data.detail) or 'this machine has none', example)
  elseif r == 'no_model' then
    return M.model_message(data)
  end
  return nil
end

--- no_model in Neovim's words: the provider setting, the key's variable and where it must be
--- set (the environment Neovim started the daemon in), once.
function M.model_message(data)
  local model = type(data.model) == 'string' and ('the model ' .. data.model) or 'the model in settings.kblaster.llm'
  if data.reason ~= 'no_key' or type(data.keyEnv) ~= 'string' then
    return string.format('kblaster: %s cannot be used: %s', model, clause(data.detail))
  end
  local text = string.format('kblaster: %s cannot be used: its API key is read from $%s (settings.kblaster.llm.provider is %s%s), '
    .. 'which is not set in the environment the daemon runs in (the one Neovim was started from).', model, data.keyEnv,
    data.provider or 'openai', data.providerFrom == 'default' and ', the default' or '')
  if type(data.suggestedProvider) == 'string' then
    text = text .. string.format(' %s is an %s model: set settings.kblaster.llm.provider to %q (its key: $%s).', data.model,
      data.suggestedProvider == 'anthropic' and 'Anthropic' or 'OpenAI', data.suggestedProvider,
      data.suggestedKeyEnv or data.keyEnv)
  else
    text = text .. ' Export it before starting Neovim, or name another variable in settings.kblaster.llm.apiKeyEnv.'
  end
  return text
end

--- The end of kblaster.optimize (or kblaster.replayExample): "done" only for a run that ran; a
--- run stopped by an error says what stopped it; a replayed figure is not "measured".
function M.run_end(title, result)
  if type(result) ~= 'table' then
    return nil
  end
  local report = result.reportPath and (' (report: ' .. result.reportPath .. ')') or ''
  local stop = type(result.stopReason) == 'string' and result.stopReason or ''
  if result.error or stop:match('^error') then
    local why = clause(result.error or stop:gsub('^error:%s*', ''))
    return string.format('kblaster: %s stopped before any result: %s%s', title, why, report), vim.log.levels.WARN
  end
  if stop == 'waiting' then
    return string.format("kblaster: %s: waiting for the model's answers; Optimize again resumes the run%s", title, report),
      vim.log.levels.INFO
  end
  local how = result.replayed and ('replayed from a recording' .. (result.recordedOn and (' made on an ' .. result.recordedOn) or '')
    .. ', not measured here') or 'measured'
  local x = type(result.bestSpeedup) == 'number' and result.bestSpeedup or 1
  local found = x > 1 and string.format('%.2fx faster, %s', x, how) or string.format('no faster version found (%s)', how)
  return string.format('kblaster: %s done: %s%s', title, found, report), vim.log.levels.INFO
end

--- The self-test's answer in words.
function M.self_test(result)
  local steps = type(result) == 'table' and result.completedSteps or nil
  if type(result) == 'table' and result.cancelled then
    return string.format('kblaster: self-test cancelled after %d steps', steps or 0)
  end
  return steps and string.format('kblaster: self-test passed: the daemon ran %d steps with progress and answered', steps)
    or 'kblaster: self-test finished: the daemon answered'
end

--- What to say after a kblaster.profile that made no live profile; nil when it made one.
function M.profile_note(result, file)
  if type(result) ~= 'table' or result.live then
    return nil
  end
  local reason = result.liveSkippedReason
  local compiled = string.format('kblaster: compiled %s, not profiled', file)
  if reason == 'no_gpu' then
    return compiled .. ': this machine has no NVIDIA GPU (registers, spills and occupancy are in the hover)'
  elseif reason == 'no_ncu' then
    return compiled .. ': Nsight Compute (ncu) was not found: set settings.kblaster.ncuPath'
  elseif reason == 'does_not_compile' then
    return string.format('kblaster: %s does not compile (see the diagnostics)', file)
  elseif reason == 'no_task' then
    return compiled .. ': it has no task and no main() (:KblasterCreateTask)'
  elseif result.liveSkipped then
    return compiled .. ': ' .. clause(result.liveSkipped)
  end
  return nil
end

return M
