-- The test's init.lua: the documented Kerncast setup (kerncast.lua next to this file), nothing else.
vim.cmd("filetype on")
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
if os.getenv("KERNCAST_CMD") then
  vim.g.kerncast_cmd = vim.fn.json_decode(os.getenv("KERNCAST_CMD"))
end
vim.g.kerncast_settings = { gpu = "v100", arch = "sm_75" }
dofile(here .. "kerncast.lua")
