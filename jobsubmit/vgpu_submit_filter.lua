--[[ The submit filter for gres/vgpu, as a Lua module: slurmctld's job_submit/lua runs it through
job_submit.lua (beside this file: the standalone filter), or a site's own job_submit.lua calls it:
  local vgpu = dofile("/usr/share/slurm-vgpu/vgpu_submit_filter.lua")
  -- first in slurm_job_submit(job_desc, part_list, submit_uid):
  local rc = vgpu.job_submit(job_desc, part_list, submit_uid) if rc ~= slurm.SUCCESS then return rc end
  -- first in slurm_job_modify(job_desc, job_rec, part_list, modify_uid):
  local rc = vgpu.job_modify(job_desc, job_rec, part_list, modify_uid) if rc ~= slurm.SUCCESS then return rc end
It defines no globals. Runs in every Lua a supported slurmctld embeds (5.1 to 5.4).

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
A change to a pending job's request or partition (scontrol update) meets the same checks, on the
job as it would be after the change (job_modify below).
With the policy's planner.node_features the table has a `prefer` part, and a job on one of its
partitions that sets no --constraint, --prefer or --nodelist of its own gets a preference (sbatch --prefer):
a vgpu job asking only for parts of a GPU (the table's `parts`) for nodes with a partly used GPU
(it fills a fragment instead of splitting another GPU), any other vgpu job for nodes in use (idle
nodes stay whole), any other job for nodes with no idle GPU (it leaves the CPUs an idle GPU's next
job needs). Slurm tries the preference first and then without it, so a preference never keeps a
job waiting (docs/policy.md). A table from before `part_jobs` gives every vgpu job `gpu_jobs`. ]]

local M = {}

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

-- A count as the C++ parser takes it: a whole number from 1 to 4096, digits only. At most 8
-- digits, so tonumber is exact in every Lua slurmctld may embed (Debian 12's Slurm uses 5.1).
local function parse_count(text)
  if not text:match("^%d+$") or #text > 8 then return nil end
  local n = tonumber(text)
  if n < 1 or n > 4096 then return nil end
  return n
end

-- Splits on a separator and keeps empty fields ("a,,b" -> a, "", b), as the C++ parser does.
local function split(text, sep)
  local out, start = {}, 1
  while true do
    local at = text:find(sep, start, true)
    if at == nil then
      out[#out + 1] = text:sub(start)
      return out
    end
    out[#out + 1] = text:sub(start, at - 1)
    start = at + 1
  end
end

-- The vgpu items of a TRES string such as "gres:vgpu:3g.40gb:1,gres:gpu:1" or "gres/vgpu:small:2":
-- a list of {type=..., count=...}, or nil for a string the nodes would refuse. The grammar is the C++
-- parser's (libvgpu/core/gres_request.cpp: parse_vgpu_gres), and jobsubmit/test holds this one to
-- its verdicts; an untyped item has type nil and is refused by the caller with its own message.
local function vgpu_items(tres)
  local items = {}
  if tres == nil then return items end
  for _, entry in ipairs(split(tres, ",")) do
    if entry:sub(1, 5) == "gres/" then entry = entry:sub(6) end
    local fields = split(entry, ":")
    if fields[1] == "gres" then table.remove(fields, 1) end
    if #fields == 0 or fields[1] == "" then return nil end
    if fields[1] == "vgpu" then
      if #fields == 1 or (#fields == 2 and parse_count(fields[2])) then
        table.insert(items, { type = nil, count = fields[2] or "" })
      elseif #fields > 3 then
        return nil
      else
        local count = "1"
        if #fields == 3 then
          if parse_count(fields[3]) == nil then return nil end
          count = tostring(parse_count(fields[3]))
        end
        table.insert(items, { type = fields[2], count = count })
      end
    end
  end
  return items
end

-- Each type once per field (the nodes refuse a repeated type: VGPU_ALLOC names each type once),
-- and the partition's per-job cap over the sum of a job's counts per node, as the prolog counts.
-- Returns an error message or nil.
local function check_counts(requests, data, partition)
  local seen, per_node = {}, 0
  for _, it in ipairs(requests) do
    local key = it.field .. ":" .. it.type
    if seen[key] then
      return string.format("vgpu: type '%s' is asked for more than once; ask for it once with the total " ..
                           "count (--gres=vgpu:%s:<total>)", it.type, it.type)
    end
    seen[key] = true
    if it.field == "tres_per_node" then per_node = per_node + tonumber(it.count) end
  end
  for p in string.gmatch(partition or "", "[^,]+") do
    local cap = ((data.limits or {})[p] or {}).per_job
    if cap ~= nil and per_node > cap then
      return string.format("vgpu: %d instances asked for per node; partition %s allows %d per job", per_node, p, cap)
    end
  end
  return nil
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

local TRES_FIELDS = { "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }

-- The vgpu requests of a job, each field's value read through `value_of`; nil and the message for a
-- value the nodes would refuse. An empty value is no request (scontrol update's way to drop one).
local function collect_requests(value_of)
  local requests = {}
  for _, field in ipairs(TRES_FIELDS) do
    local value = value_of(field)
    if value == "" then value = nil end
    local items = vgpu_items(value)
    if items == nil then
      return nil, string.format("vgpu: '%s' is not a vgpu request the nodes accept: ask for vgpu:<type>[:<count>], " ..
                                "a count from 1 to 4096, each type once (e.g. --gres=vgpu:1g.10gb:2)", tostring(value))
    end
    for _, it in ipairs(items) do
      it.field = field
      table.insert(requests, it)
    end
  end
  return requests
end

-- What every vgpu request meets, new or changed: a type valid on its partition, each once, within
-- the caps, a share alone. Returns the message of the first problem (nil when none) and the table.
local function refusal(job_desc, requests, partition)
  local data = load_profiles()
  if data == nil then return "vgpu: the vgpu profile list is unreadable; ask the administrators", nil end
  partition = partition or data.default
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
      return string.format("vgpu: untyped request 'vgpu:%s' refused: name a profile, e.g. --gres=vgpu:%s:1. " ..
                           "Valid profiles on partition %s: %s", it.count, names[1] or "<profile>",
                           tostring(partition), listing), data
    end
    if not valid[it.type] then
      return string.format("vgpu: unknown profile '%s' on partition %s. Valid profiles: %s",
                           it.type, tostring(partition), listing), data
    end
  end
  return check_counts(requests, data, partition) or check_shares(job_desc, requests, data, partition), data
end

function M.job_submit(job_desc, part_list, submit_uid)
  local requests, bad = collect_requests(function(field) return job_desc[field] end)
  if requests == nil then
    slurm.log_user("%s", bad)
    return slurm.ERROR
  end
  if #requests == 0 then
    -- Not a vgpu job: never refused for the table's sake, at most given a preference.
    local data = load_profiles(true)
    if data ~= nil then prefer_nodes(job_desc, data, requests) end
    return slurm.SUCCESS
  end
  local refused, data = refusal(job_desc, requests, job_desc.partition)
  if refused ~= nil then
    slurm.log_user("%s", refused)
    return slurm.ERROR
  end
  prefer_nodes(job_desc, data, requests)
  return slurm.SUCCESS
end

-- Whether `requests` hold a share type that only one user may hold (the table's "user" mode).
local function one_user_share(requests, data, partition)
  for _, it in ipairs(requests) do
    for p in string.gmatch(partition or "", "[^,]+") do
      if (((data or {}).shares or {})[p] or {})[it.type] == "user" then return it.type end
    end
  end
  return nil
end

-- An update that changes a job's vgpu request or partition is checked as a new submission of the
-- job as it would be after it: the changed fields from `job_desc`, the rest from `job_rec`. One
-- that changes neither is never refused, so a job that a newer policy would refuse can still be
-- held, released, reprioritized or cancelled. A job becomes a one-user share only at submission:
-- its --exclusive=user cannot be set safely by an update (the job record does not say whether the
-- job has --exclusive, which --exclusive=user would weaken).
function M.job_modify(job_desc, job_rec, part_list, modify_uid)
  local changed = job_desc.partition ~= nil
  for _, field in ipairs(TRES_FIELDS) do changed = changed or job_desc[field] ~= nil end
  if not changed then return slurm.SUCCESS end
  local function after(field)
    if job_desc[field] ~= nil then return job_desc[field] end
    return job_rec[field]
  end
  local requests, bad = collect_requests(after)
  if requests == nil then
    slurm.log_user("%s", bad)
    return slurm.ERROR
  end
  if #requests == 0 then return slurm.SUCCESS end
  local partition = after("partition")
  local probe = { shared = 0 } -- the share check must not set --exclusive=user on the real job here
  local refused, data = refusal(probe, requests, partition)
  if refused ~= nil then
    slurm.log_user("%s", refused)
    return slurm.ERROR
  end
  local share = one_user_share(requests, data, partition or data.default)
  if share ~= nil then
    local before = collect_requests(function(field) return job_rec[field] end) or {}
    if one_user_share(before, data, job_rec.partition or data.default) ~= share then
      slurm.log_user("vgpu: '%s' is a share of an instance that serves one user, which needs --exclusive=user " ..
                     "from submission: submit the job again with --gres=vgpu:%s:1", share, share)
      return slurm.ERROR
    end
  end
  return slurm.SUCCESS
end

return M
