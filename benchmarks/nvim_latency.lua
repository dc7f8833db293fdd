-- Driver of benchmarks/nvim_latency.py: time save -> diagnostics in a real Neovim with the Kerncast setup.
-- Opens the file, waits for the first diagnostics (server start, imports, first analysis), then for each
-- round makes an edit, writes the buffer and waits for the diagnostics of that buffer version:
--   "all"  inserts a comment line at the top: every kernel's lines move (each report is shifted, none made again);
--   "one"  toggles a constant inside the first kernel: only that kernel's PTX changes (from the second round on,
--          to a text seen before, whose ptxas numbers the server kept); with $KERNCAST_NVIM_NEW_CODE set, it
--          writes a constant no save had before, so that ptxas runs on the kernel as after a real edit.
-- After each save the bare `nvcc -ptx` of the same file ($KERNCAST_NVIM_NVCC, arch $KERNCAST_NVIM_ARCH) is timed
-- too, so that every save has its own baseline taken under the same load of the machine.
-- Writes the latencies (seconds) as JSON to $KERNCAST_NVIM_OUT.
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local rounds = tonumber(os.getenv("KERNCAST_NVIM_ROUNDS") or "5")
local nvcc = os.getenv("KERNCAST_NVIM_NVCC")
local arch = os.getenv("KERNCAST_NVIM_ARCH") or "sm_75"
local new_code = (os.getenv("KERNCAST_NVIM_NEW_CODE") or "") ~= ""
local result = { all = {}, one = {}, base_all = {}, base_one = {} }
local published = {}

local default = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, params, ctx, config)
  if params and params.version then
    published[params.version] = vim.loop.hrtime()
  end
  return default(err, params, ctx, config)
end

local function save_and_wait(buf)
  local version = vim.lsp.util.buf_versions[buf]
  local start = vim.loop.hrtime()
  vim.cmd("silent write")
  assert(vim.wait(300000, function() return published[version] ~= nil end, 5), "no diagnostics for a save")
  return (published[version] - start) / 1e9
end

local function bare_nvcc()
  if not nvcc then
    return nil
  end
  local out = vim.fn.tempname() .. ".ptx"
  local start = vim.loop.hrtime()
  vim.fn.system({ nvcc, "-ptx", "-arch=" .. arch, file, "-o", out })
  local took = (vim.loop.hrtime() - start) / 1e9
  os.remove(out)
  assert(vim.v.shell_error == 0, "the bare nvcc failed")
  return took
end

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(60000, function() return #vim.lsp.buf_get_clients(buf) > 0 end, 20), "no client attached")
  local t0 = vim.loop.hrtime()
  assert(vim.wait(300000, function() return next(published) ~= nil end, 20), "no first diagnostics")
  result.first = (vim.loop.hrtime() - t0) / 1e9
  local target
  for i, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if text:find("y[i] = a * x[i];", 1, true) then
      target = i
      break
    end
  end
  assert(target, "the first kernel's line was not found")
  for r = 1, rounds do
    vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "// edit " .. r })
    target = target + 1
    table.insert(result.all, save_and_wait(buf))
    table.insert(result.base_all, bare_nvcc())
    local line = vim.api.nvim_buf_get_lines(buf, target - 1, target, false)[1]
    local toggled
    if new_code then
      toggled = line:gsub("a %* x%[i%][^;]*;", "a * x[i] + " .. r .. ".5f;")
    else
      toggled = line:find("a * x[i];", 1, true) and line:gsub("a %* x%[i%];", "a * x[i] + 1.0f;")
        or line:gsub("a %* x%[i%] %+ 1%.0f;", "a * x[i];")
    end
    vim.api.nvim_buf_set_lines(buf, target - 1, target, false, { toggled })
    table.insert(result.one, save_and_wait(buf))
    table.insert(result.base_one, bare_nvcc())
  end
end

local ok, err = pcall(run)
result.ok = ok
result.error = err and tostring(err) or nil
local f = assert(io.open(out_path, "w"))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd("qall!")
