--[[ job_submit/lua script for gres/vgpu, for a controller with no filter of its own: copy it to
job_submit.lua beside slurm.conf. It runs the filter module, vgpu_submit_filter.lua, found beside
this script or where the package installs it (/usr/share/slurm-vgpu). A site with a filter of its
own calls the module from it instead (the lines are at the top of the module; docs/slurm.md). ]]

local function filter_module()
  local here = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./"
  local tried = {}
  for _, dir in ipairs({ here, "/usr/share/slurm-vgpu/" }) do
    local path = dir .. "vgpu_submit_filter.lua"
    local file = io.open(path, "r")
    if file ~= nil then
      file:close()
      return dofile(path)
    end
    table.insert(tried, path)
  end
  error("job_submit/vgpu: vgpu_submit_filter.lua not found (tried " .. table.concat(tried, ", ") .. ")")
end

local vgpu = filter_module()

function slurm_job_submit(job_desc, part_list, submit_uid)
  return vgpu.job_submit(job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return vgpu.job_modify(job_desc, job_rec, part_list, modify_uid)
end
