--[[ job_submit/lua filter for gres/vgpu (Slurm 22.05, Debian 12 ships job_submit_lua.so).
Refuses, at submission, vgpu requests the nodes could never serve:
  * untyped `--gres=vgpu:N`: it would consume the "free" padding type (docs/slurm.md);
  * a type that is not a valid profile for the partition (e.g. vgpu:9g.99gb:1).
Valid profiles per partition come from vgpu_profiles.lua next to slurm.conf:
  return { default = "main", partitions = { main = {"1g.10gb", "3g.40gb"} } }
The message lists the valid profiles so the user can fix the request.
A share type (a part of one instance, docs/shared-instances.md) is asked alone, one per node
(--gres=vgpu:quarter:1): Slurm counts a node's shares, the node puts each job's on its own instance,
so more than one share, or a share beside anything else, could be counted yet not placeable.
Unless the partition shares instances across users, the job also gets --exclusive=user: Slurm
cannot count shares per user, and an instance's MPS server serves one user at a time.
The table's `shares` part names them: shares = { main = { quarter = "user" } }.
With the policy's planner.node_features the table has a `prefer` part, and a job on one of its
partitions that sets no --constraint, --prefer or --nodelist of its own gets a preference (sbatch --prefer):
a vgpu job asking only for parts of a GPU (the table's `parts`) for nodes with a partly used GPU
(it fills a fragment instead of splitting another GPU), any other vgpu job for nodes in use (idle
nodes stay whole), any other job for nodes with no idle GPU (it leaves the CPUs an idle GPU's next
job needs). Slurm tries the preference first and then without it, so a preference never keeps a
job waiting (docs/policy.md). A table from before `part_jobs` gives every vgpu job `gpu_jobs`. ]]

local function conf_dir()
  local conf = os.getenv("SLURM_CONF") or "/etc/slurm/slurm.conf"
  return conf:match("^(.*)/[^/]*$") or "."
end

-- `quiet`: a job that asks for no vgpu is never refused or logged about for the table's sake.
local function load_profiles(quiet)
  local ok, data = pcall(dofile, conf_dir() .. "/vgpu_profiles.lua")
  if ok and type(data) == "table" then return data end
  if not quiet then slurm.log_error("job_submit/vgpu: cannot load vgpu_profiles.lua: %s", tostring(data)) end
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

-- The share rules above, for requests that passed the type check. Returns an error message or nil.
local function check_shares(job_desc, requests, data, partition)
  local share, whose = nil, nil
  for _, it in ipairs(requests) do
    for p in string.gmatch(partition or "", "[^,]+") do
      local mode = ((data.shares or {})[p] or {})[it.type]
      if mode ~= nil then
        share = share or it
        if mode == "user" then whose = "user" end
      end
    end
  end
  if share == nil then return nil end
  if #requests > 1 or share.field ~= "tres_per_node" or share.count ~= "1" then
    return string.format("vgpu: '%s' is a share of an instance: a job asks for one share per node and no " ..
                         "other vgpu (--gres=vgpu:%s:1); for more, ask for a larger type or a whole instance",
                         share.type, share.type)
  end
  -- 0 is --exclusive (the whole node): already stricter than one user's.
  if whose == "user" and job_desc.shared ~= 0 then job_desc.shared = 2 end
  return nil
end

-- The node preference above; nothing when the table has none or the job chose its own features
-- or nodes (Slurm refuses a preference its required nodes lack).
-- `requests`: the job's vgpu requests (none for a CPU-only job).
local function prefer_nodes(job_desc, data, requests)
  local p = data.prefer
  if p == nil or job_desc.prefer ~= nil or job_desc.features ~= nil or job_desc.req_nodes ~= nil then
    return
  end
  local want = p.cpu_jobs
  if #requests > 0 then
    want = p.part_jobs or p.gpu_jobs
    for _, it in ipairs(requests) do
      if not (p.parts or {})[it.type] then want = p.gpu_jobs end
    end
  end
  for part in string.gmatch(job_desc.partition or data.default or "", "[^,]+") do
    if (p.partitions or {})[part] then
      job_desc.prefer = want
      return
    end
  end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local requests = {}
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
    for _, it in ipairs(vgpu_items(job_desc[field])) do
      it.field = field
      table.insert(requests, it)
    end
  end
  if #requests == 0 then
    -- Not a vgpu job: never refused for the table's sake, at most given a preference.
    local data = load_profiles(true)
    if data ~= nil then prefer_nodes(job_desc, data, requests) end
    return slurm.SUCCESS
  end

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
  local refused = check_shares(job_desc, requests, data, partition)
  if refused ~= nil then
    slurm.log_user("%s", refused)
    return slurm.ERROR
  end
  prefer_nodes(job_desc, data, requests)
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
