-- End-to-end test with Neovim's built-in LSP client, through the shipped editors/neovim setup.
--
--   KBLASTER_BINARY=build/cli/kblaster nvim --headless --clean -u tests/e2e/nvim_client.lua
--
-- Opens examples/matmul/matmul.cu (or $KBLASTER_E2E_FILE), asks the daemon for document symbols
-- and for a hover on the templated kernel's name, checks the answers against the file itself
-- (names, kinds, lines, the signature and template parameter in the hover), shuts the daemon
-- down and exits 0, or 1 on any mismatch, error or timeout. It prints what the daemon answered
-- in a readable form, which is also what scripts/demo shows.
-- Runs on Neovim 0.7.2 (Debian 12: no vim.fs, no `nvim -l`, no vim.lsp.start; ctest e2e.neovim)
-- and on newer ones (e2e.neovim_modern: tests/e2e/install-nvim-modern's), and checks that the
-- plugin took this version's start path: vim.lsp.enable on 0.11+, vim.lsp.start on 0.8-0.10,
-- vim.lsp.start_client on 0.7. KBLASTER_E2E_MIN_NVIM=0.11 fails an older Neovim.
--
-- Workspace trust, as a user meets it: the plugin asks once whether to trust the project (the
-- answer here is "Not now"), the session runs untrusted (diagnostics, hovers, actions work; a
-- profile is refused with how to trust it), then :KblasterTrust, and the next save profiles
-- (from the recorded ncu report profile.replay names, where this machine has no GPU).

local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local root = vim.fn.fnamemodify(script, ':p:h:h:h')
local binary = os.getenv('KBLASTER_BINARY') or (root .. '/build/cli/kblaster')
local source = os.getenv('KBLASTER_E2E_FILE') or (root .. '/examples/matmul/matmul.cu')
-- The session saves the file: it works on a private copy, so that the checkout is never written
-- and two sessions (Neovim 0.7 and the newest, run in parallel by ctest) never race on one file.
local file = vim.fn.tempname() .. '/' .. vim.fn.fnamemodify(source, ':t')
vim.fn.mkdir(vim.fn.fnamemodify(file, ':h'), 'p')
vim.fn.writefile(vim.fn.readfile(source, 'b'), file, 'b')
local timeout_ms = tonumber(os.getenv('KBLASTER_E2E_TIMEOUT_MS') or '') or 15000
-- The kernel the hover is asked about: matmul_tiled, else the file's first __global__ kernel.
local hover_name = os.getenv('KBLASTER_E2E_HOVER')
local min_nvim = os.getenv('KBLASTER_E2E_MIN_NVIM')
local profile_replay = root .. '/tests/fixtures/ncu-h100/matmul_tiled.details.csv'

local failures = {}

local function out(fmt, ...)
  io.stdout:write(string.format(fmt, ...) .. '\n')
end

local function check(ok, fmt, ...)
  if not ok then
    local msg = string.format(fmt, ...)
    table.insert(failures, msg)
    io.stderr:write('FAIL: ' .. msg .. '\n')
  end
  return ok
end

local function finish()
  if #failures == 0 then
    out('e2e.neovim: all checks passed')
    vim.cmd('qall!')
  else
    io.stderr:write(string.format('e2e.neovim: %d check(s) failed\n', #failures))
    vim.cmd('cquit 1')
  end
end

local function wait_for(what, predicate)
  if not vim.wait(timeout_ms, predicate, 20) then
    error(string.format('timed out after %d ms waiting for %s', timeout_ms, what), 0)
  end
end

-- --- what the file says: every definition the daemon should report -------------------------

--- The definitions in `lines` (1-based Lua list of strings): for each name, the 0-based line
--- and column of its name, the line of a `template <...>` header right above, the line of the
--- closing brace at column 0, and the signature (text up to the opening brace).
local function definitions(lines)
  local found = {}
  local i = 1
  while i <= #lines do
    local line = lines[i]
    local qualifier = line:match('^%s*(__global__)') or line:match('^%s*(__device__)')
    -- A host function: a definition at column 0 that is neither __global__ nor __device__.
    if not qualifier and (line:match('^extern%s+"C"') or line:match('^[%a_][%w_:<>]*[%s%*&]+[%a_][%w_]*%s*%(')) then
      qualifier = 'host'
    end
    local name_col, name = line:match('()([%a_][%w_]*)%s*%(')
    if qualifier and name and not line:match('^%s*//') and not line:match(';%s*$') then
      local def = { name = name, qualifier = qualifier, line = i - 1, col = name_col - 1 }
      if i > 1 and lines[i - 1]:match('^%s*template%s*<') then
        def.template_line = i - 2
      end
      local sig = {}
      local j = i
      while j <= #lines do
        local brace = lines[j]:find('{', 1, true)
        table.insert(sig, brace and lines[j]:sub(1, brace - 1) or lines[j])
        if brace then break end
        j = j + 1
      end
      def.signature = table.concat(sig, ' '):gsub('%s+', ' '):gsub('%s+$', '')
      while j <= #lines and lines[j] ~= '}' do j = j + 1 end
      def.end_line = j - 1
      table.insert(found, def)
      i = j
    end
    i = i + 1
  end
  return found
end

local function squash(s)
  return (s:gsub('%s+', ''))
end

--- The Neovim version as "0.12.4".
local function nvim_version()
  local v = vim.version()
  return string.format('%d.%d.%d', v.major, v.minor, v.patch)
end

--- The start path the plugin must take on this Neovim.
local function expected_api()
  if vim.fn.has('nvim-0.11') == 1 then return 'vim.lsp.enable' end
  if vim.fn.has('nvim-0.8') == 1 then return 'vim.lsp.start' end
  return 'vim.lsp.start_client'
end

local function uv_realpath(path)
  return (vim.uv or vim.loop).fs_realpath(path) or path
end

local function range_str(r)
  return string.format('%d:%d-%d:%d', r.start.line + 1, r.start.character + 1, r['end'].line + 1,
    r['end'].character + 1)
end

-- --- the session ---------------------------------------------------------------------------

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
  if min_nvim then
    check(vim.fn.has('nvim-' .. min_nvim) == 1, 'Neovim %s (%s), expected %s or newer', nvim_version(),
      vim.v.progpath, min_nvim)
  end

  local exit_code, init_result
  local published, messages = {}, {}
  -- The trust question, answered "Not now" (the default vim.ui.select would wait for a key).
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { items = items, prompt = opts.prompt })
    on_choice('Not now', 2)
  end
  local kb = require('kblaster')
  kb.setup({
    cmd = { binary, 'serve' },
    settings = { kblaster = { profile = { replay = profile_replay } } },
    -- Count what the daemon publishes, then let Neovim's own handlers show it.
    handlers = {
      ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
        table.insert(published, result)
        return vim.lsp.handlers['textDocument/publishDiagnostics'](err, result, ctx, config)
      end,
      ['window/showMessage'] = function(_, result)
        table.insert(messages, result)
      end,
    },
    on_init = function(_, result) init_result = result end,
    on_exit = function(code) exit_code = code end,
  })

  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'cuda', 'filetype of %s is %q, not cuda', file, vim.bo[buf].filetype)

  local client
  wait_for('the kblaster client to initialize', function()
    client = kb.clients(buf)[1]
    return client ~= nil and client.initialized
  end)
  -- The start path: the plugin's own word for it, and the traces each path leaves.
  out('neovim %s: client started with %s', nvim_version(), kb.api)
  check(kb.api == expected_api(), 'the plugin started the client with %s, expected %s on Neovim %s', kb.api,
    expected_api(), nvim_version())
  if kb.api == 'vim.lsp.enable' then
    local resolved = vim.lsp.config[kb.config.name]
    check(resolved ~= nil and resolved.cmd[1] == binary and type(resolved.root_dir) == 'function',
      'vim.lsp.config[%q] is %s', kb.config.name, vim.inspect(resolved))
    local name = kb.config.name
    local enabled = vim.lsp.is_enabled and vim.lsp.is_enabled(name) or (vim.lsp._enabled_configs or {})[name] ~= nil
    check(enabled, '%s is not enabled in vim.lsp', name)
  end
  check(#kb.clients() == 1, '%d kblaster clients, expected one', #kb.clients())
  check(client.config.root_dir == kb.find_root(file), 'root_dir %s, expected %s', tostring(client.config.root_dir),
    kb.find_root(file))
  local caps = client.server_capabilities
  local info = init_result.serverInfo or {}
  out('daemon: %s %s (%s)', tostring(info.name), tostring(info.version), binary)
  check(info.name == 'kblaster', 'serverInfo.name is %s', vim.inspect(info.name))
  check(caps.documentSymbolProvider == true, 'documentSymbolProvider is %s', vim.inspect(caps.documentSymbolProvider))
  check(caps.hoverProvider == true, 'hoverProvider is %s', vim.inspect(caps.hoverProvider))
  local sync = caps.textDocumentSync or {}
  check(type(sync) == 'table' and sync.openClose == true and sync.change == 2,
    'textDocumentSync is %s, expected openClose and incremental change', vim.inspect(sync))
  local commands = (caps.executeCommandProvider or {}).commands or {}
  check(vim.tbl_contains(commands, 'kblaster.selfTest'), 'executeCommandProvider.commands is %s',
    vim.inspect(commands))
  -- Neovim 0.7 speaks utf-16 only; 0.10+ offers utf-8, utf-16 and utf-32 and uses the answer.
  check(caps.positionEncoding == nil and client.offset_encoding == 'utf-16'
    or caps.positionEncoding == client.offset_encoding,
    'positionEncoding is %s, the client uses %s', vim.inspect(caps.positionEncoding), tostring(client.offset_encoding))

  local function request(method, params)
    local done, err, result = false, nil, nil
    local ok = kb.call(client, 'request', method, params, function(e, r)
      done, err, result = true, e, r
    end, buf)
    check(ok, '%s was not sent', method)
    wait_for('the reply to ' .. method, function() return done end)
    return err, result
  end

  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local expected = definitions(lines)
  local uri = vim.uri_from_bufnr(buf)

  -- Document symbols: exactly the file's definitions, with their kinds, details and lines.
  local err, symbols = request('textDocument/documentSymbol', { textDocument = { uri = uri } })
  check(err == nil, 'documentSymbol error: %s', vim.inspect(err))
  symbols = symbols or {}
  out('\n%s: %d symbols', vim.fn.fnamemodify(file, ':~:.'), #symbols)
  local by_name = {}
  for _, s in ipairs(symbols) do
    local detail = (s.detail or ''):gsub('%s+', ' ')
    if #detail > 64 then detail = detail:sub(1, 61) .. '...' end
    out('  line %-3d %-14s %-8s lines %-6s %s', s.selectionRange.start.line + 1, s.name,
      s.kind == 12 and 'function' or ('kind ' .. tostring(s.kind)),
      (s.range.start.line + 1) .. '-' .. (s.range['end'].line + 1), detail)
    check(by_name[s.name] == nil, 'symbol %s reported twice', s.name)
    by_name[s.name] = s
  end
  check(#symbols == #expected, '%d symbols, expected %d (%s)', #symbols, #expected,
    table.concat(vim.tbl_map(function(d) return d.name end, expected), ', '))
  for _, d in ipairs(expected) do
    local s = by_name[d.name]
    if check(s ~= nil, 'no symbol for %s (%s at line %d)', d.name, d.qualifier, d.line + 1) then
      check(s.kind == 12, '%s: kind %s, expected 12 (Function)', d.name, vim.inspect(s.kind))
      check(type(s.detail) == 'string' and s.detail:sub(1, #d.qualifier) == d.qualifier,
        '%s: detail %s should start with %s', d.name, vim.inspect(s.detail), d.qualifier)
      local sel = s.selectionRange
      check(sel.start.line == d.line and sel.start.character == d.col and sel['end'].line == d.line
        and sel['end'].character == d.col + #d.name,
        '%s: selectionRange %s, expected the name at %d:%d-%d:%d', d.name, range_str(sel),
        d.line + 1, d.col + 1, d.line + 1, d.col + #d.name + 1)
      local first = d.template_line or d.line
      check(s.range.start.line == first or s.range.start.line == d.line,
        '%s: range starts on line %d, expected %d', d.name, s.range.start.line + 1, first + 1)
      local e = s.range['end']
      check((e.line == d.end_line and e.character >= 1) or (e.line == d.end_line + 1 and e.character == 0),
        '%s: range ends at %d:%d, expected after the closing brace on line %d', d.name, e.line + 1,
        e.character + 1, d.end_line + 1)
    end
  end

  -- Hover on the templated kernel's name: its signature in a cuda block, template included.
  local target
  for _, d in ipairs(expected) do
    if d.name == (hover_name or 'matmul_tiled') then target = d end
  end
  if not target and not hover_name then
    for _, d in ipairs(expected) do
      if not target and d.qualifier == '__global__' then target = d end
    end
  end
  hover_name = target and target.name or hover_name or 'matmul_tiled'
  if check(target ~= nil, 'no definition of %s in %s', hover_name, file) then
    local pos = { line = target.line, character = target.col + 2 }
    local herr, hover = request('textDocument/hover', { textDocument = { uri = uri }, position = pos })
    check(herr == nil, 'hover error: %s', vim.inspect(herr))
    local contents = hover and hover.contents or {}
    local value = type(contents) == 'table' and contents.value or ''
    out('\nhover on %s (line %d):\n%s', hover_name, target.line + 1, value)
    check(contents.kind == 'markdown', 'hover kind %s, expected markdown', vim.inspect(contents.kind))
    check(value:find('```cuda', 1, true) ~= nil, 'hover has no ```cuda block')
    check(squash(value):find(squash(target.signature), 1, true) ~= nil,
      'hover does not contain the signature %q', target.signature)
    if target.template_line then
      local header = lines[target.template_line + 1]:match('^%s*(template%s*<.->)')
      check(squash(value):find(squash(header), 1, true) ~= nil,
        'hover does not list the template parameters %q', header)
    end
    local r = hover and hover.range
    check(r ~= nil and r.start.line == target.line and r.start.character == target.col
      and r['end'].character == target.col + #hover_name,
      'hover range %s, expected the name', r and range_str(r) or 'nil')
  end

  -- Hover away from any kernel: null.
  local blank
  for i, l in ipairs(lines) do
    if l:match('^%s*$') then blank = i - 1 break end
  end
  if blank then
    local nerr, none = request('textDocument/hover',
      { textDocument = { uri = uri }, position = { line = blank, character = 0 } })
    check(nerr == nil and none == nil, 'hover on blank line %d: %s %s', blank + 1, vim.inspect(nerr),
      vim.inspect(none))
  end

  -- Analysis: diagnostics on open (nvcc, seconds on a loaded machine) and again on save.
  local saved_timeout = timeout_ms
  timeout_ms = math.max(timeout_ms, 120000)
  wait_for('diagnostics after opening the file', function() return #published > 0 end)
  local on_open = #published
  vim.cmd('silent write')
  wait_for('diagnostics after saving the file', function() return #published > on_open end)
  timeout_ms = saved_timeout
  local last = published[#published]
  out('\ndiagnostics after save: %d (%s)', #last.diagnostics, vim.inspect(vim.tbl_map(function(d) return d.message end, last.diagnostics)))
  check(last.uri == uri, 'diagnostics for %s, expected %s', tostring(last.uri), uri)
  for _, d in ipairs(last.diagnostics) do
    check(d.severity ~= 1, 'the example has a compile error: %s', d.message)
  end
  check(#vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR }) == 0, 'error diagnostics in the buffer')
  check(#messages <= 1, '%d showMessage notifications, expected at most one', #messages)
  if messages[1] then out('message: %s', messages[1].message) end

  -- The hover now carries the performance section.
  if target then
    local _, hover = request('textDocument/hover',
      { textDocument = { uri = uri }, position = { line = target.line, character = target.col + 1 } })
    local value = hover and hover.contents and hover.contents.value or ''
    check(value:find('**Performance**', 1, true) ~= nil and value:find('Last runtime', 1, true) ~= nil,
      'hover after analysis has no performance section: %s', value)
    out('\nperformance hover:\n%s', value:match('%-%-%-\n\n(%*%*Performance.*)$') or value)

    -- Code actions on the kernel: Optimize is never silently absent; a task can be created.
    local aerr, actions = request('textDocument/codeAction', {
      textDocument = { uri = uri },
      range = { start = { line = target.line, character = target.col }, ['end'] = { line = target.line, character = target.col } },
      context = { diagnostics = {} },
    })
    check(aerr == nil, 'codeAction error: %s', vim.inspect(aerr))
    local titles, commands = {}, {}
    for _, a in ipairs(actions or {}) do
      table.insert(titles, a.title .. (a.disabled and (' (disabled: ' .. a.disabled.reason .. ')') or ''))
      commands[a.command and a.command.command or ''] = true
    end
    out('\ncode actions: %s', table.concat(titles, '; '))
    local name = target.name  -- titles are plain text
    local has_optimize = false
    for _, t in ipairs(titles) do
      if t:find('Optimize ' .. name, 1, true) then
        has_optimize = true
      end
    end
    check(has_optimize, 'no Optimize action among %s', vim.inspect(titles))
    check(commands['kblaster.createTask'] == true, 'no kblaster.createTask action among %s', vim.inspect(titles))

    -- "At the cursor" is the kernel the cursor is in: on the last line of its body (a word
    -- such as `threadIdx` or a local), the plugin asks kblaster/kernelAt and gets the kernel.
    vim.api.nvim_win_set_cursor(0, { target.end_line, 4 })  -- 1-based row: the line before '}'
    local chosen
    kb.with_kernel(nil, function(k) chosen = k end)
    wait_for('kblaster/kernelAt', function() return chosen ~= nil end)
    out('\nkernel at the cursor (line %d): %s', target.end_line, chosen)
    check(chosen == name, 'with the cursor in %s\'s body the plugin chose %s', name, tostring(chosen))
  end

  -- Workspace trust: asked once, "Not now"; untrusted, nothing of the project runs.
  local project = kb.find_root(file)
  check(#asked == 1 and asked[1].prompt:find(project, 1, true) ~= nil and vim.tbl_contains(asked[1].items, 'Trust'),
    'the trust question was asked %d times (%s), expected once about %s', #asked, vim.inspect(asked), project)
  check(require('kblaster.trust').decision(project) == nil, '"Not now" was remembered')
  -- In Neovim's words: the daemon knows the client is Neovim (initializationOptions.editor).
  local said = messages[1] and messages[1].message or ''
  check(said:find('Profiling is off until you trust this project', 1, true) ~= nil and said:find(':KblasterTrust', 1, true) ~= nil
    and said:find('Manage Workspace Trust', 1, true) == nil,
    'no message in Neovim\'s words that profiling waits for trust: %s', vim.inspect(messages))
  -- The refusal is typed; the plugin words it with the command that removes the cause.
  local perr = request('workspace/executeCommand', { command = 'kblaster.profile', arguments = { { uri = uri } } })
  local refusal = require('kblaster.refusals').message(perr) or ''
  out('\nuntrusted kblaster.profile: %s (%s)', refusal, perr and perr.message or '')
  check(perr ~= nil and perr.data ~= nil and perr.data.refusal == 'untrusted' and perr.data.command == 'kblaster.profile',
    'kblaster.profile in an untrusted project answered %s', vim.inspect(perr))
  check(refusal:find('needs a trusted project', 1, true) ~= nil and refusal:find(':KblasterTrust', 1, true) ~= nil,
    'the plugin words the refusal as %q', refusal)

  -- :KblasterTrust: remembered (vim.secure's database where it holds directories), told to the
  -- daemon; the next save profiles.
  vim.cmd('KblasterTrust')
  check(require('kblaster.trust').is_trusted(project), ':KblasterTrust did not trust %s', project)
  if vim.fn.has('nvim-0.12') == 1 then  -- a directory in vim.secure's database
    local db = table.concat(vim.fn.readfile(vim.fn.stdpath('state') .. '/trust'), '\n')
    check(db:find('directory ' .. (uv_realpath(project)), 1, true) ~= nil, 'vim.secure does not hold %s: %s', project, db)
  end
  local before_trusted_save = #published
  timeout_ms = math.max(timeout_ms, 120000)
  vim.cmd('silent write')
  wait_for('diagnostics after the trusted save', function() return #published > before_trusted_save end)
  if target and hover_name == 'matmul_tiled' then
    local _, hover = request('textDocument/hover',
      { textDocument = { uri = uri }, position = { line = target.line, character = target.col + 1 } })
    local value = hover and hover.contents and hover.contents.value or ''
    out('\ntrusted hover: %s', value:match('(%*%*Performance%*%*[^\n]*)') or value)
    check(value:find('(ncu profile', 1, true) ~= nil and value:find('not trusted', 1, true) == nil,
      'after trusting and saving, the hover shows no profile: %s', value)
  end

  -- Clean shutdown: shutdown, exit, exit code 0.
  kb.call(client, 'stop')
  wait_for('the daemon to exit', function() return exit_code ~= nil end)
  out('\ndaemon exited with code %d after shutdown', exit_code)
  check(exit_code == 0, 'exit code %d after shutdown + exit, expected 0', exit_code)
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  nested = true,  -- so that :edit inside fires BufRead and FileType (and so the client starts)
  callback = function()
    local ok, err = xpcall(main, debug.traceback)
    if not ok then
      table.insert(failures, tostring(err))
      io.stderr:write('ERROR: ' .. tostring(err) .. '\n')
    end
    finish()
  end,
})
