-- Driver of the Neovim test of unsaved edits: save a .cu file, wait for its diagnostics, type lines above the
-- first kernel without saving, then hover the shifted kernel name, refresh the code lenses, and ask for the
-- pad fix through Neovim's own code-action flow, at the line the finding had when it was analysed (the stale
-- range) and at the line it has now. What Neovim showed and what its buffer became is written as JSON.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local typed = tonumber(os.getenv("KERNCAST_NVIM_TYPED") or "15")
local result = { steps = {} }
local d = dofile(here .. "driver.lua").new(result)
local PAD = "pad the last dimension"

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
  local buf, client = d.open(file)
  result.offset_encoding = client.offset_encoding
  d.save_and_wait(buf)
  d.step("diagnostics")
  result.analysed = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.diagnostics = {}
  for _, diag in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, { code = diag.code, line = diag.lnum + 1, col = diag.col, end_col = diag.end_col })
  end

  -- Type lines above the first kernel, without saving.
  local first = assert(d.find_line(buf, "__global__ void transposeNaive("), "no transposeNaive")
  local lines = {}
  for i = 1, typed do
    lines[i] = "// typed line " .. i .. ", not saved"
  end
  vim.api.nvim_buf_set_lines(buf, first - 1, first - 1, true, lines)
  result.typed_at = first
  d.step("typed")

  -- Hover on the shifted kernel name, through Neovim's hover handler and floating window.
  local name_row = d.find_line(buf, "__global__ void transposeNaive(")
  local col = vim.api.nvim_buf_get_lines(buf, name_row - 1, name_row, false)[1]:find("transposeNaive", 1, true)
  result.hover = d.hover_lines(name_row, col + 2)
  d.step("hover")

  -- Code lenses of the edited text (fresh ones only).
  result.codelens = d.lenses(buf, client, 30000)
  assert(#result.codelens > 0, "no code lenses")
  d.step("codelens")

  -- The pad fix at the stale line, then (on the unchanged buffer) at the finding's new line.
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.typed_text = before
  local stale = tonumber(assert(os.getenv("KERNCAST_NVIM_STALE_LINE")))
  result.stale_titles = titles_at(buf, stale)
  result.stale_picked = apply_pad_at(buf, stale, result.stale_titles)
  result.stale_after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, true, before)
  d.step("stale")
  local now = stale + typed
  result.new_titles = titles_at(buf, now)
  result.new_picked = apply_pad_at(buf, now, result.new_titles)
  result.new_after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  d.step("new")
  result.version = vim.version()
end

d.finish(out_path, run)
