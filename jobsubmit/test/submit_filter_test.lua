-- The submit filter's entry points outside slurmctld: job_modify checks a changed request like a new
-- one, the module defines no globals, and a site's own job_submit.lua can call it beside its rules.
--   lua5.x submit_filter_test.lua <jobsubmit dir>
-- Prints "PASS: ..." and exits 0, or prints each failed check and exits 1.
local dir = arg[1] .. "/"
local messages = {}
slurm = { SUCCESS = 0, ERROR = -1, log_info = function() end, log_error = function() end }
function slurm.log_user(fmt, ...) table.insert(messages, string.format(fmt, ...)) end

local conf = os.tmpname()
os.remove(conf)
assert(os.execute("mkdir " .. conf) == 0 or true)
local profiles = io.open(conf .. "/vgpu_profiles.lua", "w")
profiles:write('return { default = "main", partitions = { main = {"1g.10gb", "3g.40gb", "quarter", "half"}, ' ..
               'small = {"1g.10gb", "quarter"} }, shares = { main = { quarter = "user", half = "any" }, ' ..
               'small = { quarter = "user" } }, limits = { main = { per_job = 4 } } }\n')
profiles:close()
-- The filter finds its table beside slurm.conf.
local real_getenv = os.getenv
os.getenv = function(name)
  if name == "SLURM_CONF" then return conf .. "/slurm.conf" end
  return real_getenv(name)
end

local failures = 0
local function check(what, ok, detail)
  if not ok then
    failures = failures + 1
    print("FAIL: " .. what .. (detail and (": " .. detail) or ""))
  end
