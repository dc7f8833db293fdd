-- Kerncast for Neovim: diagnostics, hover, code lenses and code actions from `kerncast lsp`.
-- Works on Neovim 0.7 (vim.lsp.start_client + an autocommand) and on 0.8 and newer (vim.lsp.start).
-- Put this file in your config (e.g. ~/.config/nvim/lua/kerncast.lua) and `require("kerncast")` it from
-- init.lua, or paste it there. Set vim.g.kerncast_cmd / vim.g.kerncast_settings before loading it to change
-- the server command or the settings (the same keys as the VS Code settings, without the `kerncast.` prefix).

local cmd = vim.g.kerncast_cmd or { "kerncast", "lsp" }
local settings = vim.g.kerncast_settings or { gpu = "v100", arch = "sm_75" }

-- .cu/.cuh are filetype `cuda` already; `.ptx` gets its own filetype.
vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, { pattern = "*.ptx", command = "setfiletype ptx" })

local function root_dir(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  local marker = vim.fn.finddir(".git", dir .. ";")
  if marker ~= "" then
    return vim.fn.fnamemodify(marker, ":p:h:h")
  end
  return dir
end

local function on_attach(client, bufnr)
  -- Code lenses ("≈ 12.3 µs · 87 W · 1.1 mJ on V100 @ <<<1024, 256>>>") are refreshed by hand in Neovim:
  -- after the server has analysed a save, and when entering the buffer.
  local group = vim.api.nvim_create_augroup("kerncast_codelens_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "BufEnter", "BufWritePost", "CursorHold" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      vim.lsp.codelens.refresh()
    end,
  })
  local opts = { buffer = bufnr, silent = true }
  vim.keymap.set("n", "K", vim.lsp.buf.hover, opts)
  vim.keymap.set("n", "<leader>ca", vim.lsp.buf.code_action, opts)
  vim.keymap.set("n", "<leader>cl", vim.lsp.codelens.run, opts)
  vim.api.nvim_buf_create_user_command(bufnr, "KerncastGpu", function(args)
    client.request("workspace/executeCommand", { command = "kerncast.selectGpu", arguments = { args.args } },
      function() end, bufnr)
  end, { nargs = 1, desc = "Kerncast: predict for another GPU profile (kerncast gpus lists them)" })
end

local function config_for(bufnr)
  return {
    name = "kerncast",
    cmd = cmd,
    root_dir = root_dir(bufnr),
    init_options = settings,
    settings = { kerncast = settings },
    on_attach = on_attach,
  }
end

local clients = {} -- Neovim 0.7: one client per root directory

local function start(bufnr)
  local config = config_for(bufnr)
  if vim.lsp.start then -- Neovim 0.8 and newer: reuses a running client with the same name and root
    vim.lsp.start(config, { bufnr = bufnr })
    return
  end
  local id = clients[config.root_dir]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(config)
    clients[config.root_dir] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = { "cuda", "ptx" },
  callback = function(args)
    start(args.buf)
  end,
})
