-- kblaster.trust: whether the user trusts a project root, so that the daemon may build and RUN
-- its code (profiling on save, Optimize). Asked once per project and remembered:
--   * in Neovim's own trust database (vim.secure.trust, the one `:trust` manages) where it can
--     hold a directory ("directory" for an allowed one; 0.12 can, and we try rather than guess);
--   * else (0.7-0.10) in stdpath('state')/kblaster/trust (stdpath('data') on 0.7), one
--     "allow PATH" or "deny PATH" a line.
-- An answer of "Not now" is not remembered: the next session asks again.

local M = {}

local uv = vim.uv or vim.loop

--- The real path of `dir` (links resolved), or `dir` itself when it does not exist.
function M.normalize(dir)
  return uv.fs_realpath(dir) or dir
end

--- stdpath('state'), or stdpath('data') on 0.7, which has no 'state' (it kept such files there).
function M.state_dir()
  local ok, dir = pcall(vim.fn.stdpath, 'state')
  return ok and dir or vim.fn.stdpath('data')
end

--- Our own file, for Neovim versions whose vim.secure cannot trust a directory.
function M.state_file()
  return M.state_dir() .. '/kblaster/trust'
end

local function read_lines(path)
  local f = io.open(path, 'r')
  if not f then
    return {}
  end
  local lines = {}
  for line in f:lines() do
    table.insert(lines, line)
  end
  f:close()
  return lines
end

-- Decisions in our file, by path: 'allow' or 'deny'.
local function read_own()
  local out = {}
  for _, line in ipairs(read_lines(M.state_file())) do
    local verdict, path = line:match('^(%a+) (.+)$')
    if verdict == 'allow' or verdict == 'deny' then
      out[path] = verdict
    end
  end
  return out
end

local function write_own(decisions)
  vim.fn.mkdir(vim.fn.fnamemodify(M.state_file(), ':h'), 'p')
  local f = assert(io.open(M.state_file(), 'w'))
  for path, verdict in pairs(decisions) do
    f:write(verdict .. ' ' .. path .. '\n')
  end
  f:close()
end

-- Neovim's trust database ($XDG_STATE_HOME/nvim/trust: "HASH PATH" lines, "directory" for an
-- allowed directory, "!" for a denied path), read without prompting (vim.secure.read() would
-- ask the user about "exrc" files, which is not the question here).
local function read_neovim(path)
  if not vim.secure then
    return nil
  end
  for _, line in ipairs(read_lines(M.state_dir() .. '/trust')) do
    local hash, file = line:match('^(%S+) (.+)$')
    if file == path then
      if hash == 'directory' then
        return 'allow'
      elseif hash == '!' then
        return 'deny'
      end
    end
  end
  return nil
end

--- 'allow', 'deny', or nil when the user has not decided about `root`.
function M.decision(root)
  local path = M.normalize(root)
  return read_own()[path] or read_neovim(path)
end

--- True when the user trusts `root`.
function M.is_trusted(root)
  return root ~= nil and M.decision(root) == 'allow'
end

--- Remembers `verdict` ('allow' or 'deny') for `root`: in vim.secure's database where it takes
--- directories, else in our file. Returns where it was kept.
function M.remember(root, verdict)
  local path = M.normalize(root)
  local own = read_own()
  if vim.secure and vim.secure.trust then
    -- 0.9/0.10 cannot hash a directory and answer false ("could not read path"): then ours.
    local ok, done = pcall(vim.secure.trust, { action = verdict, path = path })
    if ok and done then
      if own[path] then  -- one place decides: drop an older answer kept in our file
        own[path] = nil
        write_own(own)
      end
      return 'vim.secure'
    end
  end
  own[path] = verdict
  write_own(own)
  return M.state_file()
end

return M
