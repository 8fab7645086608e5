-- End-to-end test of "Optimize" in headless Neovim, through the shipped editors/neovim setup.
--
--   KBLASTER_BINARY=build/cli/kblaster nvim --headless --clean -u tests/e2e/nvim_optimize.lua
--
-- For each task (default examples/tasks/vector_add; KBLASTER_E2E_TASKS="dir1 dir2" for more)
-- the task directory is copied into a temporary workspace, so that nothing in the checkout is
-- edited, and its kernel is opened. Then the same for each program, an ordinary .cu with main()
-- and no task (default tests/capture/programs/row_normalize.cu run as `64 256`;
-- KBLASTER_E2E_PROGRAMS="file.cu:arg,arg ..."), the path a CUDA engineer takes with their own
-- code: kblaster.run.args set, Optimize enabled without a task, progress through the capture,
-- and the whole program edited (main kept, no launcher) once the re-capture reproduces. The test then saves the file and waits for diagnostics,
-- hovers the kernel (performance section), lists the code actions ("Optimize K: trust this
-- project first": not trusted yet), trusts it with :KblasterTrust (an enabled "Optimize"), runs
-- kblaster.optimize through the plugin's execute(), and checks: $/progress begin ->
-- reports -> end; the workspace/applyEdit request; the result (replayed, candidates, speedup);
-- the buffer's new text, equal to the run's best.cu and different from the input; the final
-- diagnostic naming the speedup and the report.
--
-- Without a GPU the GPU results are replayed from recordings made on the GPU machine
-- (tests/optimize/recordings/loop-TASK.jsonl, or KBLASTER_E2E_RECORDINGS_DIR), keyed by each
-- candidate's source hash, and so are a program's captures, the original's and the edited
-- program's (recordings/captures, through KBLASTER_CAPTURE_REPLAY), and the model is the answer book tests/optimize/answer_book.jsonl
-- replayed by content. A replay only hits when this run takes the recorded path, so the
-- settings are those of the recording: breadth 2, depth 2, iterations 2, top-k 3, weighted,
-- seed 1, a fresh KB. KBLASTER_E2E_LIVE=1 measures on this machine's GPU instead (the real
-- harness, $KBLASTER_HARNESS or optimize.harness, and ncu, $KBLASTER_E2E_NCU or on the PATH).
-- Runs on Neovim 0.7.2 (Debian 12; ctest e2e.neovim_optimize) and on newer ones
-- (e2e.neovim_modern_optimize: tests/e2e/install-nvim-modern's), where the plugin starts the
-- client with vim.lsp.enable (0.11+) or vim.lsp.start (0.8-0.10): checked as in nvim_client.lua.

local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local root = vim.fn.fnamemodify(script, ':p:h:h:h')
local binary = os.getenv('KBLASTER_BINARY') or (root .. '/build/cli/kblaster')
local live = os.getenv('KBLASTER_E2E_LIVE') == '1'
local answer_book = os.getenv('KBLASTER_E2E_ANSWER_BOOK') or (root .. '/tests/optimize/answer_book.jsonl')
local recordings_dir = os.getenv('KBLASTER_E2E_RECORDINGS_DIR') or (root .. '/tests/optimize/recordings')
local timeout_ms = tonumber(os.getenv('KBLASTER_E2E_TIMEOUT_MS') or '') or 180000
local optimize_timeout_ms = tonumber(os.getenv('KBLASTER_E2E_OPTIMIZE_TIMEOUT_MS') or '') or (live and 1200000 or 300000)
local min_nvim = os.getenv('KBLASTER_E2E_MIN_NVIM')
local uv = vim.uv or vim.loop
local tasks = vim.split(os.getenv('KBLASTER_E2E_TASKS') or (root .. '/examples/tasks/vector_add'), '%s+', { trimempty = true })
local programs = vim.split(os.getenv('KBLASTER_E2E_PROGRAMS') or (root .. '/tests/capture/programs/row_normalize.cu:64,256+37,100'),
  '%s+', { trimempty = true })

local e2e = dofile(root .. '/tests/e2e/nvim_e2e.lua').new('e2e.neovim_optimize', timeout_ms)
local out, check, wait_for, read_file, write_file = e2e.out, e2e.check, e2e.wait_for, e2e.read_file, e2e.write_file
local failures = e2e.failures
local skipped = {}

--- Copies the files of task directory `src` (one level: a task is flat) into `dst`.
local function copy_task(src, dst)
  vim.fn.mkdir(dst, 'p')
  for _, name in ipairs(vim.fn.readdir(src)) do
    local from = src .. '/' .. name
    if vim.fn.isdirectory(from) == 0 then write_file(dst .. '/' .. name, read_file(from)) end
  end
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
end

-- What the daemon sends, for every client this test starts.
local published, progress, apply_edits, messages = {}, {}, {}, {}

local function handlers()
  local h = vim.lsp.handlers
  return {
    ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
      table.insert(published, result)
      return h['textDocument/publishDiagnostics'](err, result, ctx, config)
    end,
    ['$/progress'] = function(err, result, ctx, config)
      table.insert(progress, result)
      return h['$/progress'](err, result, ctx, config)
    end,
    ['workspace/applyEdit'] = function(err, result, ctx, config)
      table.insert(apply_edits, result)
      return h['workspace/applyEdit'](err, result, ctx, config)
    end,
    ['window/showMessage'] = function(_, result)
      table.insert(messages, result)
    end,
  }
end

--- Settings for one task's daemon: a fresh KB in the workspace, the recorded options; for a
--- program, how it is run (`args`).
local function settings_for(workspace, task_name, args, shapes)
  local s = {
    knowledgeBase = workspace .. '/kb.sqlite',
    analysis = { debounceMs = 0 },
    optimize = { breadth = 2, depth = 2, iterations = 2, topK = 3, policy = 'weighted', seed = 1,
                 outputDir = workspace .. '/runs' },
    llm = { replay = answer_book },
  }
  if args then s.run = { args = args, shapes = (shapes and #shapes > 0) and shapes or nil } end
  if live then
    s.optimize.harness = os.getenv('KBLASTER_HARNESS')
    s.ncuPath = os.getenv('KBLASTER_E2E_NCU')
  else
    s.optimize.replayHarness = recordings_dir .. '/loop-' .. task_name .. '.jsonl'
    s.ncuPath = '/nonexistent/ncu'  -- no live profiling on save, whatever the machine has
  end
  return { kblaster = s }
end

--- A target: a task folder, or a program ("file.cu:arg,arg", and "+arg,arg" for each more shape
--- every candidate must also verify on: kblaster.run.shapes).
local function target_of(spec_text, workspace)
  local t = {}
  local file, args = spec_text:match('^(.-%.cu):?(.*)$')
  if file then
    t.program = true
    t.name = vim.fn.fnamemodify(file, ':t:r')
    local runs = vim.split(args, '+', { plain = true })
    t.args = vim.split(runs[1] or '', ',', { trimempty = true })
    t.shapes = {}
    for i = 2, #runs do table.insert(t.shapes, vim.split(runs[i], ',', { trimempty = true })) end
    t.dir = workspace .. '/' .. t.name
    vim.fn.mkdir(t.dir, 'p')
    t.file = t.dir .. '/' .. vim.fn.fnamemodify(file, ':t')
    write_file(t.file, read_file(vim.fn.fnamemodify(file, ':p')))
  else
    local task_dir = vim.fn.fnamemodify(spec_text, ':p'):gsub('/$', '')
    local spec = vim.fn.json_decode(read_file(task_dir .. '/task.json'))
    t.name = spec.name or vim.fn.fnamemodify(task_dir, ':t')
    t.dir = workspace .. '/' .. t.name
    t.copy = function() copy_task(task_dir, t.dir) end
    t.file = t.dir .. '/' .. spec.kernel
  end
  return t
end

local function optimize_task(target, workspace)
  local task_name = target.name
  local recordings = recordings_dir .. '/loop-' .. task_name .. '.jsonl'
  if not live and vim.fn.filereadable(recordings) == 0 then
    -- The recordings are made on the GPU machine (tests/optimize/gpu_loop_test.sh) and
    -- committed; without them there is nothing to replay.
    table.insert(skipped, task_name)
    check(os.getenv('KBLASTER_E2E_ALLOW_MISSING') == '1', 'no recordings for %s: %s (record them on the GPU machine)',
      task_name, recordings)
    return
  end
  if target.copy then target.copy() end
  local file = target.file
  local original = read_file(file)
  local kernel = original:match('__global__%s+[^(]-([%a_][%w_]*)%s*%(')
  out('\n== %s: %s%s (%s)', task_name, file, target.program and (' run as ' .. table.concat(target.args, ' ')) or '',
    live and 'LIVE on this GPU' or 'replayed GPU results and model')
  -- A program's captures: replayed from recordings (the daemon inherits this environment).
  vim.env.KBLASTER_CAPTURE_REPLAY = (target.program and not live) and (recordings_dir .. '/captures') or nil

  local kb = require('kblaster')
  -- setup() again with this task's settings (on 0.11+ they go to vim.lsp.config).
  -- No question: this session trusts the project itself, with :KblasterTrust, once it has seen
  -- Optimize refused.
  kb.setup({ cmd = { binary, 'serve' }, handlers = handlers(), settings = settings_for(workspace, task_name, target.args, target.shapes),
             ask_trust = false })
  local first_diag, first_progress, first_edit = #published, #progress, #apply_edits
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  local client
  wait_for('the kblaster client for ' .. task_name, function()
    client = kb.clients(buf)[1]
    return client ~= nil and client.initialized
  end)
  local function request(method, params, ms)
    local done, err, result = false, nil, nil
    check(kb.call(client, 'request', method, params, function(e, r) done, err, result = true, e, r end, buf),
      '%s not sent', method)
    wait_for('the reply to ' .. method, function() return done end, ms)
    return err, result
  end
  local function diagnostics_since(n)
    for i = #published, n + 1, -1 do
      if published[i].uri == uri then return published[i] end
    end
  end

  -- Save: diagnostics (nvcc) for the saved text, no errors.
  wait_for('diagnostics after opening', function() return diagnostics_since(first_diag) ~= nil end)
  local before_save = #published
  vim.cmd('silent write')
  wait_for('diagnostics after saving', function() return diagnostics_since(before_save) ~= nil end)
  local saved = diagnostics_since(before_save)
  out('diagnostics after save: %d', #saved.diagnostics)
  for _, d in ipairs(saved.diagnostics) do
    check(d.severity ~= 1, '%s: compile error in the example: %s', task_name, d.message)
  end

  -- Hover the kernel: the performance section.
  local line, col
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local c = l:find(kernel .. '%s*%(')
    if c and l:match('__global__') and not line then line, col = i - 1, c - 1 end
  end
  if not check(line ~= nil, '%s: kernel %s not found in the buffer', task_name, tostring(kernel)) then return end
  local _, hover = request('textDocument/hover', { textDocument = { uri = uri }, position = { line = line, character = col + 1 } })
  local value = hover and hover.contents and hover.contents.value or ''
  check(value:find('**Performance**', 1, true) ~= nil and value:find('State: `', 1, true) ~= nil,
    '%s: hover has no performance section: %s', task_name, value)
  out('hover on %s: %s', kernel, (value:match('(%*%*Performance%*%*[^\n]*)') or value):sub(1, 160))

  -- Code actions before trust: Optimize is there, its title saying what to do first.
  local function code_actions()
    local _, found = request('textDocument/codeAction', {
      textDocument = { uri = uri },
      range = { start = { line = line, character = col }, ['end'] = { line = line, character = col } },
      context = { diagnostics = {} },
    })
    return found or {}
  end
  local untrusted
  for _, a in ipairs(code_actions()) do
    if a.title:find('Optimize ' .. kernel, 1, true) then untrusted = a end
  end
  check(untrusted ~= nil and untrusted.disabled == nil and untrusted.title == 'Optimize ' .. kernel .. ': trust this project first',
    '%s: before trust, Optimize does not say to trust the project first: %s', task_name, vim.inspect(untrusted))
  vim.cmd('KblasterTrust')

  -- Code actions once trusted: an enabled Optimize (the task exists, or the file is a program).
  local actions = code_actions()
  local optimize_action
  for _, a in ipairs(actions or {}) do
    out('action: %s%s', a.title, a.disabled and (' (disabled: ' .. a.disabled.reason .. ')') or '')
    if a.title == 'Optimize ' .. kernel then optimize_action = a end
  end
  check(optimize_action ~= nil and optimize_action.disabled == nil and optimize_action.command
    and optimize_action.command.command == 'kblaster.optimize',
    '%s: no enabled "Optimize %s" action: %s', task_name, kernel, vim.inspect(actions))

  -- Optimize, as :KblasterOptimize does (the plugin's execute), with a result callback.
  local done, err, result = false, nil, nil
  local started = uv.hrtime()
  kb.execute('kblaster.optimize', kernel, function(e, r) done, err, result = true, e, r end)
  wait_for('kblaster.optimize on ' .. task_name, function() return done end, optimize_timeout_ms)
  local seconds = (uv.hrtime() - started) / 1e9
  if not check(err == nil, '%s: kblaster.optimize failed: %s', task_name, vim.inspect(err)) then return end
  out('optimize result after %.1f s: %s', seconds, vim.inspect(result, { newline = ' ', indent = '' }))
  check(result.replayed == not live, '%s: replayed is %s, expected %s', task_name, tostring(result.replayed), tostring(not live))
  check(result.stopReason == 'finished', '%s: stopped because %s', task_name, tostring(result.stopReason))
  check(type(result.candidates) == 'number' and result.candidates > 0, '%s: %s candidates', task_name, tostring(result.candidates))

  -- Progress: begin, at least one report, end, in that order, on one token.
  local kinds, token = {}, nil
  for i = first_progress + 1, #progress do
    local p = progress[i]
    if p.value and p.value.kind == 'begin' and p.value.title and p.value.title:find(kernel, 1, true) then token = p.token end
    if token ~= nil and p.token == token then table.insert(kinds, p.value.kind) end
  end
  out('progress: %d messages (%s ... %s)', #kinds, kinds[1] or '-', kinds[#kinds] or '-')
  check(#kinds >= 3 and kinds[1] == 'begin' and kinds[2] == 'report' and kinds[#kinds] == 'end',
    '%s: progress %s, expected begin, reports, end', task_name, table.concat(kinds, ' '))

  -- A program: its progress went through the capture (build -> run and capture, or its replay).
  if target.program then
    local captured
    for i = first_progress + 1, #progress do
      local m = progress[i].value and progress[i].value.message or ''
      local run = vim.fn.fnamemodify(file, ':t') .. (#target.args > 0 and (' ' .. table.concat(target.args, ' ')) or '')
      local prefix = 'captured launch 0 of ' .. run
      local at = m:find(prefix, 1, true)
      local after = at and m:sub(at + #prefix, at + #prefix) or nil
      if after == '' or after == ' ' then captured = m end
    end
    check(captured ~= nil and (live or captured:find('replayed from a recording', 1, true) ~= nil),
      '%s: no progress report of the capture: %s', task_name, tostring(captured))
    out('progress: %s', tostring(captured))
    -- Each more shape captured too, and said to verify every candidate.
    for _, shape in ipairs(target.shapes) do
      local label = vim.fn.fnamemodify(file, ':t') .. ' ' .. table.concat(shape, ' ')
      local said
      for i = first_progress + 1, #progress do
        local m = progress[i].value and progress[i].value.message or ''
        if m:find('captured launch 0 of ' .. label, 1, true) and m:find('every candidate is verified on it too', 1, true) then said = m end
      end
      check(said ~= nil, '%s: no progress report of the shape %s', task_name, label)
      out('progress: %s', tostring(said))
    end
  end

  -- The edit: applied to the buffer, equal to the run's best kernel (a program: the run's copy
  -- of the program with the rewrite in place, which its re-capture checked).
  local run_dir = vim.fn.fnamemodify(result.reportPath, ':h')
  local best = read_file(run_dir .. '/' .. (target.program and vim.fn.fnamemodify(file, ':t') or 'best.cu'))
  if check(best ~= nil, '%s: no best version beside %s', task_name, tostring(result.reportPath)) then
    if result.bestSpeedup > 1 then
      check(#apply_edits > first_edit, '%s: %.2fx found but no workspace/applyEdit came', task_name, result.bestSpeedup)
      check(result.applied == true, '%s: applied is %s', task_name, tostring(result.applied))
      wait_for('the edit in the buffer', function() return buffer_text(buf) ~= original end, 5000)
      check(buffer_text(buf) == best, '%s: the buffer is not the run\'s %s', task_name, target.program and 'edited program' or 'best.cu')
      check(buffer_text(buf) ~= original, '%s: the buffer still holds the input kernel', task_name)
      if target.program then
        local text = buffer_text(buf)
        check(text:find('int main(', 1, true) ~= nil and text:find('KernelBlaster launcher', 1, true) == nil
          and text:find('kb_forward', 1, true) == nil,
          '%s: the edited program lost main() or carries the launcher', task_name)
        check(read_file(run_dir .. '/program.diff') ~= nil, '%s: no program.diff in %s', task_name, run_dir)
      end
      out('buffer now holds the best version (%d lines, %.2fx): %s', #vim.api.nvim_buf_get_lines(buf, 0, -1, false),
        result.bestSpeedup, (best:match('\n(__global__[^\n]*)') or ''):sub(1, 120))
    else
      check(#apply_edits == first_edit and buffer_text(buf) == original, '%s: nothing better, yet the buffer changed', task_name)
      out('nothing faster than the input: the buffer is unchanged')
    end
  end
  local final = diagnostics_since(first_diag)
  local message = final and final.diagnostics[1] and final.diagnostics[1].message or ''
  out('diagnostic: %s', message)
  check(message:find('optimized ' .. kernel, 1, true) ~= nil and message:find(result.reportPath, 1, true) ~= nil
    and (live or message:find('[REPLAYED]', 1, true) ~= nil),
    '%s: final diagnostic %q', task_name, message)
  if target.program and result.bestSpeedup > 1 then
    check(message:find('the same outputs', 1, true) ~= nil,
      '%s: the diagnostic does not say the program was re-captured: %q', task_name, message)
    if #target.shapes > 0 then
      check(message:find('on all ' .. (#target.shapes + 1) .. ' captured shapes', 1, true) ~= nil,
        '%s: the diagnostic does not say every shape was re-captured: %q', task_name, message)
    end
  end

  kb.call(client, 'stop')
  wait_for('the daemon for ' .. task_name .. ' to stop', function() return kb.call(client, 'is_stopped') end, 10000)
  -- So that the next task's setup() does not start a daemon for this buffer again.
  vim.cmd('bwipeout! ' .. buf)
end

local function main()
  vim.opt.runtimepath:prepend(root .. '/editors/neovim')
  vim.cmd('filetype on')
  check(vim.fn.executable(binary) == 1, 'daemon %s is not executable (set KBLASTER_BINARY)', binary)
  -- Nothing on the way may use an API this Neovim deprecates (vim.deprecate is how it says so).
  local deprecate = vim.deprecate
  vim.deprecate = function(name, ...)
    check(false, 'deprecated in %s: %s', vim.fn.execute('version'):match('NVIM v[^\n]*'), tostring(name))
    return deprecate(name, ...)
  end
  local kb = require('kblaster')
  local want = vim.fn.has('nvim-0.11') == 1 and 'vim.lsp.enable' or vim.fn.has('nvim-0.8') == 1 and 'vim.lsp.start'
    or 'vim.lsp.start_client'
  local v = vim.version()
  out('neovim %d.%d.%d: the plugin starts clients with %s', v.major, v.minor, v.patch, kb.api)
  check(kb.api == want, 'the plugin uses %s, expected %s', kb.api, want)
  if min_nvim then
    check(vim.fn.has('nvim-' .. min_nvim) == 1, 'Neovim %d.%d.%d, expected %s or newer', v.major, v.minor, v.patch, min_nvim)
  end
  local workspace = vim.fn.tempname()
  vim.fn.mkdir(workspace, 'p')
  for _, t in ipairs(tasks) do optimize_task(target_of(t, workspace), workspace) end
  for _, p in ipairs(programs) do optimize_task(target_of(p, workspace), workspace) end
  if #messages > 0 then out('message: %s', messages[1].message) end
  if #failures == 0 and os.getenv('KBLASTER_E2E_KEEP') ~= '1' then vim.fn.delete(workspace, 'rf') end
end

e2e.run_at_vim_enter(main, function()
  return #skipped > 0 and (' (SKIPPED, no recordings: ' .. table.concat(skipped, ', ') .. ')') or ''
end)
