--[[ job_submit/lua filter for gres/vgpu (Slurm 22.05, Debian 12 ships job_submit_lua.so).
Refuses, at submission, vgpu requests the nodes could never serve:
  * untyped `--gres=vgpu:N`: it would consume the "free" padding type (docs/slurm.md);
  * a type that is not a valid profile for the partition (e.g. vgpu:9g.99gb:1).
Valid profiles per partition come from vgpu_profiles.lua next to slurm.conf:
  return { default = "main", partitions = { main = {"1g.10gb", "3g.40gb"} } }
The message lists the valid profiles so the user can fix the request. ]]

local function conf_dir()
  local conf = os.getenv("SLURM_CONF") or "/etc/slurm/slurm.conf"
  return conf:match("^(.*)/[^/]*$") or "."
end

local function load_profiles()
  local ok, data = pcall(dofile, conf_dir() .. "/vgpu_profiles.lua")
  if ok and type(data) == "table" then return data end
  slurm.log_error("job_submit/vgpu: cannot load vgpu_profiles.lua: %s", tostring(data))
  return nil
end

-- Yields {type=..., count=...} for every vgpu item of a TRES string such as
-- "gres:vgpu:3g.40gb:1,gres:gpu:1" or "gres/vgpu:2".
local function vgpu_items(tres)
  local items = {}
  if tres == nil then return items end
  for item in string.gmatch(tres, "[^,]+") do
    local rest = item:gsub("^gres[:/]", "")
    local name, spec = rest:match("^([^:]+):?(.*)$")
    if name == "vgpu" then
      local typ, count = spec:match("^([^:]+):(%d+)$")
      if typ == nil then
        if spec:match("^%d*$") then typ, count = nil, spec else typ, count = spec, "1" end
      end
      table.insert(items, { type = typ, count = count })
    end
  end
  return items
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local requests = {}
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    for _, it in ipairs(vgpu_items(job_desc[field])) do table.insert(requests, it) end
  end
  if #requests == 0 then return slurm.SUCCESS end

  local data = load_profiles()
  if data == nil then
    slurm.log_user("vgpu: the vgpu profile list is unreadable; ask the administrators")
    return slurm.ERROR
  end
  local partition = job_desc.partition or data.default
  local valid = {}
  for p in string.gmatch(partition or "", "[^,]+") do
    for _, prof in ipairs((data.partitions or {})[p] or {}) do valid[prof] = true end
  end
  local names = {}
  for prof in pairs(valid) do table.insert(names, prof) end
  table.sort(names)
  local listing = (#names > 0) and table.concat(names, " ") or "(none: no vgpu on this partition)"

  for _, it in ipairs(requests) do
    if it.type == nil then
      slurm.log_user("vgpu: untyped request 'vgpu:%s' refused: name a profile, e.g. --gres=vgpu:%s:1. " ..
                     "Valid profiles on partition %s: %s", it.count, names[1] or "<profile>",
                     tostring(partition), listing)
      return slurm.ERROR
    end
    if not valid[it.type] then
      slurm.log_user("vgpu: unknown profile '%s' on partition %s. Valid profiles: %s",
                     it.type, tostring(partition), listing)
      return slurm.ERROR
    end
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
