-- kblaster: starts KernelBlaster's language server for CUDA buffers in Neovim's built-in client.
--
-- One client config (M.client_config) serves every Neovim version; only how it is started
-- differs (M.api says which):
--   0.11+     vim.lsp.config(name, config) + vim.lsp.enable(name): Neovim's own FileType hook
--             starts one client per project root (root_dir is a function here);
--   0.8-0.10  vim.lsp.start(config) from our FileType autocmd, root_dir found by M.find_root;
--   0.7       (Debian 12 ships 0.7.2: no vim.lsp.start, no vim.fs) vim.lsp.start_client, one
--             client per root kept here, and vim.lsp.buf_attach_client.
--
--   require('kblaster').setup({
--     cmd = { 'kblaster', 'serve' },        -- how to start the daemon (stdio)
--     settings = { kblaster = { logLevel = 'info', profileOnSave = true } },
--     keymaps = true,                       -- <leader>ko optimize, <leader>kp profile, <leader>kt task
--     ask_trust = true,                     -- ask once per project whether to trust it
--     codelens = true,                      -- draw the daemon's code lenses
--   })
--
-- Commands: :KblasterOptimize [kernel], :KblasterProfile, :KblasterCreateTask [kernel],
-- :KblasterTrust[!] [dir], :KblasterSelfTest [steps] [stepMs], :KblasterReplayExample. The kernel defaults to the word
-- under the cursor.
--
-- Workspace trust: the daemon builds and runs a project's code (profiling on save, Optimize)
-- only when the client says the user trusts the project (initializationOptions.workspaceTrusted,
-- later the notification kblaster/setTrust); compile diagnostics, hovers and lenses work
-- regardless. The first time a project's daemon starts, the user is asked once; the answer is
-- remembered (kblaster/trust.lua). :KblasterTrust trusts the current project later, and
-- :KblasterTrust! withdraws it.

local M = {}

local trust = require('kblaster.trust')
local refusals = require('kblaster.refusals')

