"""The product's cross-service tests. tests/k8s needs a running cluster, so only `make e2e-k8s`
(PETSTORE_E2E_MODE=k8s) collects it, as only `make e2e-compose` collects tests/faults/containers:
elsewhere those tests are not skipped one by one, they are not there."""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("PETSTORE_E2E_MODE") == "k8s" else ["k8s"]
