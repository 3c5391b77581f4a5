-- The submit filter's verdict on each line of a corpus of GRES strings, as slurmctld hands them to
-- job_submit/lua in tres_per_node: "accept" or "refuse", one line each (gres_grammar_test.py).
--   SLURM_CONF=<dir>/slurm.conf lua5.3 gres_verdicts.lua <job_submit.lua> <corpus>
-- The partition "main" and its table come from <dir>/vgpu_profiles.lua, as on a controller.
slurm = { SUCCESS = 0, ERROR = -1, log_user = function() end, log_error = function() end, log_info = function() end }
dofile(arg[1])
for line in io.lines(arg[2]) do
  local job = { tres_per_node = line, partition = "main" }
  print(slurm_job_submit(job, {}, 1000) == slurm.SUCCESS and "accept" or "refuse")
end