local defaults = {
  -- The daemon, speaking LSP on stdin/stdout.
  cmd = { 'kblaster', 'serve' },
  -- Sent as initializationOptions and in workspace/didChangeConfiguration, and returned for
  -- workspace/configuration requests (Neovim's default handler reads config.settings).
  settings = { kblaster = {} },
  filetypes = { 'cuda' },
  -- The first directory upwards from the file holding one of these is the project root; one
  -- daemon serves each root. Without any, the file's own directory is the root.
  root_markers = { '.git', 'CMakeLists.txt', 'compile_commands.json', 'Makefile' },
  name = 'kblaster',
  -- Passed through to the client config unchanged when set.
  on_attach = nil,
  on_init = nil,
  on_exit = nil,
  capabilities = nil,
  handlers = nil,
  flags = nil,
  -- Buffer-local maps on attach: true for the suggested ones, a table {optimize=, profile=,
  -- create_task=} for your own left-hand sides, false for none.
  keymaps = false,
  -- Ask, once per project, whether to trust it (false: never ask; :KblasterTrust still trusts).
  ask_trust = true,
  -- Show the daemon's code lenses (each kernel's state, share of the program's GPU time and
  -- Optimize; the program's line at the top): Neovim draws none unless asked.
  codelens = true,
  before_init = nil,
}

local suggested_keymaps = { optimize = '<leader>ko', profile = '<leader>kp', create_task = '<leader>kt' }

M.config = vim.deepcopy(defaults)

--- How setup() starts the client on this Neovim: 'vim.lsp.enable' (0.11+), 'vim.lsp.start'
--- (0.8-0.10) or 'vim.lsp.start_client' (0.7).
M.api = (vim.fn.has('nvim-0.11') == 1 and 'vim.lsp.enable') or (vim.lsp.start and 'vim.lsp.start')
  or 'vim.lsp.start_client'

--- Calls client method `method`: client:method(...) from 0.11 on (where client.method(...) is
--- deprecated), client.method(...) before (where methods take no self).
function M.call(client, method, ...)
  if M.api == 'vim.lsp.enable' then
    return client[method](client, ...)
  end
  return client[method](...)
end

-- client ids by root directory, for Neovim < 0.8 (vim.lsp.start keeps its own).
local clients_by_root = {}

---@private
local function is_dir_or_file(path)
  return (vim.uv or vim.loop).fs_stat(path) ~= nil
end

--- The project root for `fname`: the nearest ancestor holding a root marker.
function M.find_root(fname)
  local dir = vim.fn.fnamemodify(fname, ':p:h')
  local current = dir
  while true do
    for _, marker in ipairs(M.config.root_markers) do
      if is_dir_or_file(current .. '/' .. marker) then
        return current
      end
    end
    local parent = vim.fn.fnamemodify(current, ':h')
    if parent == current then
      return dir
    end
    current = parent
  end
end

--- The project root to start the daemon in for buffer `bufnr`, or nil when the buffer has no
--- file or the daemon is not executable (which it says, unless `quiet`).
function M.root(bufnr, quiet)
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if fname == '' then
    return nil
  end
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    if quiet then
      return nil
    end
    vim.notify(string.format('kblaster: %q is not executable; set cmd in require("kblaster").setup()',
      M.config.cmd[1]), vim.log.levels.ERROR)
    return nil
  end
  return M.find_root(fname)
end

--- The kblaster clients serving project `root`.
function M.clients_of_root(root)
  local found = {}
  local want = trust.normalize(root)
  for _, client in ipairs(M.clients()) do
    local dir = client.config and client.config.root_dir
    if type(dir) == 'string' and trust.normalize(dir) == want then
      table.insert(found, client)
    end
  end
  return found
end

--- Trusts (or with `trusted` false, stops trusting) project `root`: remembers it and tells the
--- running daemons, which profile on the next save and accept Optimize from now on.
function M.set_trust(root, trusted)
  local where = trust.remember(root, trusted and 'allow' or 'deny')
  for _, client in ipairs(M.clients_of_root(root)) do
    M.call(client, 'notify', 'kblaster/setTrust', { trusted = trusted })
  end
  vim.notify(string.format('kblaster: %s %s (kept in %s)%s', trusted and 'trusted' or 'not trusting', root, where,
    trusted and ': profiling on save and Optimize may run its code' or ': compile-only'))
end

--- Asks whether to trust `root` (once: the answer is remembered, unless "Not now").
function M.ask_trust(root)
  local choices = { 'Trust', 'Not now', 'Never' }
  vim.ui.select(choices, {
    prompt = 'kblaster: trust ' .. root .. '? KernelBlaster builds and runs a trusted project\'s programs '
      .. '(profiling on save, Optimize); untrusted, it only compiles.',
  }, function(choice)
    if choice == 'Trust' then
      M.set_trust(root, true)
    elseif choice == 'Never' then
      M.set_trust(root, false)
    end
  end)
end

--- The client config, shared by every start path: `root_dir` is the project root (a string),
--- or for vim.lsp.config a function(bufnr, on_dir) that finds it.
function M.client_config(root_dir)
  local c = M.config
  local settings = c.settings or {}
  return {
    name = c.name,
    cmd = c.cmd,
    filetypes = c.filetypes,
    root_dir = root_dir,
    settings = settings,
    init_options = settings.kblaster or settings,
    capabilities = c.capabilities,
    handlers = c.handlers,
    flags = c.flags,
    on_attach = function(client, bufnr)
      M.set_keymaps(bufnr)
      if c.codelens then
        M.show_lenses(bufnr)
      end
      if c.on_attach then
        c.on_attach(client, bufnr)
      end
    end,
    on_exit = c.on_exit,
    before_init = function(params, config)
      -- Trust travels beside the settings, never among them, and so does the editor's name
      -- (the daemon's own titles and hovers then name :KblasterTrust); a copy, so that the
      -- settings table shared by every client is left as it was.
      local project = type(config.root_dir) == 'string' and config.root_dir or params.rootPath
      params.initializationOptions = vim.tbl_extend('force', {}, params.initializationOptions or {},
        { workspaceTrusted = trust.is_trusted(project), editor = 'neovim' })
      if c.before_init then
        c.before_init(params, config)
      end
    end,
    on_init = function(client, result)
      -- Neovim 0.7 never sends the settings by itself; a server that reads them at start
      -- gets them here as well as in initializationOptions.
      if next(settings) ~= nil then
        M.call(client, 'notify', 'workspace/didChangeConfiguration', { settings = settings })
      end
      local project = client.config and client.config.root_dir
      if c.ask_trust and type(project) == 'string' and trust.decision(project) == nil then
        -- After start-up, not in its way: diagnostics arrive while the question waits.
        vim.schedule(function()
          M.ask_trust(project)
        end)
      end
      if c.on_init then
        c.on_init(client, result)
      end
    end,
  }
end

--- Starts (or reuses) the client for the buffer's project and attaches the buffer, whatever
--- the filetype. Returns the client id, or nil when the daemon could not be started.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root_dir = M.root(bufnr)
  if not root_dir then
    return nil
  end
  local config = M.client_config(root_dir)

  if vim.lsp.start then
    -- 0.8+: reuses a running client with the same name and root_dir (on 0.11+ also the one
    -- vim.lsp.enable started).
    return vim.lsp.start(config, { bufnr = bufnr })
  end

  local id = clients_by_root[root_dir]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or client.is_stopped() then
    id = vim.lsp.start_client(config)
    if not id then
      return nil
    end
    clients_by_root[root_dir] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- The running kblaster clients attached to `bufnr` (all buffers when nil).
function M.clients(bufnr)
  if vim.lsp.get_clients then  -- 0.10+ (the others are deprecated there)
    return vim.lsp.get_clients({ bufnr = bufnr, name = M.config.name })
  end
  local found = {}
  local all = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
  for _, client in pairs(all) do
    if client.name == M.config.name then
      table.insert(found, client)
    end
  end
  return found
end

--- Runs the daemon's self-test command (progress shows in the client's progress messages).
function M.self_test(steps, step_ms)
  for _, client in ipairs(M.clients(vim.api.nvim_get_current_buf())) do
    M.call(client, 'request', 'workspace/executeCommand', {
      command = 'kblaster.selfTest',
      arguments = { { steps = steps or 10, stepMs = step_ms or 100 } },
    }, function(err, result)
      if err then
        vim.notify('kblaster.selfTest: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        vim.notify(refusals.self_test(result))
      end
    end)
  end
end

--- Sends workspace/executeCommand `command` with `{uri, kernel}` for the current buffer to
--- every kblaster client; `on_result(err, result)` defaults to a notification.
function M.execute(command, kernel, on_result)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = { uri = vim.uri_from_bufnr(bufnr) }
  if kernel == nil or kernel == '' then
    kernel = vim.fn.expand('<cword>')
  end
  if kernel ~= '' then
    args.kernel = kernel
  end
  local clients = M.clients(bufnr)
  if #clients == 0 then
    vim.notify('kblaster: no daemon is attached to this buffer', vim.log.levels.WARN)
  end
  for _, client in ipairs(clients) do
    M.call(client, 'request', 'workspace/executeCommand', { command = command, arguments = { args } }, function(err, result)
      if on_result then
        return on_result(err, result)
      end
      if err then
        -- A refusal in Neovim's words, with the command that removes its cause.
        local said = refusals.message(err)
        vim.notify(said or (command .. ': ' .. (err.message or vim.inspect(err))),
          said and vim.log.levels.WARN or vim.log.levels.ERROR)
      elseif command == 'kblaster.profile' then
        -- A profile that profiled nothing says why; one that did shows in the diagnostics.
        local note = refusals.profile_note(result, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t'))
        vim.notify(note or (command .. ': ' .. vim.inspect(result, { depth = 2 })), vim.log.levels.INFO)
      elseif command == 'kblaster.optimize' or command == 'kblaster.applyTechnique' then
        -- "done" only for a run that ran; what stopped one that did not.
        local text, level = refusals.run_end(command:gsub('^kblaster%.', '') .. ' ' .. (args.kernel or ''), result)
        vim.notify(text or (command .. ': ' .. vim.inspect(result, { depth = 2 })), level)
      else
        vim.notify(command .. ': ' .. vim.inspect(result, { depth = 2 }))
      end
    end, bufnr)
  end
end

--- Calls `then_do(name)` with `kernel` when given, else with the kernel the cursor is in, as the
--- daemon finds it (kblaster/kernelAt: the enclosing __global__ definition or a launch of one,
--- not the word under the cursor); outside any kernel the user is told so and nothing runs.
function M.with_kernel(kernel, then_do)
  if kernel ~= nil and kernel ~= '' then
    return then_do(kernel)
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.clients(bufnr)[1]
  if not client then
    return then_do(nil)  -- execute() says that no daemon is attached
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding or 'utf-16')
  M.call(client, 'request', 'kblaster/kernelAt', params, function(err, result)
    if err or not result then
      vim.notify('kblaster: ' .. ((err and err.message) or 'no answer to kblaster/kernelAt'), vim.log.levels.ERROR)
    elseif result.kernel == nil or result.kernel == vim.NIL then
      vim.notify('kblaster: ' .. (result.message or 'the cursor is not inside a __global__ kernel'), vim.log.levels.WARN)
    else
      then_do(result.kernel)
    end
  end, bufnr)
end

--- Optimizes the kernel (progress in the client's progress messages; the best version comes
--- back as an edit of the buffer).
function M.optimize(kernel)
  M.with_kernel(kernel, function(name)
    M.execute('kblaster.optimize', name)
  end)
end

--- Replays the shipped example (a run recorded on a GPU, with the settings it was recorded
--- with): what a machine without a GPU can show; the daemon copies it into a scratch folder and
--- the best version is opened beside the example's kernel.
function M.replay_example()
  local bufnr = vim.api.nvim_get_current_buf()
  for _, client in ipairs(M.clients(bufnr)) do
    M.call(client, 'request', 'workspace/executeCommand', { command = 'kblaster.replayExample', arguments = { {} } },
      function(err, result)
        if err then
          vim.notify('kblaster: the example cannot be replayed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
          return
        end
        local text, level = refusals.run_end('replay of the example ' .. (result and result.example or ''), result)
        vim.notify(text or vim.inspect(result), level)
        if result and result.bestPath and result.inputPath and not result.error then
          vim.cmd('tabnew ' .. vim.fn.fnameescape(result.inputPath))
          vim.cmd('vert diffsplit ' .. vim.fn.fnameescape(result.bestPath))
        end
      end, bufnr)
  end
end

--- Compiles (and, with a GPU and a task, profiles) the buffer now; diagnostics follow.
function M.profile()
  M.execute('kblaster.profile', '')
end

--- After kblaster.createTask: Neovim applied the daemon's edit to buffers (the task file's text
--- and, when the source had none, a kb_forward stub at the end of the kernel's file), unsaved.
--- The task is written (the daemon reads it from disk) and opened in a split; the kernel's file
--- is left modified for review; the daemon's message says what was written where.
function M.task_created(result)
  if type(result) ~= 'table' or type(result.taskPath) ~= 'string' then
    return
  end
  local task = vim.fn.bufnr(result.taskPath)
  if task ~= -1 and vim.api.nvim_buf_get_option(task, 'modified') then
    vim.api.nvim_buf_call(task, function()
      vim.cmd('silent write')
    end)
  end
  if vim.fn.filereadable(result.taskPath) == 1 then
    vim.cmd('split ' .. vim.fn.fnameescape(result.taskPath))
    vim.cmd('wincmd p')  -- back to the kernel's file, where the stub waits to be reviewed and saved
  end
  vim.notify('kblaster: ' .. (result.message or ('task written to ' .. result.taskPath)),
    result.applied == false and vim.log.levels.WARN or vim.log.levels.INFO)
end

--- Scaffolds NAME.task.json for the kernel and a kb_forward stub when the file has none, and says
--- what was written where (M.task_created).
function M.create_task(kernel)
  M.with_kernel(kernel, function(name)
    M.execute('kblaster.createTask', name, function(err, result)
      if err then
        vim.notify('kblaster: no task was created for ' .. name .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        M.task_created(result)
      end
    end)
  end)
end

--- Draws the daemon's code lenses in buffer `bufnr` and keeps them current: 0.12+ with
--- vim.lsp.codelens.enable (Neovim asks again on each change and on the daemon's
--- workspace/codeLens/refresh); before, vim.lsp.codelens.refresh on entering the buffer, leaving
--- insert mode, and each time the daemon publishes the buffer's diagnostics (the end of an
--- analysis: a save's profile changes the lenses after the save).
function M.show_lenses(bufnr)
  if vim.lsp.codelens.enable then
    vim.lsp.codelens.enable(true, { bufnr = bufnr })
    return
  end
  local function refresh()
    if vim.api.nvim_get_current_buf() == bufnr then
      vim.lsp.codelens.refresh()
    end
  end
  local group = vim.api.nvim_create_augroup('kblaster_codelens_' .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'DiagnosticChanged' }, { group = group, buffer = bufnr, callback = refresh })
  vim.schedule(refresh)
end

--- Sets the buffer-local key maps chosen in setup({ keymaps = ... }).
function M.set_keymaps(bufnr)
  local maps = M.config.keymaps
  if maps == true then
    maps = suggested_keymaps
  end
  if type(maps) ~= 'table' then
    return
  end
  local actions = { optimize = M.optimize, profile = M.profile, create_task = M.create_task }
  for name, lhs in pairs(maps) do
    if actions[name] and lhs then
      vim.keymap.set('n', lhs, function()
        actions[name]()
      end, { buffer = bufnr, desc = 'kblaster: ' .. name:gsub('_', ' ') })
    end
  end
end

--- Configures the client and starts it for every CUDA buffer, open now or later.
function M.setup(opts)
  opts = opts or {}
  local config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts)
  -- Lists replace rather than merge by index (tbl_deep_extend would keep a default's tail).
  for _, key in ipairs({ 'cmd', 'filetypes', 'root_markers' }) do
    if opts[key] ~= nil then
      config[key] = opts[key]
    end
  end
  if type(config.cmd) == 'string' then
    config.cmd = { config.cmd, 'serve' }
  end
  for _, key in ipairs({ 'cmd', 'filetypes', 'settings' }) do
    if type(config[key]) ~= 'table' then
      error(string.format('kblaster.setup: %s: expected table, got %s', key, type(config[key])), 2)
    end
  end
  M.config = config

  local group = vim.api.nvim_create_augroup('kblaster', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      if M.api == 'vim.lsp.enable' then
        M.root(args.buf)  -- vim.lsp.enable starts the client; this says when the daemon is missing
      else
        M.attach(args.buf)
      end
    end,
  })
  if M.api == 'vim.lsp.enable' then
    -- Merged with what the user gave vim.lsp.config(name, ...) or lsp/<name>.lua; enable()
    -- also starts it for the buffers already open.
    vim.lsp.config(config.name, M.client_config(function(bufnr, on_dir)
      local root_dir = M.root(bufnr, true)  -- our FileType autocmd has said what is missing
      if root_dir then
        on_dir(root_dir)
      end
    end))
    vim.lsp.enable(config.name)
  else
    -- Buffers already open when setup() runs (e.g. from a plugin manager's lazy load).
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(config.filetypes, vim.bo[bufnr].filetype) then
        M.attach(bufnr)
      end
    end
  end

  vim.api.nvim_create_user_command('KblasterSelfTest', function(cmd_opts)
    M.self_test(tonumber(cmd_opts.fargs[1]), tonumber(cmd_opts.fargs[2]))
  end, { nargs = '*', desc = 'kblaster: run the daemon self-test [steps] [stepMs]' })
  vim.api.nvim_create_user_command('KblasterOptimize', function(cmd_opts)
    M.optimize(cmd_opts.fargs[1])
  end, { nargs = '?', desc = 'kblaster: optimize the kernel [name] (default: under the cursor)' })
  vim.api.nvim_create_user_command('KblasterProfile', function()
    M.profile()
  end, { nargs = 0, desc = 'kblaster: compile and profile this file now' })
  vim.api.nvim_create_user_command('KblasterTrust', function(cmd_opts)
    local root = cmd_opts.fargs[1]
    if root and root ~= '' then  -- 0.7 gives {''} for no argument
      root = vim.fn.fnamemodify(root, ':p'):gsub('/$', '')
    else
      local fname = vim.api.nvim_buf_get_name(0)
      root = fname ~= '' and M.find_root(fname) or vim.fn.getcwd()
    end
    M.set_trust(root, not cmd_opts.bang)
  end, { nargs = '?', bang = true, complete = 'dir',
         desc = 'kblaster: trust this project [dir] so that profiling and Optimize may run its code (! withdraws it)' })
  vim.api.nvim_create_user_command('KblasterCreateTask', function(cmd_opts)
    M.create_task(cmd_opts.fargs[1])
  end, { nargs = '?', desc = 'kblaster: scaffold a task for the kernel [name]' })
  vim.api.nvim_create_user_command('KblasterReplayExample', function()
    M.replay_example()
  end, { nargs = 0, desc = 'kblaster: replay the shipped example, a run recorded on a GPU (no GPU needed)' })
end

return M
