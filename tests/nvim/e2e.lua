-- Driver of the Neovim end-to-end test: edit a .cu file with the Kerncast setup loaded, save it, wait for the
-- diagnostics, hover the first kernel's name, refresh the code lenses, and write what was seen as JSON.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local kernel = os.getenv("KERNCAST_NVIM_KERNEL") or "transposeNaive"
local result = { steps = {} }
local d = dofile(here .. "driver.lua").new(result)

local function run()
  local buf, client = d.open(file)
  result.filetype = vim.bo[buf].filetype
  result.uri = vim.uri_from_bufnr(buf)
  d.step("attached")
  -- Save, then wait for the analysis of the save to be published.
  d.save_and_wait(buf)
  d.step("diagnostics")
  result.diagnostics = {}
  for _, diag in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics,
      { code = diag.code, line = diag.lnum + 1, source = diag.source, message = diag.message })
  end
  -- Hover on the kernel's name, through Neovim's own hover handler and floating window.
  local row = assert(d.find_line(buf, "__global__ void " .. kernel), "no " .. kernel)
  local col = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]:find("__global__ void " .. kernel, 1, true)
  result.hover = d.hover_lines(row, col + #"__global__ void " + 2)
  d.step("hover")
  -- Code lenses: refreshed by hand in Neovim 0.7.
  result.codelens = d.lenses(buf, client, 30000)
  assert(#result.codelens > 0, "no code lenses")
  d.step("codelens")
  result.version = vim.version()
end

d.finish(out_path, run)
