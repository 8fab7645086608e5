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
  elseif r == 'no_task' then
    return string.format('kblaster: %s needs a reference to measure against: :KblasterCreateTask %s, or set '
      .. 'settings.kblaster.run.command to the program that launches it', action(data), kernel)
  elseif r == 'task_unreadable' then
    return string.format('kblaster: the task of %s cannot be read: %s', tail(data.file), clause(data.detail))
  elseif r == 'not_saved' then
    return string.format('kblaster: :write %s first: its program is built and run from the file on disk', tail(data.file))
  elseif r == 'no_gpu' then
    return string.format('kblaster: %s needs an NVIDIA GPU to measure on: %s (or replay recorded results: '
      .. 'settings.kblaster.optimize.replayHarness)', action(data), clause(data.detail) ~= '' and clause(data.detail)
      or 'this machine has none')
  elseif r == 'no_model' then
    return string.format('kblaster: the model in settings.kblaster.llm cannot be used: %s', clause(data.detail))
  end
  return nil
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
    return compiled .. ': Nsight Compute (ncu) was not found (settings.kblaster.ncuPath)'
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
