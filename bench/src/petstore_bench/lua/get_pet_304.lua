-- GET /v2/pet/{id} as JSON with If-None-Match: <the pet's current ETag>, for pets drawn at
-- random: the revalidation path, every answer a 304 with no body. BENCH_PET_ETAGS_FILE names a
-- file of lines "<id> <etag>" (10,000 ETags in one environment variable would pass Linux's
-- 128 KiB limit per string). Any other status below 400 counts as errors.unexpected.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

report.expect_status(304)

function init(args)
  local requests = {}
  local name = os.getenv("BENCH_PET_ETAGS_FILE") or error("BENCH_PET_ETAGS_FILE must name a file")
  for line in io.lines(name) do
    local id, etag = line:match("^(%d+) (.+)$")
    if id then
      requests[#requests + 1] = report.format(
        "GET", "/v2/pet/" .. id, { ["Accept"] = "application/json", ["If-None-Match"] = etag }
      )
    end
  end
  if #requests == 0 then
    error(name .. " holds no \"<id> <etag>\" line")
  end
  request = report.pick_at_random(requests)
end

done = report.done
