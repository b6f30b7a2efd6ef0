-- Health of a laxity IntermittentQuery, read from its status conditions.
-- Healthy while it is on track and once it finished in time; Degraded when
-- it is expected late (at risk), missed its deadline, cannot run (a step
-- failed on every attempt, no plan meets its deadline, its input cannot be
-- read, its ElasticSchedule does not exist); Progressing until its schedule
-- has planned it.
local hs = {}

local function condition(conditions, type)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: its steps are cancelled first"
  return hs
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the query's schedule to plan it"
  return hs
end

if obj.metadata.generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < obj.metadata.generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to see the latest spec"
  return hs
end

local stalled = condition(obj.status.conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end

local succeeded = condition(obj.status.conditions, "Succeeded")
if succeeded ~= nil and succeeded.status == "True" then
  local missed = condition(obj.status.conditions, "DeadlineMissed")
  if missed ~= nil and missed.status == "True" then
    hs.status = "Degraded"
    hs.message = "Finished late: " .. missed.message
    return hs
  end
  hs.status = "Healthy"
  hs.message = succeeded.message
  return hs
end

local ready = condition(obj.status.conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the query's schedule to plan it"
  return hs
end

if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end

if ready.reason == "WaitingForPlan" then
  hs.status = "Progressing"
else
  hs.status = "Degraded"
end
hs.message = ready.message
return hs
