-- Driver of the Neovim test of unsaved edits: save a .cu file, wait for its diagnostics, type lines above the
-- first kernel without saving, then hover the shifted kernel name, refresh the code lenses, and ask for the
-- pad fix through Neovim's own code-action flow, at the line the finding had when it was analysed (the stale
-- range) and at the line it has now. What Neovim showed and what its buffer became is written as JSON.
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local typed = tonumber(os.getenv("KERNCAST_NVIM_TYPED") or "15")
local result = { steps = {} }
local PAD = "pad the last dimension"

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

-- The code actions the server offers on a line (titles), asked as Neovim asks them.
local function titles_at(buf, row)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf) }
  local replies = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 30000) or {}
  local titles = {}
  for _, reply in pairs(replies) do
    for _, action in ipairs(reply.result or {}) do
      table.insert(titles, action.title)
    end
  end
  return titles
end

-- Apply the pad fix at a line through vim.lsp.buf.code_action() and vim.ui.select, as a user picks it; false
-- when it is not among the titles the server offers there (Neovim then opens no menu).
local function apply_pad_at(buf, row, titles)
  local offered = false
  for _, title in ipairs(titles) do
    offered = offered or title:find(PAD, 1, true) ~= nil
  end
  if not offered then
    return false
  end
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  local picked = nil
  local original = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    for i, item in ipairs(items) do
      local action = item.action or item[2] or item
      if action.title and action.title:find(PAD, 1, true) then
        picked = action.title
        on_choice(item, i)
        return
      end
    end
    picked = false
    on_choice(nil, nil)
  end
  vim.lsp.buf.code_action()
  local ok = vim.wait(30000, function() return picked ~= nil end, 20)
  vim.ui.select = original
  assert(ok, "no code-action menu")
  return picked
end

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(30000, function() return #vim.lsp.buf_get_clients(buf) > 0 end, 50), "no client attached")
  local client = vim.lsp.buf_get_clients(buf)[1] or select(2, next(vim.lsp.buf_get_clients(buf)))
  result.offset_encoding = client.offset_encoding
  vim.cmd("write")
  assert(vim.wait(120000, function() return #vim.diagnostic.get(buf) > 0 end, 100), "no diagnostics")
  step("diagnostics")
  result.analysed = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, { code = d.code, line = d.lnum + 1, col = d.col, end_col = d.end_col })
  end

  -- Type lines above the first kernel, without saving.
  local first = assert(find_line(buf, "__global__ void transposeNaive("), "no transposeNaive")
  local lines = {}
  for i = 1, typed do
    lines[i] = "// typed line " .. i .. ", not saved"
  end
  vim.api.nvim_buf_set_lines(buf, first - 1, first - 1, true, lines)
  result.typed_at = first
  step("typed")

  -- Hover on the shifted kernel name, through Neovim's hover handler and floating window.
  local name_row = find_line(buf, "__global__ void transposeNaive(")
  local col = vim.api.nvim_buf_get_lines(buf, name_row - 1, name_row, false)[1]:find("transposeNaive", 1, true)
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
  vim.api.nvim_set_current_win(main_win)
  step("hover")

  -- Code lenses of the edited text: the stored ones are dropped first, so only fresh ones are read.
  vim.lsp.codelens.save({}, buf, client.id)
  vim.lsp.codelens.refresh()
  assert(vim.wait(30000, function() return #vim.lsp.codelens.get(buf) > 0 end, 50), "no code lenses")
  result.codelens = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(result.codelens, { line = lens.range.start.line + 1, title = lens.command and lens.command.title })
  end
  step("codelens")

  -- The pad fix at the stale line, then (on the unchanged buffer) at the finding's new line.
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.typed_text = before
  local stale = tonumber(assert(os.getenv("KERNCAST_NVIM_STALE_LINE")))
  result.stale_titles = titles_at(buf, stale)
  result.stale_picked = apply_pad_at(buf, stale, result.stale_titles)
  result.stale_after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, true, before)
  step("stale")
  local now = stale + typed
  result.new_titles = titles_at(buf, now)
  result.new_picked = apply_pad_at(buf, now, result.new_titles)
  result.new_after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  step("new")
  result.version = vim.version()
end

local ok, err = pcall(run)
result.ok = ok
result.error = ok and nil or tostring(err)
local fh = assert(io.open(out_path, "w"))
fh:write(vim.fn.json_encode(result))
fh:close()
vim.cmd("qall!")
