-- Driver of the Neovim test of the change since the last save: save a .cu file, wait for its diagnostics,
-- cut the naive kernel's inner loop in the buffer and save again, then read the code lenses (refreshed until
-- one speaks of the last save) and the hover window of the naive kernel's name. Written as JSON.
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local old_loop = assert(os.getenv("KERNCAST_NVIM_OLD_LOOP"))
local new_loop = assert(os.getenv("KERNCAST_NVIM_NEW_LOOP"))
local result = { steps = {} }

local function step(name)
  table.insert(result.steps, name)
end

local function find_line(buf, needle)
  for i, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if text:find(needle, 1, true) then
      return i
    end
  end
  return nil
end

local function lens_titles(buf, client)
  vim.lsp.codelens.save({}, buf, client.id)
  vim.lsp.codelens.refresh()
  vim.wait(5000, function() return #vim.lsp.codelens.get(buf) > 0 end, 50)
  local out = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(out, { line = lens.range.start.line + 1, title = lens.command and lens.command.title })
  end
  return out
end

local function any_since(lenses)
  for _, lens in ipairs(lenses) do
    if lens.title and lens.title:find("last save", 1, true) then
      return true
    end
  end
  return false
end

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(30000, function() return #vim.lsp.buf_get_clients(buf) > 0 end, 50), "no client attached")
  local client = vim.lsp.buf_get_clients(buf)[1] or select(2, next(vim.lsp.buf_get_clients(buf)))
  vim.cmd("write")
  assert(vim.wait(120000, function() return #vim.diagnostic.get(buf) > 0 end, 100), "no diagnostics")
  result.first_lenses = lens_titles(buf, client)
  step("first save")

  local row = assert(find_line(buf, old_loop), "no naive loop")
  local text = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
  local at = text:find(old_loop, 1, true)
  local edited = text:sub(1, at - 1) .. new_loop .. text:sub(at + #old_loop)
  vim.api.nvim_buf_set_lines(buf, row - 1, row, true, { edited })
  vim.cmd("write")
  step("second save")

  local lenses = {}
  vim.wait(120000, function()
    lenses = lens_titles(buf, client)
    return any_since(lenses)
  end, 500)
  result.codelens = lenses
  step("codelens")

  local name_row = assert(find_line(buf, "void matmulNaive("), "no matmulNaive")
  local col = vim.api.nvim_buf_get_lines(buf, name_row - 1, name_row, false)[1]:find("matmulNaive", 1, true)
  vim.api.nvim_win_set_cursor(0, { name_row, col + 2 })
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
  result.hover = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false)
  vim.api.nvim_win_close(float, true)
  step("hover")
end

local ok, err = pcall(run)
result.ok = ok
result.error = ok and nil or tostring(err)
local fh = assert(io.open(out_path, "w"))
fh:write(vim.fn.json_encode(result))
fh:close()
vim.cmd("qall!")
