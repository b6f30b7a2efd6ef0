-- Health of a laxity ElasticSchedule, read from its status conditions.
-- Ready stays True while the node pool scales up as planned (reason
-- ScalingUp), so a routine scale-up is Healthy; nodes overdue past their
-- lead time, a failing backend or a stuck step are Degraded, as is a
-- schedule that cannot be planned or meets no deadline (Stalled True).
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
  hs.message = "Being deleted: the node pool is released first"
  return hs
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the schedule to be planned"
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

local ready = condition(obj.status.conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the schedule to be planned"
  return hs
end

if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end

-- Ready False: nodes lost are being requested again, and a new plan is
-- being made; everything else needs someone to look.
if ready.reason == "NodesLost" then
  hs.status = "Progressing"
else
  hs.status = "Degraded"
end
hs.message = ready.message
return hs
