-- What every headless Neovim e2e test shares (loaded with dofile from the test's own folder):
-- printing a line, checks that collect their failures, waiting on a condition while Neovim's
-- loop runs, reading and writing files, and running the test's main() at VimEnter with an exit
-- status that says how it went.
--
--   local e2e = dofile(root .. '/tests/e2e/nvim_e2e.lua').new('e2e.neovim_x', timeout_ms, { pass_lines = true })
--   e2e.check(ok, 'what was expected: %s', detail)
--   e2e.run_at_vim_enter(main)            -- or e2e.run_at_vim_enter(main, function() return ' (note)' end)
local M = {}

function M.read_file(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  return s
end

function M.write_file(path, text)
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

--- A test named `name` (its verdict line), waiting at most `timeout_ms` by default; with
--- `options.pass_lines`, each check that holds is printed as PASS too.
function M.new(name, timeout_ms, options)
  options = options or {}
  local t = { name = name, failures = {}, read_file = M.read_file, write_file = M.write_file }

  function t.out(fmt, ...)
    io.stdout:write(string.format(fmt, ...) .. '\n')
    io.stdout:flush()
  end

  function t.check(ok, fmt, ...)
    local msg = string.format(fmt, ...)
    if not ok then
      table.insert(t.failures, msg)
      io.stderr:write('FAIL: ' .. msg .. '\n')
    elseif options.pass_lines then
      t.out('PASS %s', msg)
    end
    return ok
  end

  function t.wait_for(what, predicate, ms)
    ms = ms or timeout_ms
    if not vim.wait(ms, predicate, 20) then
      error(string.format('timed out after %d ms waiting for %s', ms, what), 0)
    end
  end

  --- Ends Neovim: status 0 and "NAME: all checks passed" (with `suffix`), else 1 and the count.
  function t.finish(suffix)
    if #t.failures == 0 then
      t.out('%s: all checks passed%s', name, suffix or '')
      vim.cmd('qall!')
    else
      io.stderr:write(string.format('%s: %d check(s) failed\n', name, #t.failures))
      vim.cmd('cquit 1')
    end
  end

  --- Runs `main` once Neovim has started (an error in it is a failure), then finishes;
  --- `suffix_of`, when given, says what to add to the verdict line.
  function t.run_at_vim_enter(main, suffix_of)
    vim.api.nvim_create_autocmd('VimEnter', {
      once = true,
      nested = true,
      callback = function()
        local ok, err = xpcall(main, debug.traceback)
        if not ok then
          table.insert(t.failures, tostring(err))
          io.stderr:write('ERROR: ' .. tostring(err) .. '\n')
        end
        t.finish(suffix_of and suffix_of() or nil)
      end,
    })
  end

  return t
end

return M
