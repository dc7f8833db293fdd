-- Driver of the Neovim end-to-end test: edit a .cu file with the Kerncast setup loaded, save it, wait for the
-- diagnostics, hover the first kernel's name, refresh the code lenses, and write what was seen as JSON.
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local kernel = os.getenv("KERNCAST_NVIM_KERNEL") or "transposeNaive"
local result = { steps = {} }

local function step(name)
  table.insert(result.steps, name)
end

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype
  result.uri = vim.uri_from_bufnr(buf)
  assert(vim.wait(30000, function() return #vim.lsp.buf_get_clients(buf) > 0 end, 50), "no client attached")
  step("attached")
  -- Save, then wait for the analysis of the save to be published.
  vim.cmd("write")
  assert(vim.wait(120000, function() return #vim.diagnostic.get(buf) > 0 end, 100), "no diagnostics")
  step("diagnostics")
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, { code = d.code, line = d.lnum + 1, source = d.source, message = d.message })
  end
  -- Hover on the kernel's name, through Neovim's own hover handler and floating window.
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, text in ipairs(lines) do
    local col = text:find("__global__ void " .. kernel, 1, true)
    if col then
      vim.api.nvim_win_set_cursor(0, { i, col + #"__global__ void " + 2 })
      break
    end
  end
  local main_win = vim.api.nvim_get_current_win()
  vim.lsp.buf.hover()
  local float
  assert(vim.wait(30000, function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if w ~= main_win and vim.api.nvim_win_get_config(w).relative ~= "" then
        float = w
        return true
      end
    end
    return false
  end, 50), "no hover window")
  step("hover")
  result.hover = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false)
  vim.api.nvim_win_close(float, true)
  -- Code lenses: refreshed by hand in Neovim 0.7.
  vim.lsp.codelens.refresh()
  assert(vim.wait(30000, function() return #vim.lsp.codelens.get(buf) > 0 end, 50), "no code lenses")
  step("codelens")
  result.codelens = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(result.codelens, { line = lens.range.start.line + 1, title = lens.command and lens.command.title })
  end
  result.version = vim.version()
end

local ok, err = pcall(run)
result.ok = ok
result.error = ok and nil or tostring(err)
local fh = assert(io.open(out_path, "w"))
fh:write(vim.fn.json_encode(result))
fh:close()
vim.cmd("qall!")
