-- Driver of the Neovim test of the rewriting quick fixes: for each case (a file, the finding's code, and words
-- of the fix's title), edit the file, save it and wait for its diagnostics, read the kernel's code lens, apply
-- the fix through Neovim's own code-action flow (vim.lsp.buf.code_action and vim.ui.select, as a user picks it),
-- save the fixed buffer and wait for the analysis of that save, then read the diagnostics and the lens again.
-- All cases run in one editor session, one buffer after another. Written as JSON, one entry per case.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local cases = vim.fn.json_decode(assert(os.getenv("KERNCAST_NVIM_CASES")))
local result = { steps = {}, cases = {} }
local d = dofile(here .. "driver.lua").new(result)

local function diagnostics(buf)
  local out = {}
  for _, diag in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out, { code = diag.code, line = diag.lnum + 1, message = diag.message })
  end
  return out
end

-- The title of the code lens on the kernel's definition line (nil when none came).
local function kernel_lens(buf, client, kernel)
  local row = d.find_line(buf, "void " .. kernel .. "(")
  for _, lens in ipairs(d.lenses(buf, client, 30000)) do
    if lens.line == row then
      return lens.title
    end
  end
  return nil
end

-- Pick the action whose title holds `words` from the menu Neovim opens at `row`: the titles offered, and the
-- title picked (false when none matched, so Neovim applied nothing).
local function apply_at(row, words)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  local offered, picked = {}, nil
  local original = vim.ui.select
  vim.ui.select = function(items, _, on_choice)
    for i, item in ipairs(items) do
      local action = item.action or item[2] or item
      table.insert(offered, action.title)
      if picked == nil and action.title and action.title:find(words, 1, true) then
        picked = action.title
        on_choice(item, i)
      end
    end
    if picked == nil then
      picked = false
      on_choice(nil, nil)
    end
  end
  vim.lsp.buf.code_action()
  local ok = vim.wait(30000, function() return picked ~= nil end, 20)
  vim.ui.select = original
  assert(ok, "no code-action menu at line " .. row)
  return offered, picked
end

local function run_case(case)
  local out = { file = case.file }
  table.insert(result.cases, out)
  local buf, client = d.open(case.file)
  d.save_and_wait(buf)
  out.before = diagnostics(buf)
  out.lens_before = kernel_lens(buf, client, case.kernel)
  d.step("analysed " .. case.file)

  local row = nil
  for _, diag in ipairs(out.before) do
    if diag.code == case.code and row == nil then
      row = diag.line
    end
  end
  assert(row, "no " .. case.code .. " diagnostic in " .. case.file)
  out.offered, out.picked = apply_at(row, case.title)
  assert(out.picked, "no action '" .. case.title .. "' among " .. table.concat(out.offered, " | "))
  d.step("applied " .. case.file)

  -- Save the fixed buffer; the old diagnostics are dropped first, so the ones waited for are the new save's.
  vim.diagnostic.reset(vim.lsp.diagnostic.get_namespace(client.id), buf)
  d.save_and_wait(buf)
  out.after = diagnostics(buf)
  out.lens_after = kernel_lens(buf, client, case.kernel)
  out.modified = vim.bo[buf].modified
  d.step("saved " .. case.file)
end

local function run()
  for _, case in ipairs(cases) do
    run_case(case)
  end
  result.version = vim.version()
end

d.finish(out_path, run)
