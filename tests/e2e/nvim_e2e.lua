-- End to end in a real Neovim (0.11+ API), headless: attach `oomlint server` to a Python
-- buffer through editors/nvim, wait for the finding in vim.diagnostic, apply the quick
-- fix, check the buffer text.
-- Usage: nvim --headless --clean -l tests/e2e/nvim_e2e.lua OOMLINT_BIN REPO_DIR WORK_DIR
local bin, repo, work = arg[1], arg[2], arg[3]
local failures = {}
local function check(ok, what)
  if not ok then
    table.insert(failures, what)
  end
end

vim.opt.runtimepath:prepend(repo .. '/editors/nvim')
vim.cmd('filetype on')
vim.lsp.config('oomlint', { cmd = { bin, 'server' }, init_options = { debounceMs = 0 } })
vim.lsp.enable('oomlint')

local file = work .. '/amp.py'
vim.fn.writefile({ 'from torch.cuda.amp import autocast', '', 'with autocast():', '    pass' }, file)
vim.cmd.edit(file)

local attached = vim.wait(10000, function()
  return #vim.lsp.get_clients({ bufnr = 0, name = 'oomlint' }) > 0
end)
check(attached, 'the server attached')

local found = vim.wait(10000, function()
  return #vim.diagnostic.get(0) > 0
end)
check(found, 'a diagnostic appeared')
local diagnostic = vim.diagnostic.get(0)[1] or {}
check(diagnostic.code == 'OOM003', 'the diagnostic is OOM003, got ' .. tostring(diagnostic.code))
check(diagnostic.source == 'oomlint', 'the source is oomlint')

vim.api.nvim_win_set_cursor(0, { 3, 6 })
vim.lsp.buf.code_action({
  apply = true,
  filter = function(action)
    return action.isPreferred == true
  end,
})
local expected = { 'from torch.amp import autocast', '', 'with autocast("cuda"):', '    pass' }
local fixed = vim.wait(10000, function()
  return vim.deep_equal(vim.api.nvim_buf_get_lines(0, 0, -1, false), expected)
end)
check(fixed, 'the quick fix rewrote the buffer: ' .. vim.inspect(vim.api.nvim_buf_get_lines(0, 0, -1, false)))

local cleared = vim.wait(10000, function()
  return #vim.diagnostic.get(0) == 0
end)
check(cleared, 'the diagnostic cleared after the fix')

for _, failure in ipairs(failures) do
  io.stdout:write('FAIL ' .. failure .. '\n')
end
io.stdout:write(string.format('nvim e2e: %d passed, %d failed\n', #failures == 0 and 1 or 0, #failures == 0 and 0 or 1))
vim.cmd(#failures == 0 and 'qall!' or 'cquit 1')
