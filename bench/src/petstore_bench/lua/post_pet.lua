-- POST /v2/pet: one JSON pet (the store gives it an id) with the static key BENCH_API_KEY.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

wrk.method = "POST"
wrk.path = "/v2/pet"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["api_key"] = report.list("BENCH_API_KEY")[1]
wrk.body = '{"name":"bench-pet","category":{"id":1,"name":"Dogs"},'
  .. '"photoUrls":["https://example.com/photos/bench-pet.jpg"],'
  .. '"tags":[{"id":1,"name":"bench"}],"status":"available"}'

done = report.done
