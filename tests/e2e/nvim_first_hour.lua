-- A new user's first hour in headless Neovim, through the shipped editors/neovim setup (issue 52):
--
--   KBLASTER_BINARY=build/cli/kblaster nvim --headless --clean -u tests/e2e/nvim_first_hour.lua
--
--   1. :KblasterReplayExample, what a machine without a GPU can run: the shipped example replayed
--      with the recordings and options it was recorded with (whatever the user's settings say),
--      to its recorded result: "done: N.NNx faster, replayed from a recording made on an ...,
--      not measured here", and the example's kernel opened beside its best version in a diff tab.
--   2. :KblasterCreateTask with the cursor in the body of a namespaced in-place kernel,
--      ops::scale_half(__half* x, float s, int n): the task written to disk (x an input and an
--      output that starts from it, s from the launch in the file, n the tensors' length) and opened
--      in a split, the kb_forward stub (calling ops::scale_half by its qualified name) left in the
--      kernel's buffer, unsaved, and the daemon's message saying what was written where.
-- No GPU is needed: nothing is measured. Exits 0, or 1 naming each failed check.

local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local root = vim.fn.fnamemodify(script, ':p:h:h:h')
local binary = os.getenv('KBLASTER_BINARY') or (root .. '/build/cli/kblaster')
local timeout_ms = tonumber(os.getenv('KBLASTER_E2E_TIMEOUT_MS') or '') or 240000

local e2e = dofile(root .. '/tests/e2e/nvim_e2e.lua').new('e2e.neovim_first_hour', timeout_ms, { pass_lines = true })
local out, check, wait_for, read_file, write_file = e2e.out, e2e.check, e2e.wait_for, e2e.read_file, e2e.write_file
local failures = e2e.failures

-- What the plugin tells the user: every vim.notify, in order.
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
  out('notify: %s', msg)
end
local function note_matching(pattern)
  for _, n in ipairs(notes) do
    if n.msg:find(pattern) then return n end
  end
end

-- An in-place kernel in a namespace, launched from a host function with a literal scale (the
-- kernel of issue 52's "Create a Task"); no main(), no task yet.
local ops_source = table.concat({
  '#include <cuda_fp16.h>',
  '',
  'namespace ops {',
  '__global__ void scale_half(__half* x, float s, int n) {',
  '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
  '  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);',
  '}',
  '}  // namespace ops',
  '',
  'void halve(__half* x, int n) {',
  '  ops::scale_half<<<(n + 255) / 256, 256>>>(x, 0.5f, n);',
  '}',
  '',
}, '\n')

local function main()
  local workspace = vim.fn.tempname()
  vim.fn.mkdir(workspace .. '/.git', 'p')  -- the project root
  local file = workspace .. '/ops.cu'
  local f = assert(io.open(file, 'wb'))
  f:write(ops_source)
  f:close()

  vim.opt.runtimepath:prepend(root .. '/editors/neovim')
  vim.cmd('filetype on')  -- .cu is cuda: the plugin's FileType hook starts the client
  local kb = require('kblaster')
  -- The user's own loop settings differ from the example's recording: the replay must not use them.
  kb.setup({ cmd = { binary, 'serve' }, ask_trust = false,
             settings = { kblaster = { analysis = { enabled = false },
                                       optimize = { breadth = 8, depth = 4, outputDir = workspace .. '/runs' } } } })
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  wait_for('the kblaster client', function()
    local c = kb.clients(buf)[1]
    return c ~= nil and c.initialized
  end, 30000)

  -- 1. The example, replayed in one command.
  local tabs = vim.fn.tabpagenr('$')
  vim.cmd('KblasterReplayExample')
  wait_for('the end of the example\'s replay', function()
    return note_matching('^kblaster: replay of the example') ~= nil
  end)
  local said = note_matching('^kblaster: replay of the example').msg
  check(said:find('^kblaster: replay of the example row_softmax done: %d+%.%d%dx faster, replayed from a recording made on an NVIDIA H100[^,]*, not measured here %(report: ') ~= nil,
    'the example replayed: "done: N.NNx faster, replayed from a recording made on an NVIDIA H100 ..., not measured here" (%s)', said)
  local x = tonumber(said:match('done: (%d+%.%d+)x'))
  check(x ~= nil and x > 1.5, 'the replay reaches the recorded result (%s x), not the input', tostring(x))
  wait_for('the diff tab', function() return vim.fn.tabpagenr('$') == tabs + 1 end, 10000)
  local diffed = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_option(win, 'diff') then
      table.insert(diffed, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)), ':t'))
    end
  end
  table.sort(diffed)
  check(#diffed == 2 and diffed[1] == 'best.cu' and diffed[2] == 'kernel.cu',
    'the example\'s kernel beside its best version, in diff mode (%s)', table.concat(diffed, ', '))
  vim.cmd('tabclose')

  -- 2. Create a Task with the cursor inside the kernel's body (on `threadIdx`): the kernel the
  -- cursor is in, not the word under it.
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 5, 30 })
  vim.cmd('KblasterCreateTask')
  wait_for('the message on the task created', function() return note_matching('ops%.task%.json') ~= nil end, 30000)
  local created = note_matching('ops%.task%.json').msg
  check(created:find('^kblaster: Created ops%.task%.json beside ops%.cu: inputs x; outputs x %(in place%)') ~= nil
    and created:find('Added kb_forward at the end of ops%.cu %(line %d+%), unsaved: review it and save the file') ~= nil,
    'the message says what was written where, the stub unsaved (%s)', created)
  local task_path = workspace .. '/ops.task.json'
  local ok, task = pcall(vim.fn.json_decode, read_file(task_path) or '')
  check(ok and type(task) == 'table', 'ops.task.json written to disk, valid JSON (%s)', tostring(read_file(task_path)))
  if ok and type(task) == 'table' then
    local scalars = {}
    for _, s in ipairs(task.scalars or {}) do scalars[s.name] = s.value end
    check(task.inputs and #task.inputs == 1 and task.inputs[1].name == 'x' and task.inputs[1].dtype == 'float16',
      'the task\'s input: x, float16 (%s)', vim.inspect(task.inputs))
    check(task.outputs and #task.outputs == 1 and task.outputs[1].name == 'x' and task.outputs[1].initial_from == 0,
      'the task\'s output: x in place, starting from input 0 (%s)', vim.inspect(task.outputs))
    check(scalars.s == 0.5 and scalars.n == 'elements', 's from the launch in the file (0.5), n the tensors\' length (%s)',
      vim.inspect(task.scalars))
  end
  local shown = false
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) == task_path then shown = true end
  end
  check(shown, 'the task is open in a split')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  check(vim.api.nvim_buf_get_option(buf, 'modified') and text:find('extern "C" int kb_forward', 1, true) ~= nil
    and text:find('ops::scale_half<<<grid, block, 0, stream>>>', 1, true) ~= nil,
    'the kb_forward stub, calling ops::scale_half by its qualified name, is in ops.cu\'s buffer for review, unsaved')
  check(vim.api.nvim_get_current_buf() == buf, 'the cursor is back in ops.cu, where the stub is')

  kb.call(kb.clients(buf)[1], 'stop')
end

e2e.run_at_vim_enter(main)
