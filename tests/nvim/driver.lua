-- What the Neovim test drivers (e2e.lua, stale.lua, last_save.lua) do alike: open the file and wait for the
-- Kerncast client, save and wait for diagnostics, hover a position through Neovim's own hover window, read
-- the code lenses, and write what was seen as JSON (also when a step fails: `ok` and `error` say so).
-- Loaded with `dofile` next to the driver; each call returns a table of these functions around `result`.
local M = {}

function M.new(result)
  local d = { result = result }

  function d.step(name)
    table.insert(result.steps, name)
  end

  -- The 1-based row of the first line of the buffer that contains `needle` (nil when none does).
  function d.find_line(buf, needle)
    for i, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      if text:find(needle, 1, true) then
        return i
      end
    end
    return nil
  end

  -- Edit `file` and wait for the client to attach: the buffer and the client.
  function d.open(file)
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    local buf = vim.api.nvim_get_current_buf()
    assert(vim.wait(30000, function() return #vim.lsp.buf_get_clients(buf) > 0 end, 50), "no client attached")
    return buf, vim.lsp.buf_get_clients(buf)[1] or select(2, next(vim.lsp.buf_get_clients(buf)))
  end

  -- Save the buffer and wait until its analysis has published diagnostics.
  function d.save_and_wait(buf)
    vim.cmd("write")
    assert(vim.wait(120000, function() return #vim.diagnostic.get(buf) > 0 end, 100), "no diagnostics")
  end

  -- The lines of Neovim's hover window at (row, col) of the current window; the window is closed after.
  function d.hover_lines(row, col)
    vim.api.nvim_win_set_cursor(0, { row, col })
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
    local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false)
    vim.api.nvim_win_close(float, true)
    vim.api.nvim_set_current_win(main_win)
    return lines
  end

  -- The code lenses (line, title) of the buffer, refreshed by hand as Neovim 0.7 needs: the stored ones are
  -- dropped first, so only fresh ones are read. Empty when none came within `wait_ms` (5 s when not given).
  function d.lenses(buf, client, wait_ms)
    vim.lsp.codelens.save({}, buf, client.id)
    vim.lsp.codelens.refresh()
    vim.wait(wait_ms or 5000, function() return #vim.lsp.codelens.get(buf) > 0 end, 50)
    local out = {}
    for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
      table.insert(out, { line = lens.range.start.line + 1, title = lens.command and lens.command.title })
    end
    return out
  end

  -- Run the driver's steps, write `result` as JSON to `out_path`, and quit Neovim.
  function d.finish(out_path, run)
    local ok, err = pcall(run)
    result.ok = ok
    result.error = ok and nil or tostring(err)
    local fh = assert(io.open(out_path, "w"))
    fh:write(vim.fn.json_encode(result))
    fh:close()
    vim.cmd("qall!")
  end

  return d
end

return M
