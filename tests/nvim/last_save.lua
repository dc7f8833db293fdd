-- Driver of the Neovim test of the change since the last save: save a .cu file, wait for its diagnostics,
-- cut the naive kernel's inner loop in the buffer and save again, then read the code lenses (refreshed until
-- one speaks of the last save) and the hover window of the naive kernel's name. Written as JSON.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local out_path = assert(os.getenv("KERNCAST_NVIM_OUT"))
local file = assert(os.getenv("KERNCAST_NVIM_FILE"))
local old_loop = assert(os.getenv("KERNCAST_NVIM_OLD_LOOP"))
local new_loop = assert(os.getenv("KERNCAST_NVIM_NEW_LOOP"))
local result = { steps = {} }
local d = dofile(here .. "driver.lua").new(result)

local function any_since(lenses)
  for _, lens in ipairs(lenses) do
    if lens.title and lens.title:find("last save", 1, true) then
      return true
    end
  end
  return false
end

local function run()
  local buf, client = d.open(file)
  d.save_and_wait(buf)
  result.first_lenses = d.lenses(buf, client)
  d.step("first save")

  local row = assert(d.find_line(buf, old_loop), "no naive loop")
  local text = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
  local at = text:find(old_loop, 1, true)
  local edited = text:sub(1, at - 1) .. new_loop .. text:sub(at + #old_loop)
  vim.api.nvim_buf_set_lines(buf, row - 1, row, true, { edited })
  vim.cmd("write")
  d.step("second save")

  local lenses = {}
  vim.wait(120000, function()
    lenses = d.lenses(buf, client)
    return any_since(lenses)
  end, 500)
  result.codelens = lenses
  d.step("codelens")

  local name_row = assert(d.find_line(buf, "void matmulNaive("), "no matmulNaive")
  local col = vim.api.nvim_buf_get_lines(buf, name_row - 1, name_row, false)[1]:find("matmulNaive", 1, true)
  result.hover = d.hover_lines(name_row, col + 2)
  d.step("hover")
end

d.finish(out_path, run)