end
local function last_message() return messages[#messages] or "(none)" end

-- The module is a table of two functions and leaves the global table as it found it.
local before = {}
for k in pairs(_G) do before[k] = true end
local vgpu = dofile(dir .. "vgpu_submit_filter.lua")
for k in pairs(_G) do check("the module defines no global, found '" .. k .. "'", before[k]) end
check("the module has job_submit and job_modify",
      type(vgpu) == "table" and type(vgpu.job_submit) == "function" and type(vgpu.job_modify) == "function")

local function modify(change, rec)
  messages = {}
  return vgpu.job_modify(change, rec, {}, 1000)
end
local pending = { partition = "main", tres_per_node = "gres/vgpu:1g.10gb:1" }

check("an update that touches neither request nor partition passes, whatever the request",
      modify({ priority = 5 }, { partition = "main", tres_per_node = "gres/vgpu:9g.99gb:1" }) == slurm.SUCCESS)
check("a changed request to an unknown profile is refused",
      modify({ tres_per_node = "gres/vgpu:9g.99gb:1" }, pending) == slurm.ERROR, last_message())
check("... and the refusal names it and lists the valid ones",
      last_message():find("unknown profile '9g.99gb' on partition main. Valid profiles: 1g.10gb 3g.40gb half quarter",
                          1, true) ~= nil, last_message())
check("a changed request to a valid profile passes",
      modify({ tres_per_node = "gres:vgpu:3g.40gb:1" }, pending) == slurm.SUCCESS, last_message())
check("a malformed changed request is refused",
      modify({ tres_per_node = "gres:vgpu:1g.10gb:0" }, pending) == slurm.ERROR and
      last_message():find("is not a vgpu request the nodes accept", 1, true) ~= nil, last_message())
check("a changed request over the per-job cap is refused",
      modify({ tres_per_node = "gres:vgpu:1g.10gb:5" }, pending) == slurm.ERROR and
      last_message():find("5 instances asked for per node; partition main allows 4 per job", 1, true) ~= nil,
      last_message())
check("moving a job to a partition that does not offer its type is refused",
      modify({ partition = "small" }, { partition = "main", tres_per_node = "gres/vgpu:3g.40gb:1" }) == slurm.ERROR and
      last_message():find("unknown profile '3g.40gb' on partition small", 1, true) ~= nil, last_message())
check("moving a job to a partition that offers its type passes",
      modify({ partition = "small" }, pending) == slurm.SUCCESS, last_message())
check("dropping the request passes", modify({ tres_per_node = "" }, pending) == slurm.SUCCESS, last_message())

local change = { tres_per_node = "gres/vgpu:quarter:1" }
check("becoming a one-user share by an update is refused", modify(change, pending) == slurm.ERROR and
      last_message():find("needs --exclusive=user from submission", 1, true) ~= nil, last_message())
check("... and the update is left as it was", change.shared == nil)
check("a one-user share moved to a partition where it is one user's too passes",
      modify({ partition = "small" }, { partition = "main", tres_per_node = "gres/vgpu:quarter:1" }) == slurm.SUCCESS,
      last_message())
check("becoming a share any user may hold passes",
      modify({ tres_per_node = "gres/vgpu:half:1" }, pending) == slurm.SUCCESS, last_message())
check("two shares by an update are refused", modify({ tres_per_node = "gres/vgpu:half:2" }, pending) == slurm.ERROR,
      last_message())

-- job_submit through the module gives a new one-user share its --exclusive=user, as before.
local job = { partition = "main", tres_per_node = "gres/vgpu:quarter:1", shared = 65534 }
messages = {}
check("a new one-user share is accepted", vgpu.job_submit(job, {}, 1000) == slurm.SUCCESS, last_message())
check("... with --exclusive=user", job.shared == 2)

-- A site's own job_submit.lua with a rule of its own, calling the module first in each entry point.
local site = conf .. "/site_job_submit.lua"
local f = io.open(site, "w")
f:write('local vgpu = dofile("' .. dir .. 'vgpu_submit_filter.lua")\n',
        'function slurm_job_submit(job_desc, part_list, submit_uid)\n',
        '  local rc = vgpu.job_submit(job_desc, part_list, submit_uid) if rc ~= slurm.SUCCESS then return rc end\n',
        '  if job_desc.name == "forbidden" then slurm.log_user("site: no such name") return slurm.ERROR end\n',
        '  return slurm.SUCCESS\n',
        'end\n',
        'function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n',
        '  local rc = vgpu.job_modify(job_desc, job_rec, part_list, modify_uid) if rc ~= slurm.SUCCESS then return rc end\n',
        '  return slurm.SUCCESS\n',
        'end\n')
f:close()
dofile(site)
messages = {}
check("the site's filter refuses what vgpu refuses",
      slurm_job_submit({ partition = "main", tres_per_node = "gres:vgpu:2" }, {}, 1000) == slurm.ERROR and
      last_message():find("untyped request", 1, true) ~= nil, last_message())
check("the site's own rule still applies",
      slurm_job_submit({ partition = "main", name = "forbidden" }, {}, 1000) == slurm.ERROR and
      last_message() == "site: no such name", last_message())
check("the site's filter passes a valid vgpu job",
      slurm_job_submit({ partition = "main", tres_per_node = "gres:vgpu:1g.10gb:2" }, {}, 1000) == slurm.SUCCESS,
      last_message())
check("the site's modify refuses a bad change",
      slurm_job_modify({ tres_per_node = "gres:vgpu:9g.99gb:1" }, pending, {}, 1000) == slurm.ERROR)

-- The standalone script is the same filter.
slurm_job_submit, slurm_job_modify = nil, nil
dofile(dir .. "job_submit.lua")
check("the standalone script defines slurm_job_modify over the module",
      slurm_job_modify({ tres_per_node = "gres:vgpu:9g.99gb:1" }, pending, {}, 1000) == slurm.ERROR)

os.execute("rm -rf '" .. conf .. "'")
if failures > 0 then
  print(failures .. " check(s) failed under " .. _VERSION)
  os.exit(1)
end
print("PASS: submit filter module, job_modify and a site's filter beside it, under " .. _VERSION)
