"""One RouteTableDef per resource, all under /v2."""
