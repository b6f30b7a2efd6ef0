-- Health of a laxity RecurringQuery, read from its status. Suspended while
-- spec.suspend is true; Degraded when its spec cannot be honoured (Stalled
-- True), a window's name is taken, or its newest finished window missed
-- its deadline, failed or was skipped; Healthy otherwise.
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
  hs.message = "Being deleted"
  return hs
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the first windows to be created"
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
  hs.message = "Waiting for the first windows to be created"
  return hs
end

if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = ready.message
  return hs
end

if ready.status ~= "True" then
  hs.status = "Degraded"
  hs.message = ready.message
  return hs
end

-- The newest finished window (windows are newest first).
if obj.status.windows ~= nil then
  for _, w in ipairs(obj.status.windows) do
    local query = w.query or ""
    if w.outcome == "Succeeded" then
      if w.met ~= true then
        hs.status = "Degraded"
        hs.message = "The newest finished window, " .. query .. ", finished after its deadline"
        return hs
      end
      break
    end
    if w.outcome == "Missed" then
      hs.status = "Degraded"
      hs.message = "The newest finished window, " .. query .. ", missed its deadline"
      return hs
    end
    if w.outcome == "Failed" then
      hs.status = "Degraded"
      hs.message = "The newest finished window, " .. query .. ", failed: a step failed on every attempt"
      return hs
    end
    if w.outcome == "Skipped" then
      hs.status = "Degraded"
      hs.message = "The newest window was skipped: " .. (w.message or "its start was missed")
      return hs
    end
  end
end

hs.status = "Healthy"
hs.message = ready.message
return hs
