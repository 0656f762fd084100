-- oomlint's language server for Neovim 0.11+ (`vim.lsp.config` / `vim.lsp.enable`).
-- Put this directory on 'runtimepath' (or copy this file into your config's `lsp/`),
-- then call `vim.lsp.enable('oomlint')`. Settings go in `init_options` / `settings`:
--   vim.lsp.config('oomlint', { settings = { oomlint = { ignore = { 'OOM003' } } } })
return {
  cmd = { 'oomlint', 'server' },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'oomlint.toml', '.git' },
}
